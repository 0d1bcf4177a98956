package artifact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// FromSnapshot is the Record of an S3 EtcdSnapshot: its identity and the
// destination it was written to, as the snapshot's own spec says (the truth
// of where the object is, whatever the strategy says now).
func FromSnapshot(snap *etcdv1alpha2.EtcdSnapshot, params map[string]string, policy driverv1alpha1.DeletionPolicy) Record {
	s3 := snap.Spec.Destination.S3
	fps := s3.ForcePathStyle
	return Record{
		SnapshotName: snap.Name,
		SnapshotUID:  string(snap.UID),
		Destination: strategyv1alpha1.EtcdS3Template{
			Bucket: s3.Bucket, Endpoint: s3.Endpoint, Key: s3.Key, Region: s3.Region, ForcePathStyle: &fps,
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: s3.CredentialsSecretRef.Name},
		},
		Parameters:     params,
		DeletionPolicy: policy,
	}
}

// ReadyStatus is the status of a Ready Backup for r whose snapshot the
// operator stored at a; the artifact is left out when the operator reported
// none. Backup has no status subresource, so this goes in the create.
func (r Record) ReadyStatus(a *etcdv1alpha2.SnapshotArtifact) (backupsv1alpha1.BackupStatus, error) {
	underlying, err := r.UnderlyingResources()
	if err != nil {
		return backupsv1alpha1.BackupStatus{}, err
	}
	st := backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: underlying}
	if a != nil && a.URI != "" {
		st.Artifact = &backupsv1alpha1.BackupArtifact{URI: a.URI, SizeBytes: a.SizeBytes, Checksum: a.Checksum}
	}
	return st, nil
}

// BackupMeta is the identity of a Backup being recorded.
type BackupMeta struct {
	Namespace, Name string
	Labels          map[string]string
	Application     backupsv1alpha1.TypedLocalObjectReference
	Plan            *backupsv1alpha1.LocalObjectReference
	Strategy        backupsv1alpha1.TypedLocalObjectReference
	TakenAt         metav1.Time
}

// NewBackup is the Ready Backup for r whose snapshot the operator stored at
// a: the one shape every Etcd Backup the driver records has. It carries the
// driver's cleanup finalizer from creation, so no Backup exists, even for a
// moment, whose deletion would skip the cleanup, and the Verified
// condition the driver shows on the Backups it signed (the caller seals
// it). Backup has no status subresource, so status goes in the create.
func NewBackup(m BackupMeta, r Record, a *etcdv1alpha2.SnapshotArtifact) (*backupsv1alpha1.Backup, error) {
	status, err := r.ReadyStatus(a)
	if err != nil {
		return nil, err
	}
	status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionVerified, Status: metav1.ConditionTrue,
		Reason: backupsv1alpha1.BackupReasonProvenanceVerified, Message: VerifiedMessage, LastTransitionTime: m.TakenAt}}
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Namespace, Name: m.Name, Labels: m.Labels,
			Finalizers: []string{backupsv1alpha1.BackupCleanupFinalizer},
		},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: m.Application,
			PlanRef:        m.Plan,
			StrategyRef:    m.Strategy,
			TakenAt:        m.TakenAt,
			DriverMetadata: r.DriverMetadata(),
		},
		Status: status,
	}, nil
}

// VerifiedMessage is the message of a verified Backup's Verified condition.
const VerifiedMessage = "the Etcd driver recorded this Backup as it is"
