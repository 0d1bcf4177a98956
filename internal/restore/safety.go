package restore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// safetyName names both the safety EtcdSnapshot and its Backup. At most 48
// characters, so the operator's "<name>-snapshot" Job name fits in 63.
func safetyName(rj *backupsv1alpha1.RestoreJob) string {
	return childName(rj, "safety", 48)
}

// decideSafety picks the next step before the capture: take, follow and
// record a safety snapshot, or go straight to the capture.
func decideSafety(o *observation) decision {
	if o.backup == nil || o.sourceErr != nil {
		return failure(o, backupsv1alpha1.ReasonBackupNotFound, fmt.Sprintf(
			"Backup %s/%s disappeared or became unreadable before the cluster was captured", o.job.Namespace, o.job.Spec.BackupRef.Name))
	}
	if s := o.snapshot; s != nil {
		switch {
		case s.Status.Phase == etcdv1alpha2.SnapshotPhaseFailed:
			return failure(o, backupsv1alpha1.ReasonSafetySnapshotFailed, fmt.Sprintf(
				"safety EtcdSnapshot %s/%s failed (%s), so the live cluster was not touched; fix the cause or set spec.options.safetySnapshot to false",
				s.Namespace, s.Name, snapshotFailure(s)))
		case s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete:
			return decision{state: stateWaitSafetySnapshot, reason: backupsv1alpha1.ReasonSafetySnapshotRunning,
				message: fmt.Sprintf("waiting for safety EtcdSnapshot %s (phase %q) to complete", s.Name, s.Status.Phase)}
		case o.safetyBackup == nil:
			return decision{state: stateRecordSafetyBackup, reason: backupsv1alpha1.ReasonSafetySnapshotRunning,
				message: "recording safety Backup " + s.Name}
		case !ownedByBackup(s, o.safetyBackup):
			return decision{state: stateHandOverSnapshot, reason: backupsv1alpha1.ReasonSafetyBackupRecorded,
				message: "handing safety EtcdSnapshot " + s.Name + " over to its Backup"}
		}
	} else if len(o.inflight) > 0 {
		return waitSnapshots(o)
	} else if !skipSafety(o) {
		if o.cluster == nil {
			return failure(o, backupsv1alpha1.ReasonSourceClusterNotFound, "EtcdCluster "+clusterName+" disappeared before it was captured")
		}
		return decision{state: stateCreateSafetySnapshot, reason: backupsv1alpha1.ReasonSafetySnapshotRunning,
			message: "taking a safety snapshot of the live EtcdCluster"}
	}
	if o.cluster == nil {
		return failure(o, backupsv1alpha1.ReasonSourceClusterNotFound, "EtcdCluster "+clusterName+" disappeared before it was captured")
	}
	return decision{state: stateCapture, reason: backupsv1alpha1.ReasonSpecCaptured,
		message: "capturing EtcdCluster " + clusterName + " into ConfigMap " + captureName(o.job)}
}

// skipSafety: an explicit false, or no preference and a cluster that is not
// Available (a snapshot of it would fail; the restore is likely the cure).
func skipSafety(o *observation) bool {
	if o.opts.SafetySnapshot != nil {
		return !*o.opts.SafetySnapshot
	}
	return !available(o)
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

func safetyLabels(rj *backupsv1alpha1.RestoreJob, app string) map[string]string {
	return map[string]string{
		backupsv1alpha1.SafetyBackupLabel:    rj.Name,
		backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
		backupsv1alpha1.ApplicationNameLabel: app,
	}
}

// createSafetySnapshot snapshots the live cluster next to the Backup being
// restored (same bucket, endpoint, prefix and credentials). The RestoreJob
// owns it until its Backup exists.
func (r *Reconciler) createSafetySnapshot(ctx context.Context, o *observation) error {
	src := o.source
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.job.Namespace, Name: safetyName(o.job), Labels: safetyLabels(o.job, o.app)},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1LocalRef(clusterName),
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Prefix, Region: src.Region,
				ForcePathStyle:       src.ForcePathStyle != nil && *src.ForcePathStyle,
				CredentialsSecretRef: corev1LocalRef(src.SecretName),
			}},
		},
	}
	if err := controllerutil.SetControllerReference(o.job, snap, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own safety EtcdSnapshot: %w", err)
	}
	if err := r.Client.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create safety EtcdSnapshot %s/%s: %w", snap.Namespace, snap.Name, err)
	}
	return nil
}

// recordSafetyBackup records the completed safety snapshot as a Backup of
// the application, in the format every Etcd Backup has. Backup has no status
// subresource, so status goes in the create.
func (r *Reconciler) recordSafetyBackup(ctx context.Context, o *observation) error {
	s := o.snapshot
	// A safety net is never removed from S3 by deleting its Backup.
	rec := artifact.FromSnapshot(s, nil, strategyv1alpha1.DeletionPolicyRetain)
	status, err := rec.ReadyStatus(s.Status.Artifact)
	if err != nil {
		return err
	}
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.job.Namespace, Name: s.Name, Labels: safetyLabels(o.job, o.app),
			// Cleanup (of the snapshot object) is guaranteed from creation,
			// as for every Backup the driver records.
			Finalizers: []string{backupsv1alpha1.CleanupFinalizer}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: o.backup.Spec.ApplicationRef,
			StrategyRef:    o.backup.Spec.StrategyRef,
			TakenAt:        metav1.NewTime(o.now),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: status,
	}
	if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create safety Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// handOverSnapshot makes the safety Backup the snapshot's owner instead of
// the RestoreJob, so deleting the RestoreJob keeps it.
func (r *Reconciler) handOverSnapshot(ctx context.Context, o *observation) error {
	s := o.snapshot
	patch := client.MergeFromWithOptions(s.DeepCopy(), client.MergeFromWithOptimisticLock{})
	s.OwnerReferences = nil
	if err := controllerutil.SetControllerReference(o.safetyBackup, s, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own safety EtcdSnapshot by its Backup: %w", err)
	}
	if err := r.Client.Patch(ctx, s, patch); err != nil {
		return fmt.Errorf("hand safety EtcdSnapshot %s/%s over to its Backup: %w", s.Namespace, s.Name, err)
	}
	return nil
}
