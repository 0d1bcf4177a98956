package backupjob

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
)

// Annotations on an EtcdSnapshot that record what its Backup needs, so a job
// whose snapshot exists can finish even if its class or strategy changes or
// disappears meanwhile.
const (
	annotationStrategyName   = "etcd-backup-driver.cozystack.io/strategy-name"
	annotationParameters     = "etcd-backup-driver.cozystack.io/parameters"
	annotationDeletionPolicy = "etcd-backup-driver.cozystack.io/deletion-policy"
	annotationEtcdVersion    = "etcd-backup-driver.cozystack.io/etcd-version"
	// annotationJobRefs holds the job's applicationRef and planRef, which
	// its Backup repeats: a job deleted while its snapshot runs is gone
	// when the Backup is recorded.
	annotationJobRefs = "etcd-backup-driver.cozystack.io/job-refs"
)

// ownSnapshot returns the job's EtcdSnapshot from the cache, nil if the
// cache has none (history is not cached: see held), or a terminal outcome
// if the name is taken by something else.
func (r *Reconciler) ownSnapshot(ctx context.Context, job *backupsv1alpha1.BackupJob) (*etcdv1alpha2.EtcdSnapshot, *outcome) {
	var snap etcdv1alpha2.EtcdSnapshot
	err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: SnapshotName(job)}, &snap)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err == nil && cachetrim.Trimmed(&snap) {
		// Handed to its Backup, so history in the cache: the job did
		// not record its end yet (it crashed in between), and recording
		// it needs the whole snapshot.
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(&snap), &snap)
	}
	if err != nil {
		o := retry(err)
		return nil, &o
	}
	if out := checkOwned(job, &snap); out != nil {
		return nil, out
	}
	return &snap, nil
}

// held applies o, an outcome that keeps job from starting its snapshot,
// unless the snapshot exists after all. Handed to its Backup, a snapshot
// is history, which the cache does not hold: a job that crashed between
// the hand-over and its status write is found here, by one live read on
// this path only, and finished, whatever became of its class, strategy or
// slot since.
func (r *Reconciler) held(ctx context.Context, job *backupsv1alpha1.BackupJob, o outcome) (ctrl.Result, error) {
	snap := &etcdv1alpha2.EtcdSnapshot{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: SnapshotName(job)}, snap)
	switch {
	case apierrors.IsNotFound(err):
		return r.apply(ctx, job, o)
	case err != nil:
		return r.apply(ctx, job, retry(err))
	}
	if out := checkOwned(job, snap); out != nil {
		return r.apply(ctx, job, *out)
	}
	return r.apply(ctx, job, r.follow(ctx, job, snap))
}

// createSnapshot creates the job's EtcdSnapshot. If it already exists (the
// cache was behind, or a previous reconcile crashed after creating it), the
// live object is read and adopted when it is this job's.
func (r *Reconciler) createSnapshot(ctx context.Context, job *backupsv1alpha1.BackupJob, p *plan) (*etcdv1alpha2.EtcdSnapshot, *outcome) {
	snap, err := newSnapshot(job, p)
	if err != nil {
		o := retry(err)
		return nil, &o
	}
	err = r.Create(ctx, snap)
	if apierrors.IsAlreadyExists(err) {
		snap = &etcdv1alpha2.EtcdSnapshot{}
		err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: SnapshotName(job)}, snap)
		if err == nil {
			if out := checkOwned(job, snap); out != nil {
				return nil, out
			}
		}
	}
	if err != nil {
		o := retry(fmt.Errorf("create EtcdSnapshot: %w", err))
		return nil, &o
	}
	return snap, nil
}

func checkOwned(job *backupsv1alpha1.BackupJob, snap *etcdv1alpha2.EtcdSnapshot) *outcome {
	if snap.Labels[backupsv1alpha1.OwningJobUIDLabel] == string(job.UID) {
		return nil
	}
	o := failed(backupsv1alpha1.BackupReasonSnapshotConflict,
		"EtcdSnapshot %s/%s already exists and does not belong to this BackupJob (its %s label is %q); delete it or re-create the BackupJob",
		snap.Namespace, snap.Name, backupsv1alpha1.OwningJobUIDLabel, snap.Labels[backupsv1alpha1.OwningJobUIDLabel])
	return &o
}

func newSnapshot(job *backupsv1alpha1.BackupJob, p *plan) (*etcdv1alpha2.EtcdSnapshot, error) {
	params, err := json.Marshal(p.parameters)
	if err != nil {
		return nil, fmt.Errorf("encode parameters: %w", err)
	}
	refs, err := json.Marshal(jobRefs{ApplicationRef: job.Spec.ApplicationRef, PlanRef: job.Spec.PlanRef})
	if err != nil {
		return nil, fmt.Errorf("encode the job's references: %w", err)
	}
	d := p.destination
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: job.Namespace,
			Name:      SnapshotName(job),
			Labels:    ownerLabels(job),
			Annotations: map[string]string{
				annotationStrategyName:   p.strategyRef.Name,
				annotationParameters:     string(params),
				annotationDeletionPolicy: string(p.deletionPolicy),
				annotationEtcdVersion:    p.etcdVersion,
				annotationJobRefs:        string(refs),
			},
			OwnerReferences: []metav1.OwnerReference{ownerRef("BackupJob", job.Name, job.UID)},
			// Held until its Backup is recorded, set in the create
			// itself: no write of its own.
			Finalizers: []string{backupsv1alpha1.SnapshotRecordFinalizer},
		},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1.LocalObjectReference{Name: ClusterName},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint:             d.Endpoint,
				Bucket:               d.Bucket,
				Key:                  d.Key,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: d.CredentialsSecretRef.Name},
				Region:               d.Region,
				ForcePathStyle:       d.ForcePathStyle != nil && *d.ForcePathStyle,
			}},
		},
	}
	return snap, nil
}

// ownerLabels are the labels the backups API puts on objects a job made.
// Names that are not label values (too long, or not label characters) are
// hashed to fit (names.LabelValue); the UID label always identifies the job.
func ownerLabels(job *backupsv1alpha1.BackupJob) map[string]string {
	labels := map[string]string{
		backupsv1alpha1.OwningJobNamespaceLabel: job.Namespace,
		backupsv1alpha1.OwningJobUIDLabel:       string(job.UID),
		backupsv1alpha1.ApplicationNameLabel:    names.LabelValue(job.Spec.ApplicationRef.Name),
		backupsv1alpha1.OwningJobNameLabel:      names.LabelValue(job.Name),
	}
	if job.Spec.PlanRef != nil && job.Spec.PlanRef.Name != "" {
		labels[backupsv1alpha1.PlanNameLabel] = names.LabelValue(job.Spec.PlanRef.Name)
	}
	return labels
}

// ownerRef makes an object of the backups API the controller owner, with
// blockOwnerDeletion so a foreground deletion of the owner waits for it.
func ownerRef(kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion:         backupsv1alpha1.GroupVersion.String(),
		Kind:               kind,
		Name:               name,
		UID:                uid,
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// recordedStrategy reads back what newSnapshot recorded.
func recordedStrategy(snap *etcdv1alpha2.EtcdSnapshot) (string, map[string]string, driverv1alpha1.DeletionPolicy) {
	var params map[string]string
	_ = json.Unmarshal([]byte(snap.Annotations[annotationParameters]), &params)
	policy := driverv1alpha1.DeletionPolicy(snap.Annotations[annotationDeletionPolicy])
	if policy == "" {
		policy = driverv1alpha1.DeletionPolicyRetain
	}
	return snap.Annotations[annotationStrategyName], params, policy
}
