package credbroker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// FindingKind says what an audit found, and whether --remove deletes it.
type FindingKind string

// What an audit finds.
const (
	// FoundUnsoundTenantKey: a key under a tenant's own user that the
	// broker did not make, or whose own policy is missing or not exactly
	// its tenant's scope. Removable.
	FoundUnsoundTenantKey FindingKind = "tenant-key"
	// FoundOldLayoutKey: a tenant key of the layout before tenants had
	// users of their own, a child of the platform credential. Removable.
	FoundOldLayoutKey FindingKind = "old-layout"
	// FoundPlatformKeyInherits: a key of the platform credential with no
	// policy of its own, which has every right of the platform credential.
	// Removable: the broker issues none, and the platform credential is
	// meant for the driver alone.
	FoundPlatformKeyInherits FindingKind = "platform-inherits"
	// FoundPlatformKey: a key of the platform credential with a policy of
	// its own. Listed for review, never removed.
	FoundPlatformKey FindingKind = "platform-own-policy"
	// FoundRootKeyInherits: a key of the service's root user with no
	// policy of its own: root's every right. Listed for review, never
	// removed: a stripped key of an earlier release could have minted it
	// (the platform credential can mint keys of any user), and so can an
	// operator.
	FoundRootKeyInherits FindingKind = "root-inherits"
)

// Removable reports whether audit-keys --remove deletes what k names.
func (k FindingKind) Removable() bool {
	return k == FoundUnsoundTenantKey || k == FoundOldLayoutKey || k == FoundPlatformKeyInherits
}

// Finding is one key an audit reports.
type Finding struct {
	// AccessKeyID is the key's access key id (never its secret).
	AccessKeyID string
	// Parent is the identity it derives its rights from.
	Parent string
	// Kind is what it is.
	Kind FindingKind
	// Why says what is wrong with it.
	Why string
	// Removed reports whether the audit deleted it.
	Removed bool
}

// Audit inspects the keys that strategy's platform credential can see and
// reports those that are not sound brokered keys: keys under strategy's
// tenant users that lack the broker's mark, a policy of their own exactly
// their tenant's scope, or their owner's parent; the platform credential's
// own keys (the broker issues none there; the tenant keys of the earlier
// layout were); and keys of root that have no policy of their own. With
// remove, it deletes the kinds that are Removable. It is the one-shot check
// to run after upgrading from the layout whose tenant keys were children of
// the platform credential (kubectl etcd-backup audit-keys).
func (b *Broker) Audit(ctx context.Context, strategy strategypolicy.Strategy, remove bool) ([]Finding, error) {
	if !Brokered(strategy) {
		return nil, fmt.Errorf("Etcd strategy %q does not broker keys", strategy.Name)
	}
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return nil, err
	}
	found, err := b.auditTenants(ctx, p, strategy)
	if err != nil {
		return nil, err
	}
	platform, err := p.PlatformKeys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range platform {
		f := Finding{AccessKeyID: k.AccessKeyID, Parent: k.Parent, Kind: FoundPlatformKey,
			Why: "a key of the platform credential itself; the broker issues none there"}
		switch {
		case k.Brokered && strings.HasPrefix(k.Owner.Name, "ebd-"):
			f.Kind, f.Why = FoundOldLayoutKey, "a tenant key of the earlier layout, a child of the platform credential"
		case k.Inherits:
			f.Kind, f.Why = FoundPlatformKeyInherits, "a key of the platform credential with no policy of its own: every right of the platform credential"
		}
		found = append(found, f)
	}
	root, err := p.RootKeys(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range root {
		if k.Inherits {
			found = append(found, Finding{AccessKeyID: k.AccessKeyID, Parent: k.Parent, Kind: FoundRootKeyInherits,
				Why: "a key of root with no policy of its own: every right of root; review it"})
		}
	}
	slices.SortFunc(found, func(a, b Finding) int {
		return strings.Compare(string(a.Kind)+a.AccessKeyID, string(b.Kind)+b.AccessKeyID)
	})
	if !remove {
		return found, nil
	}
	var errs []error
	for i := range found {
		if found[i].Kind.Removable() {
			err := p.Delete(ctx, found[i].AccessKeyID)
			found[i].Removed = err == nil
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

// auditTenants reports the keys under strategy's tenant users that are not
// sound. Retiring keys are judged alike: the broker retires a key with its
// tenant's scope of today.
func (b *Broker) auditTenants(ctx context.Context, p Provider, strategy strategypolicy.Strategy) ([]Finding, error) {
	holdings, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return nil, err
	}
	owners, err := b.liveOwners(ctx, strategy.Name)
	if err != nil {
		return nil, err
	}
	var found []Finding
	for _, h := range holdings {
		ns := owners[h.Owner.Name]
		for _, k := range h.Keys {
			if k.Parent != h.Owner.Name || ns == "" {
				continue // a platform key (reported with those), or its namespace is gone (the sweep removes the owner)
			}
			id, err := p.Inspect(ctx, k.AccessKeyID)
			if errors.Is(err, ErrNoSuchKey) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if why := unsafe(id, h.Owner.Name, ScopeOf(strategy, ns), true); why != "" {
				found = append(found, Finding{AccessKeyID: k.AccessKeyID, Parent: k.Parent, Kind: FoundUnsoundTenantKey,
					Why: "a key under the tenant's user that " + describeUnsafe(why)})
			}
		}
	}
	return found, nil
}

func describeUnsafe(why string) string {
	switch why {
	case whyNotBrokers:
		return "the broker did not make"
	case whyNoOwnPolicy:
		return "has no policy of its own"
	case whyOtherPolicy:
		return "has a policy other than its tenant's scope"
	}
	return "is not sound (" + why + ")"
}
