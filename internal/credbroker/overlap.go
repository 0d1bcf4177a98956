package credbroker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// ErrOverlappingScopes means a tenant's prefix would hold another brokered
// strategy's tenants' objects: it starts that strategy's prefix root on
// the same bucket (namespace "tenants" of a strategy with root "", against
// a strategy with root "tenants/"). That tenant is given no key.
var ErrOverlappingScopes = errors.New("the tenant's prefix holds another brokered Etcd strategy's prefixes")

// shadowing returns the brokered strategy (other than strategy) on the
// same bucket whose prefix root starts with scope's prefix, or nil. Only
// such a tenant can reach another strategy's tenants: roots are "" or end
// with "/", and namespaces hold no "/", so with roots of which neither
// starts the other, or equal roots, no tenant prefix starts another's. The
// endpoints are not compared: two URLs may name one service, and refusing
// one tenant too many is the safe side.
func shadowing(scope Scope, strategy string, all []strategypolicy.Strategy) *strategypolicy.Strategy {
	for i := range all {
		other := &all[i]
		d := other.Spec.Template.Destination.S3
		if other.Name == strategy || !Brokered(*other) || d == nil || d.Bucket != scope.Bucket {
			continue
		}
		if strings.HasPrefix(other.Policy.CredentialBroker.PrefixRoot, scope.Prefix) {
			return other
		}
	}
	return nil
}

// refuseOverlap returns ErrOverlappingScopes when the tenant prefix of
// strategy in namespace holds another brokered strategy's prefix root,
// whichever of the two was made or changed first.
func (b *Broker) refuseOverlap(ctx context.Context, strategy strategypolicy.Strategy, namespace string) error {
	all, err := b.strategies(ctx)
	if err != nil {
		return err
	}
	scope := ScopeOf(strategy, namespace)
	if other := shadowing(scope, strategy.Name, all); other != nil {
		return fmt.Errorf("%w: namespace %s of Etcd strategy %q would get %s, which holds every tenant of strategy %q (prefix root %q); give the strategies prefix roots of which neither starts the other, or the same one",
			ErrOverlappingScopes, namespace, strategy.Name, scope, other.Name, other.Policy.CredentialBroker.PrefixRoot)
	}
	return nil
}

func (b *Broker) strategies(ctx context.Context) ([]strategypolicy.Strategy, error) {
	return strategypolicy.List(ctx, b.Client)
}
