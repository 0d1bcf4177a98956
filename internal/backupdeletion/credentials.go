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

// credentials is the key that deletes the verified Backup's objects, at
// keys (its snapshot's, and its chain's folder): the platform's when the
// recorded Secret is a brokered strategy's, which the broker hands out only
// for keys inside the namespace's scope, otherwise the recorded Secret's.
func (r *Reconciler) credentials(ctx context.Context, namespace string, f provenance.Facts, keys ...string) (s3object.Credentials, error) {
	if r.Broker != nil {
		var creds s3object.Credentials
		for _, key := range keys {
			c, brokered, err := r.Broker.DeletionKey(ctx, namespace, f.SecretName, f.Bucket, key)
			if err != nil {
				return s3object.Credentials{}, err
			}
			if !brokered {
				return s3object.ReadCredentials(ctx, r.Client, namespace, f.SecretName)
			}
			creds = c
		}
		return creds, nil
	}
	return s3object.ReadCredentials(ctx, r.Client, namespace, f.SecretName)
}
