package backupdeletion

import (
	"context"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// DeletionKeys hands out the platform credential for the objects of
// brokered strategies, whose tenant keys cannot delete (credbroker.Broker).
type DeletionKeys interface {
	DeletionKey(ctx context.Context, namespace, secretName, bucket, key string) (s3object.Credentials, bool, error)
}

// credentials is the key that deletes the verified Backup's object: the
// platform's when the recorded Secret is a brokered strategy's, otherwise
// the recorded Secret's.
func (r *Reconciler) credentials(ctx context.Context, namespace string, f provenance.Facts) (s3object.Credentials, error) {
	if r.Broker != nil {
		creds, brokered, err := r.Broker.DeletionKey(ctx, namespace, f.SecretName, f.Bucket, f.Key)
		if brokered || err != nil {
			return creds, err
		}
	}
	return s3object.ReadCredentials(ctx, r.Client, namespace, f.SecretName)
}
