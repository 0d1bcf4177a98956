package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// CredentialBroker writes a tenant namespace's key of a brokered strategy
// into its driver-owned Secret when the Secret is missing or incomplete
// (credbroker.Broker).
type CredentialBroker interface {
	Ensure(ctx context.Context, strategy strategypolicy.Strategy, namespace string) (string, error)
}

// reissueKey writes back the brokered key Secret the Backup's source names
// when the tenant deleted (or emptied) it, so that the restore, its safety
// snapshot and its staging have a key again. Only a bound, brokered
// strategy whose Secret name is the source's, whose endpoint is the
// source's and whose tenant scope holds the source's object issues it: a
// key that reaches this namespace's own prefix, nothing a tenant could not
// get from a BackupJob. It reports whether it wrote the Secret; a Secret of
// that name the driver did not write is left alone (false).
func (r *Reconciler) reissueKey(ctx context.Context, o *observation) (bool, error) {
	src := o.source
	if r.Broker == nil || !strings.HasPrefix(src.SecretName, credbroker.SecretPrefix) || (!o.verdict.Verified && o.admission != "") {
		// A Backup refused as unverified gets nothing issued for it.
		return false, nil
	}
	bound, err := r.boundStrategies(ctx)
	if err != nil {
		return false, err
	}
	for _, b := range bound {
		s := b.strategy
		dest := s.Spec.Template.Destination.S3
		if !credbroker.Brokered(s) || dest == nil || credbroker.SecretName(s.Name) != src.SecretName ||
			dest.Endpoint != src.Endpoint || !credbroker.ScopeOf(s, o.job.Namespace).Within(src.Bucket, src.Key) {
			continue
		}
		if _, err := r.Broker.Ensure(ctx, s, o.job.Namespace); err != nil {
			if errors.Is(err, credbroker.ErrForeignSecret) || errors.Is(err, credbroker.ErrOverlappingScopes) || errors.Is(err, credbroker.ErrStrategyDeleting) ||
				errors.Is(err, strategypolicy.ErrInvalid) {
				return false, nil
			}
			return false, fmt.Errorf("re-issue the brokered key of Etcd strategy %s: %w", s.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("wrote back the brokered key Secret the Backup names", "secret", src.SecretName, "strategy", s.Name)
		return true, nil
	}
	return false, nil
}
