package staging

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// SourceOf is the S3 object an EtcdCluster bootstraps from: its S3 source,
// or, for a staging claim, the object the claim's file was staged from (its
// SourceAnnotation).
func SourceOf(ctx context.Context, r client.Reader, c *etcdv1alpha2.EtcdCluster) (bucket, key string, err error) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return "", "", fmt.Errorf("EtcdCluster %s/%s has no restore bootstrap", c.Namespace, c.Name)
	}
	src := c.Spec.Bootstrap.Restore.Source
	if src.S3 != nil {
		return src.S3.Bucket, src.S3.Key, nil
	}
	if src.PVC == nil {
		return "", "", fmt.Errorf("EtcdCluster %s/%s restores from neither S3 nor a claim", c.Namespace, c.Name)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: src.PVC.ClaimName}, pvc); err != nil {
		return "", "", fmt.Errorf("read the bootstrap claim of EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	uri, ok := strings.CutPrefix(pvc.Annotations[SourceAnnotation(src.PVC.SubPath)], "s3://")
	bucket, key, found := strings.Cut(uri, "/")
	if !ok || !found {
		return "", "", fmt.Errorf("claim %s/%s does not say what %s was staged from", pvc.Namespace, pvc.Name, src.PVC.SubPath)
	}
	return bucket, key, nil
}
