package restore

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategytemplate"
)

// safetyName names both the safety EtcdSnapshot and its Backup: a DNS label
// (the operator's Job and Pod names derive from it) of at most 48
// characters, so "<name>-snapshot" fits in 63, unique per RestoreJob UID.
func safetyName(rj *backupsv1alpha1.RestoreJob) string {
	return names.WithSuffix(48, rj.Name, "safety-"+names.Hash(string(rj.UID))[:8])
}

// decideSafety picks the next step before the capture: take, follow and
// record a safety snapshot, or go straight to the capture.
func decideSafety(o *observation) decision {
	if o.safetyConflict != "" {
		return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, o.safetyConflict+"; the safety snapshot cannot be taken under that name")
	}
	if s := o.snapshot; s != nil {
		switch {
		case s.Status.Phase == etcdv1alpha2.SnapshotPhaseFailed:
			return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, fmt.Sprintf(
				"safety EtcdSnapshot %s/%s failed (%s), so the live cluster was not touched; fix the cause or set spec.options.safetySnapshot to false",
				s.Namespace, s.Name, snapshotFailure(s)))
		case s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete && !s.DeletionTimestamp.IsZero():
			return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, fmt.Sprintf(
				"safety EtcdSnapshot %s/%s was deleted before it completed, so the live cluster was not touched", s.Namespace, s.Name))
		case s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete && safetyAbandoned(o):
			return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, fmt.Sprintf(
				"safety EtcdSnapshot %s/%s reported no outcome within %s (is the etcd-operator running?), so the live cluster was not touched and the snapshot is deleted; "+
					"retry when the operator completes snapshots again, or set spec.options.safetySnapshot to false",
				s.Namespace, s.Name, safetySnapshotBound))
		case s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete:
			return decision{state: stateWaitSafetySnapshot, reason: backupsv1alpha1.ReasonSafetySnapshotRunning, message: safetyMessage(o),
				deadline: safetyGiveUpAt(s)}
		case o.safetyBackup == nil:
			return decision{state: stateRecordSafetyBackup, reason: backupsv1alpha1.ReasonSafetySnapshotRunning, message: safetyMessage(o)}
		case !ownedByBackup(s, o.safetyBackup):
			return decision{state: stateHandOverSnapshot, reason: backupsv1alpha1.ReasonSafetyBackupRecorded,
				message: "handing safety EtcdSnapshot " + s.Name + " over to its Backup"}
		}
	} else if len(o.inflight) > 0 {
		return waitSnapshots(o)
	} else if wantSafety(o) {
		if o.safetyDestErr != nil {
			return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, "the safety snapshot's destination, derived from the Backup's signed location, is refused ("+
				o.safetyDestErr.Error()+"), so the live cluster was not touched; set spec.options.safetySnapshot to false to restore without one")
		}
		if o.cluster == nil {
			return failure(o, backupsv1alpha1.ReasonSourceClusterNotFound, "EtcdCluster "+clusterName+" disappeared before it was captured")
		}
		if !available(o) {
			return failure(o, backupsv1alpha1.ReasonClusterNotAvailable, "EtcdCluster "+clusterName+
				" stopped being Available before its safety snapshot could be taken; set spec.options.safetySnapshot: false to restore without one")
		}
		return decision{state: stateCreateSafetySnapshot, reason: backupsv1alpha1.ReasonSafetySnapshotRunning, message: safetyMessage(o)}
	}
	if o.cluster == nil {
		return failure(o, backupsv1alpha1.ReasonSourceClusterNotFound, "EtcdCluster "+clusterName+" disappeared before it was captured")
	}
	return decision{state: stateCapture, reason: backupsv1alpha1.ReasonSpecCaptured,
		message: "capturing EtcdCluster " + clusterName + " into ConfigMap " + o.driverNS + "/" + captureName(o.job)}
}

// safetySnapshotBound is how long a safety snapshot may go without an
// outcome. The etcd-operator gives its snapshot Job 1800 seconds
// (activeDeadlineSeconds) and then reports Failed; a snapshot with no
// outcome five minutes after that has nobody working on it (the operator
// is down), and waiting longer would hold the restore claim for ever.
const safetySnapshotBound = 35 * time.Minute

// safetyGiveUpAt is when the restore stops waiting for safety snapshot s.
func safetyGiveUpAt(s *etcdv1alpha2.EtcdSnapshot) time.Time {
	return s.CreationTimestamp.Add(safetySnapshotBound)
}

// safetyAbandoned: the safety snapshot is unfinished past its bound.
func safetyAbandoned(o *observation) bool {
	s := o.snapshot
	return s != nil && !s.Ended() && !o.now.Before(safetyGiveUpAt(s))
}

// safetyDeletionPolicy is the deletion policy recorded (and signed) on the
// safety Backup: the one signed on the Backup being restored, so the safety
// Backup's object goes with it exactly when the namespace's own Backups'
// objects do (the safety retention then frees the bucket too). An
// unverified source gives Retain: nothing unsigned decides a deletion.
func safetyDeletionPolicy(o *observation) driverv1alpha1.DeletionPolicy {
	if o.verdict.Verified && driverv1alpha1.DeletionPolicy(o.verdict.Facts.DeletionPolicy) == driverv1alpha1.DeletionPolicyDelete {
		return driverv1alpha1.DeletionPolicyDelete
	}
	return driverv1alpha1.DeletionPolicyRetain
}

// safetyMessage is the one message of the safety snapshot's steps (take,
// wait, record): one status write for the whole phase, not one per
// snapshot phase change.
func safetyMessage(o *observation) string {
	return fmt.Sprintf("taking safety snapshot %s of the live EtcdCluster and recording it as a Backup", safetyName(o.job))
}

// wantSafety: a safety snapshot is taken unless the job declines it.
func wantSafety(o *observation) bool {
	return o.opts.TakesSafetySnapshot()
}

func snapshotFailure(s *etcdv1alpha2.EtcdSnapshot) string {
	for _, c := range s.Status.Conditions {
		if c.Type == etcdv1alpha2.SnapshotConditionReady && c.Message != "" {
			return c.Reason + ": " + c.Message
		}
	}
	return "no reason reported"
}

func ownedByBackup(s *etcdv1alpha2.EtcdSnapshot, b *backupsv1alpha1.Backup) bool {
	for _, ref := range s.OwnerReferences {
		if ref.UID == b.UID {
			return true
		}
	}
	return false
}

// isOurSafetySnapshot: the snapshot at the safety name is the one this
// RestoreJob creates (its label, its controller — the job, or the Backup it
// was handed to — and the destination the job writes it to).
func isOurSafetySnapshot(s *etcdv1alpha2.EtcdSnapshot, rj *backupsv1alpha1.RestoreJob, want *etcdv1alpha2.S3Destination) bool {
	if s.Labels[backupsv1alpha1.RestoreJobUIDLabel] != string(rj.UID) {
		return false
	}
	if ref := metav1.GetControllerOf(s); ref == nil || (ref.UID != rj.UID && ref.Kind != "Backup") {
		return false
	}
	got := s.Spec.Destination.S3
	return want == nil || got != nil && got.Bucket == want.Bucket && got.Endpoint == want.Endpoint &&
		got.Key == want.Key && got.CredentialsSecretRef.Name == want.CredentialsSecretRef.Name
}

// safetyDestination is where the safety snapshot goes: next to the Backup
// being restored (same bucket, endpoint, directory and credentials), or nil
// when the Backup is unreadable. Every coordinate comes from signed facts:
// the driver writes (and then signs) a snapshot there, so nothing a tenant
// can edit may steer it. A verified Backup gives its signed facts (the
// prefix signed by v2, the signed key's directory for v1); an unverified
// one is restored only when admitted (bucket, endpoint and Secret are what
// a strategy renders for the application now, and its key lies directly
// under the rendered prefix), so its key's directory is that prefix — never
// the recorded prefix, which admission does not check.
func safetyDestination(o *observation) *etcdv1alpha2.S3Destination {
	t, ok := safetyTemplate(o)
	if !ok {
		return nil
	}
	return &etcdv1alpha2.S3Destination{
		Endpoint: t.Endpoint, Bucket: t.Bucket, Key: t.Key, Region: t.Region,
		ForcePathStyle:       t.ForcePathStyle != nil && *t.ForcePathStyle,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: t.CredentialsSecretRef.Name},
	}
}

func safetyTemplate(o *observation) (strategyv1alpha1.EtcdS3Template, bool) {
	if o.backup == nil || o.sourceErr != nil {
		return strategyv1alpha1.EtcdS3Template{}, false
	}
	f := o.verdict.Facts
	if !o.verdict.Verified {
		src := o.source
		fps := src.ForcePathStyle != nil && *src.ForcePathStyle
		f = provenance.Facts{Bucket: src.Bucket, Endpoint: src.Endpoint, Region: src.Region, ForcePathStyle: fps,
			SecretName: src.SecretName, Key: src.Key}
		f.Prefix = f.KeyDir()
	}
	fps := f.ForcePathStyle
	return strategyv1alpha1.EtcdS3Template{Bucket: f.Bucket, Endpoint: f.Endpoint, Key: f.Prefix, Region: f.Region,
		ForcePathStyle: &fps, CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: f.SecretName}}, true
}

// checkSafetyDestination validates the safety snapshot's destination like
// a rendered one (the endpoint's scheme was judged when it was rendered).
func checkSafetyDestination(o *observation, policy endpointpolicy.Policy) error {
	t, ok := safetyTemplate(o)
	if !ok {
		return nil
	}
	return strategytemplate.Validate(t, strategytemplate.Options{Policy: policy, AllowHTTP: true})
}

func safetyLabels(rj *backupsv1alpha1.RestoreJob, app string) map[string]string {
	return map[string]string{
		backupsv1alpha1.SafetyBackupLabel:    names.LabelValue(rj.Name),
		backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
		backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app),
	}
}

// deletedUncommitted: the job was deleted before it destroyed anything,
// so its safety snapshot is nobody's way back.
func deletedUncommitted(o *observation) bool {
	return !o.job.DeletionTimestamp.IsZero() && !committed(o)
}

// abandonSafetySnapshot deletes the safety snapshot nobody completes (its
// bound passed) or nobody needs (the job was deleted before it destroyed
// anything). The deletion is conditional on the snapshot being the one
// observed, still unfinished: one that completed meanwhile is recorded
// instead, at the next step.
func (r *Reconciler) abandonSafetySnapshot(ctx context.Context, o *observation) error {
	s := o.snapshot
	why := fmt.Sprintf("no outcome within %s (is the etcd-operator running?)", safetySnapshotBound)
	if deletedUncommitted(o) && !safetyAbandoned(o) {
		why = "the RestoreJob was deleted before it changed anything, so the snapshot is not needed"
	}
	r.event(o, backupsv1alpha1.ReasonSafetySnapshotFailed, fmt.Sprintf(
		"deleting safety EtcdSnapshot %s/%s: %s", s.Namespace, s.Name, why), true)
	err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete abandoned safety EtcdSnapshot %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
