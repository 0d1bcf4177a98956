package backupjob

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// follow turns the state of the job's snapshot into the job's outcome,
// recording the Backup once the snapshot is Complete. A job that fails
// lets go of its snapshot (SnapshotRecordFinalizer) first: nothing will
// record it, and the job, its owner, decides when it goes.
func (r *Reconciler) follow(ctx context.Context, job *backupsv1alpha1.BackupJob, snap *etcdv1alpha2.EtcdSnapshot) outcome {
	o := r.snapshotOutcome(ctx, job, snap)
	if o.phase == backupsv1alpha1.BackupJobPhaseFailed {
		if err := r.releaseSnapshot(ctx, snap); err != nil {
			return retry(err)
		}
	}
	// The job started when its snapshot did, if it wrote no status before.
	o.started = &snap.CreationTimestamp
	return o
}

func (r *Reconciler) snapshotOutcome(ctx context.Context, job *backupsv1alpha1.BackupJob, snap *etcdv1alpha2.EtcdSnapshot) outcome {
	switch snap.Status.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete:
		return r.complete(ctx, job, snap)
	case etcdv1alpha2.SnapshotPhaseFailed:
		reason, msg := "unknown", "no Ready condition"
		if c := meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.SnapshotConditionReady); c != nil {
			reason, msg = c.Reason, c.Message
		}
		return failed(backupsv1alpha1.BackupReasonSnapshotFailed,
			"EtcdSnapshot %s/%s failed (%s: %s)", snap.Namespace, snap.Name, reason, msg)
	default:
		phase := snap.Status.Phase
		if phase == "" {
			phase = "not yet observed"
		}
		o := waiting(backupsv1alpha1.BackupJobPhaseRunning, backupsv1alpha1.BackupReasonEtcdBackupRunning,
			"EtcdSnapshot %s/%s is %s", snap.Namespace, snap.Name, phase)
		o.following = true
		return o
	}
}

// complete records the Backup, hands the snapshot to it, and reports success.
// Each step is idempotent, so a crash between them is repaired by the next
// reconcile.
func (r *Reconciler) complete(ctx context.Context, job *backupsv1alpha1.BackupJob, snap *etcdv1alpha2.EtcdSnapshot) outcome {
	if snap.Status.Artifact == nil || snap.Status.Artifact.URI == "" {
		return failed(backupsv1alpha1.BackupReasonSnapshotFailed,
			"EtcdSnapshot %s/%s is Complete but reports no artifact URI; the snapshot cannot be located", snap.Namespace, snap.Name)
	}
	backup, err := newBackup(job, snap, metav1.NewTime(r.Clock.Now()))
	if err != nil {
		return retry(err)
	}
	if err := provenance.Seal(ctx, r.Keys, backup); err != nil {
		return retry(err)
	}
	if err := r.Create(ctx, backup); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return retry(fmt.Errorf("create Backup: %w", err))
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(backup), backup); err != nil {
			return retry(fmt.Errorf("read existing Backup: %w", err))
		}
		// Labels are tenant-writable: only the driver's signature over
		// this namespace, name and snapshot UID says this job recorded
		// the Backup (a crash between its create and the status write).
		adopt, err := r.recordedFor(ctx, backup, snap)
		if err != nil {
			return retry(err)
		}
		if !adopt {
			return failed(backupsv1alpha1.BackupReasonBackupConflict,
				"Backup %s/%s already exists and was not made by this BackupJob; the snapshot %s is kept, owned by this job — rename or delete the other Backup and re-create the job",
				backup.Namespace, backup.Name, snap.Name)
		}
	}
	if err := r.handOver(ctx, snap, backup); err != nil {
		return retry(err)
	}
	o := outcome{
		phase:        backupsv1alpha1.BackupJobPhaseSucceeded,
		reason:       backupsv1alpha1.BackupReasonBackupCompleted,
		message:      fmt.Sprintf("Backup %s holds %s", backup.Name, snap.Status.Artifact.URI),
		backupRef:    backup.Name,
		snapshotSize: snap.Status.Artifact.SizeBytes,
	}
	return o
}

// recordedFor reports whether b is the Backup the driver recorded for snap:
// signed by the driver (which binds its namespace and name) for snap's UID.
func (r *Reconciler) recordedFor(ctx context.Context, b *backupsv1alpha1.Backup, snap *etcdv1alpha2.EtcdSnapshot) (bool, error) {
	v, err := provenance.Verify(ctx, r.Keys, b)
	if err != nil {
		return false, fmt.Errorf("verify existing Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return v.Verified && v.Facts.SnapshotUID != "" && v.Facts.SnapshotUID == string(snap.UID), nil
}

// handOver makes the Backup the snapshot's only controller owner, so that
// deleting the BackupJob (for example by Plan history pruning) keeps the
// snapshot, and deleting the Backup removes it. The same write lets go of
// SnapshotRecordFinalizer (the snapshot is recorded) and labels the
// snapshot history, which takes it out of the driver's caches.
func (r *Reconciler) handOver(ctx context.Context, snap *etcdv1alpha2.EtcdSnapshot, backup *backupsv1alpha1.Backup) error {
	want := ownerRef("Backup", backup.Name, backup.UID)
	if len(snap.OwnerReferences) == 1 && snap.OwnerReferences[0].UID == want.UID &&
		!controllerutil.ContainsFinalizer(snap, backupsv1alpha1.SnapshotRecordFinalizer) &&
		snap.Labels[backupsv1alpha1.SnapshotHistoryLabel] == "true" {
		return nil
	}
	patch := client.MergeFromWithOptions(snap.DeepCopy(), client.MergeFromWithOptimisticLock{})
	snap.OwnerReferences = []metav1.OwnerReference{want}
	controllerutil.RemoveFinalizer(snap, backupsv1alpha1.SnapshotRecordFinalizer)
	if snap.Labels == nil {
		snap.Labels = map[string]string{}
	}
	snap.Labels[backupsv1alpha1.SnapshotHistoryLabel] = "true"
	if err := r.Patch(ctx, snap, patch); err != nil {
		return fmt.Errorf("hand EtcdSnapshot %s to Backup %s: %w", snap.Name, backup.Name, err)
	}
	return nil
}

// releaseSnapshot lets go of a snapshot no Backup will record (it failed,
// or its job was deleted and the deadline passed): its owner decides when
// it goes.
func (r *Reconciler) releaseSnapshot(ctx context.Context, snap *etcdv1alpha2.EtcdSnapshot) error {
	if !controllerutil.ContainsFinalizer(snap, backupsv1alpha1.SnapshotRecordFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(snap.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(snap, backupsv1alpha1.SnapshotRecordFinalizer)
	if err := r.Patch(ctx, snap, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release EtcdSnapshot %s/%s: %w", snap.Namespace, snap.Name, err)
	}
	return nil
}

func newBackup(job *backupsv1alpha1.BackupJob, snap *etcdv1alpha2.EtcdSnapshot, now metav1.Time) (*backupsv1alpha1.Backup, error) {
	strategyName, params, policy := recordedStrategy(snap)
	rec := artifact.FromSnapshot(snap, params, policy)
	rec.EtcdVersion = snap.Annotations[annotationEtcdVersion]
	group := strategyv1alpha1.GroupVersion.Group
	return artifact.NewBackup(artifact.BackupMeta{
		Namespace:   job.Namespace,
		Name:        job.Name,
		Labels:      ownerLabels(job),
		Application: job.Spec.ApplicationRef,
		Plan:        job.Spec.PlanRef,
		Strategy:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: strategyName},
		TakenAt:     completedAt(snap, now),
	}, rec, snap.Status.Artifact)
}

// completedAt is when the operator marked the snapshot Complete, or now if
// it recorded no time, clamped to the driver's clock: never after now and
// never before the snapshot was created. The time is signed and orders
// retention (keepLast, maxAge, "never the newest"), so a wrong operator
// clock (or a hand-edited status) must not make a Backup look newer or
// older than it can be.
func completedAt(snap *etcdv1alpha2.EtcdSnapshot, now metav1.Time) metav1.Time {
	t := now
	if c := meta.FindStatusCondition(snap.Status.Conditions, etcdv1alpha2.SnapshotConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		t = c.LastTransitionTime
	}
	if t.After(now.Time) {
		t = now
	}
	if created := snap.CreationTimestamp; !created.IsZero() && t.Before(&created) && !created.After(now.Time) {
		t = created
	}
	return t
}
