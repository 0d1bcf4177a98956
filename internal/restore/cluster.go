package restore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

func corev1LocalRef(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}

// captureCluster saves the live cluster and the HelmRelease's state in the
// capture ConfigMap. An existing capture of this job is never overwritten:
// after the purge the live cluster is no longer the one to keep.
func (r *Reconciler) captureCluster(ctx context.Context, o *observation) error {
	cm, err := buildCapture(o.job, o.app, o.cluster, o.hr, sourceFrom(o.source, o.backup.Name))
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create capture ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// deleteCluster deletes exactly the EtcdCluster that was observed (UID
// precondition), never one re-created in between.
func (r *Reconciler) deleteCluster(ctx context.Context, o *observation) error {
	uid := o.cluster.GetUID()
	err := r.Client.Delete(ctx, o.cluster, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
	return nil
}

// recreateCluster creates the EtcdCluster from the unstructured capture
// (unknown spec fields, labels and annotations preserved) with the restore
// source as its bootstrap, marked as this job's.
func (r *Reconciler) recreateCluster(ctx context.Context, o *observation) (terminal bool, err error) {
	obj := o.capture.cluster.DeepCopy()
	src := o.capture.source
	s3 := map[string]any{
		"bucket":               src.Bucket,
		"endpoint":             src.Endpoint,
		"key":                  src.Key,
		"credentialsSecretRef": map[string]any{"name": src.SecretName},
	}
	if src.Region != "" {
		s3["region"] = src.Region
	}
	if src.ForcePathStyle {
		s3["forcePathStyle"] = true
	}
	// The operator's CEL forbids ever removing bootstrap, so a cluster
	// restored before carries one; this restore's replaces it.
	if err := unstructured.SetNestedField(obj.Object, map[string]any{"restore": map[string]any{"source": map[string]any{"s3": s3}}},
		"spec", "bootstrap"); err != nil {
		return true, fmt.Errorf("set spec.bootstrap on the captured EtcdCluster: %w", err)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[backupsv1alpha1.RestoredByAnnotation] = string(o.job.UID)
	ann[backupsv1alpha1.RestoredFromAnnotation] = src.BackupName
	obj.SetAnnotations(ann)
	obj.SetNamespace(o.job.Namespace)
	obj.SetName(clusterName)
	err = r.Client.Create(ctx, obj)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		// AlreadyExists: the next observation tells ours from someone else's.
		return false, nil
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		// Admission will say the same next time: fail now, not at the deadline.
		return true, fmt.Errorf("the API server rejected the re-created EtcdCluster: %w", err)
	default:
		return false, fmt.Errorf("create EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
}
