package credbroker

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// SweepEvery bounds how long a sweep waits before the next one: how soon
// the identity of a deleted namespace is removed.
const SweepEvery = 10 * time.Minute

// Sweep walks strategy's owners and keys as the provider lists them. It
// deletes the owners whose namespace is gone, with their keys; deletes at
// once any key that may reach beyond its tenant's scope (no policy of its
// own, another policy, another parent, not the broker's); deletes keys
// past their expiry; retires (an expiry Grace from now, sent with the
// scope's policy and read back) keys no Secret holds once they are older
// than YoungKeyGrace; rotates the key a Secret holds once it is older than
// the rotation interval or of another scope; and issues a new key to a
// Secret whose key the provider no longer knows. It returns when to sweep
// again.
func (b *Broker) Sweep(ctx context.Context, strategy strategypolicy.Strategy) (time.Duration, error) {
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return 0, err
	}
	holdings, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return 0, err
	}
	owners, err := b.liveOwners(ctx, strategy.Name)
	if err != nil {
		return 0, err
	}
	all, err := b.placements(ctx)
	if err != nil {
		return 0, err
	}
	next := SweepEvery
	var errs []error
	for _, h := range holdings {
		h.Owner.Namespace = owners[h.Owner.Name]
		if ns := h.Owner.Namespace; ns != "" {
			if other, _ := overlapping(placementOf(strategy), ns, all); other != nil {
				log.FromContext(ctx).Info("deleting the tenant keys whose prefix may hold another strategy's objects", "namespace", ns, "other", other.Strategy)
				keysDeleted.WithLabelValues(strategy.Name, whyOverlaps).Add(float64(len(h.Keys)))
				h.Owner.Namespace = "" // removed as if its namespace were gone
			}
		}
		d, err := b.sweepOwner(ctx, p, strategy, h)
		if d > 0 && d < next {
			next = d
		}
		errs = append(errs, err)
	}
	errs = append(errs, b.countPlatformKeys(ctx, p, strategy.Name))
	return next, errors.Join(errs...)
}

// sweepOwner takes the steps one owner's keys need and says when it needs
// the next.
func (b *Broker) sweepOwner(ctx context.Context, p Provider, strategy strategypolicy.Strategy, h Holding) (time.Duration, error) {
	ns := h.Owner.Namespace
	l := log.FromContext(ctx).WithValues("namespace", ns, "owner", h.Owner.Name)
	if ns == "" {
		l.Info("deleting the tenant keys of a namespace that is gone")
		return 0, removeHolding(ctx, p, h)
	}
	var s corev1.Secret
	err := b.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: SecretName(strategy.Name)}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("read Secret %s/%s: %w", ns, SecretName(strategy.Name), err)
	}
	ours := err == nil && b.ours(&s, strategy.Name)
	held := ""
	if ours {
		held = string(s.Data[s3object.AccessKeyIDKey])
	}
	scope, now := ScopeOf(strategy, ns), b.Clock.Now()
	next, known := time.Duration(0), false
	soon := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	var errs []error
	for _, k := range h.Keys {
		kl := l.WithValues("accessKeyID", k.AccessKeyID)
		switch why := unsafe(k, h.Owner.Name, scope, false); {
		case why != "":
			kl.Info("deleting a tenant key that is not confined to its scope", "why", why)
			keysDeleted.WithLabelValues(strategy.Name, why).Inc()
			errs = append(errs, p.Delete(ctx, k.AccessKeyID))
		case !k.Expires.IsZero() && !now.Before(k.Expires):
			kl.Info("deleting an expired tenant key")
			errs = append(errs, p.Delete(ctx, k.AccessKeyID))
		case !k.Expires.IsZero():
			soon(k.Expires.Sub(now))
		case k.AccessKeyID == held:
			known = true
			d, err := b.keepOrRotate(ctx, p, strategy, &s, k, now)
			soon(d)
			errs = append(errs, err)
		case now.Sub(k.IssuedAt) < YoungKeyGrace:
			// Issued a moment ago: its Secret may be on its way.
			soon(YoungKeyGrace - now.Sub(k.IssuedAt))
		default:
			kl.Info("retiring a tenant key that its namespace's Secret does not hold", "expires", now.Add(b.Grace))
			soon(b.Grace)
			errs = append(errs, b.retire(ctx, p, strategy.Name, k.AccessKeyID, h.Owner.Name, scope, now))
		}
	}
	if held != "" && !known {
		// Not listed: gone, or written by an Ensure after the listing.
		why := "it is of another scope"
		if heldKey(&s, scope) != "" {
			var err error
			if why, err = b.check(ctx, p, strategy.Name, held, OwnerOf(strategy.Name, ns), scope); err != nil {
				return next, errors.Join(append(errs, err)...)
			}
		}
		if why != "" {
			l.Info("issuing a new tenant key for the Secret", "accessKeyID", held, "why", why)
			errs = append(errs, b.issue(ctx, p, strategy, &s))
		}
	}
	return next, errors.Join(errs...)
}

// keepOrRotate reads the key a Secret holds back: a key that lost its
// scope is deleted and replaced at once; one older than the rotation
// interval, or of another scope than the strategy's today, is replaced
// and retired.
func (b *Broker) keepOrRotate(ctx context.Context, p Provider, strategy strategypolicy.Strategy, s *corev1.Secret, k Identity, now time.Time) (time.Duration, error) {
	owner, scope := OwnerOf(strategy.Name, s.Namespace), ScopeOf(strategy, s.Namespace)
	sameScope := s.Annotations[ScopeAnnotation] == scope.String()
	if sameScope {
		why, err := b.check(ctx, p, strategy.Name, k.AccessKeyID, owner, scope)
		if err != nil {
			return 0, err
		}
		if why != "" {
			return 0, b.issue(ctx, p, strategy, s)
		}
		if due := k.IssuedAt.Add(rotationInterval(strategy)); now.Before(due) {
			return due.Sub(now), nil
		}
	}
	log.FromContext(ctx).Info("rotating a tenant key", "namespace", s.Namespace, "accessKeyID", k.AccessKeyID, "issuedAt", k.IssuedAt)
	if err := b.issue(ctx, p, strategy, s); err != nil {
		return 0, err
	}
	return b.Grace, b.retire(ctx, p, strategy.Name, k.AccessKeyID, owner.Name, scope, now)
}

// retire gives a key an expiry Grace from now, sending the scope's policy
// with it (an update without one would leave the key its parent's rights),
// and reads it back: a key the provider did not keep to the scope is
// deleted at once.
func (b *Broker) retire(ctx context.Context, p Provider, strategy, accessKeyID, owner string, scope Scope, now time.Time) error {
	if err := p.Expire(ctx, accessKeyID, Policy(scope), now.Add(b.Grace)); err != nil {
		return err
	}
	id, err := p.Inspect(ctx, accessKeyID)
	if errors.Is(err, ErrNoSuchKey) {
		return nil
	}
	if err != nil {
		return err
	}
	if why := unsafe(id, owner, scope, true); why != "" {
		keysDeleted.WithLabelValues(strategy, why).Inc()
		return errors.Join(fmt.Errorf("retired key %s: %w: %s", accessKeyID, ErrUnsoundKey, why), p.Delete(ctx, accessKeyID))
	}
	return nil
}

// liveOwners maps the owner name of strategy's identity in each namespace
// that exists and is not being deleted to that namespace: an identity whose
// name is not among them belongs to a namespace that is gone.
func (b *Broker) liveOwners(ctx context.Context, strategy string) (map[string]string, error) {
	var list corev1.NamespaceList
	if err := b.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	owners := make(map[string]string, len(list.Items))
	for _, ns := range list.Items {
		if ns.DeletionTimestamp == nil {
			owners[OwnerOf(strategy, ns.Name).Name] = ns.Name
		}
	}
	return owners, nil
}

// removeHolding deletes an owner with the keys under it, and the keys of
// its name the provider lists under another parent (the old layout's).
func removeHolding(ctx context.Context, p Provider, h Holding) error {
	errs := []error{p.RemoveOwner(ctx, h.Owner.Name)}
	for _, k := range h.Keys {
		if k.Parent != h.Owner.Name {
			errs = append(errs, p.Delete(ctx, k.AccessKeyID))
		}
	}
	return errors.Join(errs...)
}

// Remove deletes every owner of strategy with its keys, and every tenant
// Secret that holds one: the strategy is going.
func (b *Broker) Remove(ctx context.Context, strategy strategypolicy.Strategy) error {
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return err
	}
	holdings, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range holdings {
		errs = append(errs, removeHolding(ctx, p, h))
	}
	// One Get per namespace: the driver may not list Secrets in bulk.
	var namespaces corev1.NamespaceList
	if err := b.Reader.List(ctx, &namespaces); err != nil {
		return errors.Join(append(errs, fmt.Errorf("list Namespaces: %w", err))...)
	}
	for _, ns := range namespaces.Items {
		var s corev1.Secret
		err := b.Reader.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: SecretName(strategy.Name)}, &s)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err == nil && b.ours(&s, strategy.Name) {
			err = b.Client.Delete(ctx, &s, client.Preconditions{UID: &s.UID})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete Secret %s/%s: %w", ns.Name, SecretName(strategy.Name), err))
		}
	}
	return errors.Join(errs...)
}
