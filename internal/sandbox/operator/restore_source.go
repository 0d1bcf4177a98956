package operator

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
)

// errNoRestoreSource is a restore naming no source (the CRD forbids it).
var errNoRestoreSource = errors.New("restore source names neither s3 nor pvc")

// restoreSource resolves the seed's restore source; waiting says why its
// init container cannot start yet (a missing Secret or claim).
func (r *memberReconciler) restoreSource(ctx context.Context, m *etcdmember.EtcdMember) (snapshotSource, string, error) {
	switch src := m.Spec.Restore.Source; {
	case src.S3 != nil:
		var secret corev1.Secret
		err := r.reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: src.S3.CredentialsSecretRef.Name}, &secret)
		if isNotFound(err) {
			return nil, fmt.Sprintf("secret %q not found", src.S3.CredentialsSecretRef.Name), nil
		}
		if err != nil {
			return nil, "", err
		}
		return s3Snapshot{secret: &secret, src: src.S3, rootCAs: r.s3RootCAs}, "", nil
	case src.PVC != nil:
		var pvc corev1.PersistentVolumeClaim
		err := r.reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: src.PVC.ClaimName}, &pvc)
		if isNotFound(err) || (err == nil && !pvc.DeletionTimestamp.IsZero()) {
			return nil, fmt.Sprintf("persistentvolumeclaim %q not found", src.PVC.ClaimName), nil
		}
		if err != nil {
			return nil, "", err
		}
		path, err := r.volumes.Resolve(&pvc, src.PVC.SubPath)
		if err != nil {
			return nil, "", err
		}
		return claimSnapshot{src: src.PVC, path: path}, "", nil
	default:
		return nil, "", errNoRestoreSource
	}
}

func restoreS3(m *etcdmember.EtcdMember) *etcdv1alpha2.S3Source {
	if m.Spec.Restore == nil {
		return nil
	}
	return m.Spec.Restore.Source.S3
}
