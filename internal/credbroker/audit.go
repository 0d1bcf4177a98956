package credbroker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// Finding is one key an audit found that may reach beyond a tenant's
// scope, or that the broker did not make.
type Finding struct {
	// AccessKeyID is the key's access key id (never its secret).
	AccessKeyID string
	// Parent is the identity it derives its rights from.
	Parent string
	// Why says what is wrong with it.
	Why string
	// Removed reports whether the audit deleted it.
	Removed bool
}

// Audit inspects every key that strategy's platform credential can reach
// and reports those that are not sound brokered keys: every key of the
// platform credential itself (the broker issues none there; one with no
// policy of its own has every right of the platform credential), and
// every key under strategy's tenant owners that lacks the broker's mark,
// a policy of its own exactly its tenant's scope, or its owner's parent.
// With remove, it deletes each one it reports. It is the one-shot check
// to run after upgrading from the layout whose tenant keys were children
// of the platform credential (kubectl etcd-backup audit-keys).
func (b *Broker) Audit(ctx context.Context, strategy *strategyv1alpha1.Etcd, remove bool) ([]Finding, error) {
	if !Brokered(strategy) {
		return nil, fmt.Errorf("Etcd strategy %q does not broker keys", strategy.Name)
	}
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return nil, err
	}
	var found []Finding
	platform, err := p.PlatformKeys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range platform {
		why := "a key of the platform credential itself, with a policy of its own; the broker issues none there"
		if k.Inherits {
			why = "a key of the platform credential itself with no policy of its own: it has every right of the platform credential"
		}
		found = append(found, Finding{AccessKeyID: k.AccessKeyID, Parent: k.Parent, Why: why})
	}
	holdings, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return nil, err
	}
	owners, err := b.liveOwners(ctx, strategy.Name)
	if err != nil {
		return nil, err
	}
	for _, h := range holdings {
		for _, k := range h.Keys {
			if k.Parent != h.Owner.Name {
				continue // a platform key, reported above
			}
			if why, err := b.auditKey(ctx, p, strategy, k, h.Owner.Name, owners[h.Owner.Name]); err != nil || why != "" {
				if err != nil {
					return nil, err
				}
				found = append(found, Finding{AccessKeyID: k.AccessKeyID, Parent: k.Parent, Why: why})
			}
		}
	}
	slices.SortFunc(found, func(a, b Finding) int { return strings.Compare(a.AccessKeyID, b.AccessKeyID) })
	if !remove {
		return found, nil
	}
	var errs []error
	for i := range found {
		err := p.Delete(ctx, found[i].AccessKeyID)
		found[i].Removed = err == nil
		errs = append(errs, err)
	}
	return found, errors.Join(errs...)
}

// auditKey says why a key under a tenant owner is not sound ("" when it
// is). Retiring keys are judged alike: the broker retires a key with its
// tenant's scope of today.
func (b *Broker) auditKey(ctx context.Context, p Provider, strategy *strategyv1alpha1.Etcd, k Identity, owner, ns string) (string, error) {
	id, err := p.Inspect(ctx, k.AccessKeyID)
	if errors.Is(err, ErrNoSuchKey) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if ns == "" {
		return "", nil // its namespace is gone: the sweep removes the owner
	}
	switch why := unsafe(id, owner, ScopeOf(strategy, ns), true); why {
	case whyPlatformChild, whyNotBrokers:
		return "not made by the broker (" + why + ")", nil
	case whyNoOwnPolicy:
		return "no policy of its own: it has every right of its parent", nil
	case whyOtherPolicy:
		return "its own policy is not its tenant's scope", nil
	}
	return "", nil
}
