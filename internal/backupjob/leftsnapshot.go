package backupjob

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// jobRefs is what a job's Backup repeats of the job's spec; its snapshot
// keeps it (annotationJobRefs) for a job deleted before its end.
type jobRefs struct {
	ApplicationRef backupsv1alpha1.TypedLocalObjectReference `json:"applicationRef"`
	PlanRef        *backupsv1alpha1.LocalObjectReference     `json:"planRef,omitempty"`
}

// recordLeftSnapshots finishes what a deleted job left behind. A job
// carries no finalizer, so deleting it while its snapshot runs removes it
// at once; the snapshot, held by SnapshotRecordFinalizer, is recorded as
// the job's Backup when it completes (the snapshot's watch still names
// the job), and let go when it fails or outlives the backup deadline.
func (r *Reconciler) recordLeftSnapshots(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var snaps etcdv1alpha2.EtcdSnapshotList
	if err := r.List(ctx, &snaps, client.InNamespace(req.Namespace),
		client.MatchingLabels{backupsv1alpha1.OwningJobNameLabel: names.LabelValue(req.Name)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the EtcdSnapshots of deleted BackupJob %s: %w", req, err)
	}
	var wake time.Duration
	for i := range snaps.Items {
		snap := &snaps.Items[i]
		ref := metav1.GetControllerOf(snap)
		if ref == nil || ref.APIVersion != backupsv1alpha1.GroupVersion.String() || ref.Kind != "BackupJob" ||
			ref.Name != req.Name || snap.Labels[backupsv1alpha1.OwningJobUIDLabel] != string(ref.UID) ||
			!controllerutil.ContainsFinalizer(snap, backupsv1alpha1.SnapshotRecordFinalizer) {
			continue
		}
		after, err := r.recordLeft(ctx, snap, ref)
		if err != nil {
			return ctrl.Result{}, err
		}
		if after > 0 && (wake == 0 || after < wake) {
			wake = after
		}
	}
	return ctrl.Result{RequeueAfter: wake}, nil
}

// recordLeft takes one step for the snapshot of the deleted job ref names;
// a positive duration is when to look again (the deadline).
func (r *Reconciler) recordLeft(ctx context.Context, snap *etcdv1alpha2.EtcdSnapshot, ref *metav1.OwnerReference) (time.Duration, error) {
	// The cache may not show a job that exists yet; only the API server
	// says it is gone. (Rare: only jobs deleted mid-snapshot come here.)
	var live backupsv1alpha1.BackupJob
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: ref.Name}, &live)
	switch {
	case err == nil && live.UID == ref.UID:
		return conflictRetry, nil
	case err != nil && !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("read BackupJob %s/%s: %w", snap.Namespace, ref.Name, err)
	}
	logger := log.FromContext(ctx).WithValues("etcdSnapshot", snap.Name)
	job, err := leftJob(snap, ref)
	if err != nil {
		return 0, r.letGo(ctx, snap, backupsv1alpha1.BackupReasonSnapshotConflict, err.Error())
	}
	switch snap.Status.Phase {
	case etcdv1alpha2.SnapshotPhaseComplete:
		o := r.complete(ctx, job, snap)
		if o.err != nil {
			return 0, o.err
		}
		if o.phase == backupsv1alpha1.BackupJobPhaseFailed {
			return 0, r.letGo(ctx, snap, o.reason, o.message)
		}
		logger.Info("recorded the snapshot of a deleted BackupJob", "backup", o.backupRef)
		return 0, nil
	case etcdv1alpha2.SnapshotPhaseFailed:
		return 0, r.letGo(ctx, snap, "", "")
	}
	if end := r.deadline(&snap.CreationTimestamp); r.Clock.Now().Before(end) {
		return end.Sub(r.Clock.Now()), nil
	}
	return 0, r.letGo(ctx, snap, backupsv1alpha1.BackupReasonDeadlineExceeded, fmt.Sprintf(
		"BackupJob %s was deleted and its snapshot did not end within the %s deadline; it is no longer kept for a Backup", ref.Name, r.Deadline))
}

// letGo releases a deleted job's snapshot that no Backup will record,
// saying why on the snapshot when something went wrong (reason set).
func (r *Reconciler) letGo(ctx context.Context, snap *etcdv1alpha2.EtcdSnapshot, reason, message string) error {
	if err := r.releaseSnapshot(ctx, snap); err != nil {
		return err
	}
	if reason != "" {
		r.Recorder.Eventf(snap, nil, corev1.EventTypeWarning, reason, "Release", "%s", textlimit.Note(message))
	}
	return nil
}

// leftJob rebuilds, from its snapshot, what recording a deleted job's
// Backup needs of the job.
func leftJob(snap *etcdv1alpha2.EtcdSnapshot, ref *metav1.OwnerReference) (*backupsv1alpha1.BackupJob, error) {
	var refs jobRefs
	if err := json.Unmarshal([]byte(snap.Annotations[annotationJobRefs]), &refs); err != nil {
		return nil, fmt.Errorf("EtcdSnapshot %s/%s of deleted BackupJob %s does not say what its Backup would name (%s): %v",
			snap.Namespace, snap.Name, ref.Name, annotationJobRefs, err)
	}
	return &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: snap.Namespace, Name: ref.Name, UID: ref.UID},
		Spec:       backupsv1alpha1.BackupJobSpec{ApplicationRef: refs.ApplicationRef, PlanRef: refs.PlanRef},
	}, nil
}
