package credbroker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// ErrOverlappingScopes means two brokered strategies write to one bucket
// with prefix roots of which one starts the other: a tenant of one could
// be given a prefix that holds the other's tenants' objects (root "x" and
// namespace "a" against root "" and namespace "xa"). The younger of the
// two issues no keys.
var ErrOverlappingScopes = errors.New("two brokered Etcd strategies give tenants prefixes that can overlap")

// refuseOverlap returns ErrOverlappingScopes when strategy is the younger
// of a pair of brokered strategies on the same endpoint and bucket whose
// prefix roots differ and one starts the other. Equal roots are safe: a
// tenant prefix ends with its namespace and "/", and namespaces hold no
// "/", so two namespaces' prefixes never start one another.
func (b *Broker) refuseOverlap(ctx context.Context, strategy *strategyv1alpha1.Etcd) error {
	var all strategyv1alpha1.EtcdList
	if err := b.Client.List(ctx, &all); err != nil {
		return fmt.Errorf("list Etcd strategies: %w", err)
	}
	for i := range all.Items {
		other := &all.Items[i]
		if other.Name == strategy.Name || !Brokered(other) || !overlap(strategy, other) || younger(other, strategy) {
			continue
		}
		return fmt.Errorf("%w: %q (prefix root %q) and the older %q (prefix root %q) on bucket %s; give them prefix roots of which neither starts the other, or the same one",
			ErrOverlappingScopes, strategy.Name, strategy.Spec.CredentialBroker.PrefixRoot,
			other.Name, other.Spec.CredentialBroker.PrefixRoot, strategy.Spec.Template.Destination.S3.Bucket)
	}
	return nil
}

// overlap reports whether a's and b's tenant prefixes can overlap.
func overlap(a, b *strategyv1alpha1.Etcd) bool {
	da, db := a.Spec.Template.Destination.S3, b.Spec.Template.Destination.S3
	if da == nil || db == nil || da.Bucket != db.Bucket || da.Endpoint != db.Endpoint {
		return false
	}
	ra, rb := a.Spec.CredentialBroker.PrefixRoot, b.Spec.CredentialBroker.PrefixRoot
	return ra != rb && (strings.HasPrefix(ra, rb) || strings.HasPrefix(rb, ra))
}

// younger reports whether a was created after b (by name when at once).
func younger(a, b *strategyv1alpha1.Etcd) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}
