package backupjob

import (
	"context"
	"errors"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// CredentialBroker gives a tenant namespace its own key of a brokered
// strategy (credbroker.Broker).
type CredentialBroker interface {
	Ensure(ctx context.Context, strategy strategypolicy.Strategy, namespace string) (string, error)
}

// brokeredSecret points dest at the namespace's driver-owned key Secret when
// the strategy brokers keys, after checking that the rendered key lies in
// the prefix that key reaches.
func (r *Reconciler) brokeredSecret(ctx context.Context, strategy strategypolicy.Strategy, namespace string, dest *strategyv1alpha1.EtcdS3Template) *outcome {
	if !credbroker.Brokered(strategy) {
		return nil
	}
	scope := credbroker.ScopeOf(strategy, namespace)
	if !scope.Within(dest.Bucket, dest.Key) {
		o := failed(backupsv1alpha1.BackupReasonInvalidDestination,
			"Etcd strategy %q brokers tenant keys limited to %s, but its key renders %q for this application: make spec.template.destination.s3.key start with the tenant prefix",
			strategy.Name, scope, dest.Key)
		return &o
	}
	if r.Broker == nil {
		o := failed(backupsv1alpha1.BackupReasonStrategyNotReady, "Etcd strategy %q brokers tenant keys, but this driver runs without the credential broker", strategy.Name)
		return &o
	}
	name, err := r.Broker.Ensure(ctx, strategy, namespace)
	if errors.Is(err, credbroker.ErrForeignSecret) || errors.Is(err, credbroker.ErrOverlappingScopes) {
		o := failed(backupsv1alpha1.BackupReasonInvalidDestination, "%v", err)
		return &o
	}
	if errors.Is(err, credbroker.ErrStrategyDeleting) {
		o := failed(backupsv1alpha1.BackupReasonStrategyNotReady, "%v", err)
		return &o
	}
	if err != nil {
		o := retry(err)
		return &o
	}
	dest.CredentialsSecretRef.Name = name
	return nil
}
