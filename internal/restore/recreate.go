package restore

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// recreateSource is what the next re-create bootstraps from: the Backup's
// object, or during a rollback the safety Backup's.
func recreateSource(o *observation) restoreSource {
	if rollbackOf(o.job) != nil && o.capture.rollback != nil {
		return *o.capture.rollback
	}
	return o.capture.source
}

// recreatedCluster is the EtcdCluster to create: the unstructured capture
// (unknown spec fields, labels and annotations preserved) bootstrapped from
// src, marked as this job's, with the operator's progress deadline set to
// what is left of the restore's budget (less a margin), so the operator's
// own verdict (BootstrapFailed) comes before the driver's deadline and the
// rollback starts within the budget. The operator's default of 600 s would
// otherwise end a slow restore on its own schedule.
func recreatedCluster(o *observation, src restoreSource, deadline time.Time) (*unstructured.Unstructured, error) {
	obj := o.capture.cluster.DeepCopy()
	source := map[string]any{}
	if o.opts.BumpsRevision() {
		p := stagingSource(o)
		source["pvc"] = map[string]any{"claimName": p.ClaimName, "subPath": p.SubPath}
	} else {
		source["s3"] = s3Source(src)
	}
	// The operator's CEL forbids ever removing bootstrap, so a cluster
	// restored before carries one; this restore's replaces it.
	if err := unstructured.SetNestedField(obj.Object, map[string]any{"restore": map[string]any{"source": source}},
		"spec", "bootstrap"); err != nil {
		return nil, fmt.Errorf("set spec.bootstrap on the captured EtcdCluster: %w", err)
	}
	if !deadline.IsZero() {
		if err := unstructured.SetNestedField(obj.Object, progressDeadlineSeconds(deadline.Sub(o.now)), "spec", "progressDeadlineSeconds"); err != nil {
			return nil, fmt.Errorf("set spec.progressDeadlineSeconds on the captured EtcdCluster: %w", err)
		}
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	// A seal of an earlier restore is not this one's.
	delete(ann, backupsv1alpha1.RestoreSucceededAnnotation)
	ann[backupsv1alpha1.RestoredByAnnotation] = string(o.job.UID)
	ann[backupsv1alpha1.RestoredFromAnnotation] = src.BackupName
	obj.SetAnnotations(ann)
	obj.SetNamespace(o.job.Namespace)
	obj.SetName(clusterName)
	return obj, nil
}

func s3Source(src restoreSource) map[string]any {
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
	return s3
}

// progressDeadlineSeconds is the remaining budget less a tenth of it (at
// least a second, at most half a minute), in whole seconds, at least one
// (the CRD's minimum) and within int32.
func progressDeadlineSeconds(left time.Duration) int64 {
	margin := min(max(left/10, time.Second), 30*time.Second)
	s := int64(math.Floor((left - margin).Seconds()))
	return min(max(s, 1), math.MaxInt32)
}

// capturedProgressDeadline is the spec.progressDeadlineSeconds the cluster
// had before the restore (the CRD's default when the capture has none).
// The re-create raises it to the restore's budget; once the cluster is
// healthy it goes back, so the tenant's cluster does not keep a deadline
// of the driver's making (Flux's upgrades leave a field the chart does not
// render alone).
func capturedProgressDeadline(o *observation) int32 {
	v, _, _ := unstructured.NestedFieldNoCopy(o.capture.cluster.Object, "spec", "progressDeadlineSeconds")
	switch n := v.(type) {
	case int64:
		return int32(min(max(n, 1), math.MaxInt32))
	case float64:
		return int32(min(max(n, 1), math.MaxInt32))
	}
	return etcdv1alpha2.DefaultProgressDeadlineSeconds
}

// progressDeadlineRestored: the live cluster's progress deadline is the
// captured one again.
func progressDeadlineRestored(o *observation) bool {
	got := etcdv1alpha2.DefaultProgressDeadlineSeconds
	if p := o.cluster.Spec.ProgressDeadlineSeconds; p != nil {
		got = *p
	}
	return got == capturedProgressDeadline(o)
}
