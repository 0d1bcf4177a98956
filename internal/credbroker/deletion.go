package credbroker

import (
	"context"
	"fmt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// DeletionKey returns the platform credential that deletes an object a
// driver-recorded Backup of namespace names, when the Secret it recorded is
// a brokered strategy's: tenant keys cannot delete. brokered is false when
// no brokered strategy owns secretName (the recorded Secret is then read as
// before). The object must lie in the namespace's own prefix of that
// strategy's bucket, whatever the Backup says.
func (b *Broker) DeletionKey(ctx context.Context, namespace, secretName, bucket, key string) (creds s3object.Credentials, brokered bool, err error) {
	strategies, err := strategypolicy.List(ctx, b.Client)
	if err != nil {
		return s3object.Credentials{}, false, err
	}
	for _, s := range strategies {
		if !Brokered(s) || SecretName(s.Name) != secretName {
			continue
		}
		if scope := ScopeOf(s, namespace); !scope.Within(bucket, key) {
			return s3object.Credentials{}, true, fmt.Errorf("%w: %s/%s is not under %s", ErrOutOfScope, bucket, key, scope)
		}
		creds, err := b.AdminKey(ctx, s)
		return creds, true, err
	}
	return s3object.Credentials{}, false, nil
}
