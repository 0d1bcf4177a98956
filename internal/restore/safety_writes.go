package restore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// The writes of the safety step: the snapshot of the live cluster, its
// signed Backup, and the snapshot's hand-over to that Backup.

// createSafetySnapshot snapshots the live cluster next to the Backup being
// restored. The RestoreJob owns it until its Backup exists.
func (r *Reconciler) createSafetySnapshot(ctx context.Context, o *observation) error {
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.job.Namespace, Name: safetyName(o.job), Labels: safetyLabels(o.job, o.app)},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef:  corev1.LocalObjectReference{Name: clusterName},
			Destination: etcdv1alpha2.SnapshotLocation{S3: safetyDestination(o)},
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

// recordSafetyBackup records the completed safety snapshot as a signed
// Backup of the application, in the format every Etcd Backup has.
func (r *Reconciler) recordSafetyBackup(ctx context.Context, o *observation) error {
	s := o.snapshot
	rec := artifact.FromSnapshot(s, nil, safetyDeletionPolicy(o))
	if o.cluster != nil {
		rec.EtcdVersion = o.cluster.Spec.Version
	}
	group := strategyv1alpha1.GroupVersion.Group
	strategyRef := backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "unknown"}
	if o.backup != nil {
		strategyRef = o.backup.Spec.StrategyRef
	}
	b, err := artifact.NewBackup(artifact.BackupMeta{
		Namespace: o.job.Namespace, Name: s.Name, Labels: safetyLabels(o.job, o.app),
		Application: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptrTo(backupsv1alpha1.DefaultApplicationAPIGroup), Kind: appKind, Name: o.app},
		Strategy:    strategyRef, TakenAt: metav1.NewTime(o.now),
	}, rec, s.Status.Artifact)
	if err != nil {
		return err
	}
	if err := provenance.Seal(ctx, r.Keys, b); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create safety Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

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
