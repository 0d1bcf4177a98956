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

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// SweepEvery bounds how long a sweep waits before the next one: how soon
// the identity of a deleted namespace is removed.
const SweepEvery = 10 * time.Minute

// Sweep walks strategy's identities as the provider lists them: it deletes
// those past their expiry and those whose namespace is gone, retires (sets
// an expiry Grace from now on) those that are not the key of their
// namespace's Secret, and rotates the current key once it is older than
// the rotation interval. It returns when to sweep again.
func (b *Broker) Sweep(ctx context.Context, strategy *strategyv1alpha1.Etcd) (time.Duration, error) {
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return 0, err
	}
	ids, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return 0, err
	}
	owners, err := b.liveOwners(ctx, strategy.Name)
	if err != nil {
		return 0, err
	}
	now := b.Clock.Now()
	next := SweepEvery
	soon := func(d time.Duration) {
		if d > 0 && d < next {
			next = d
		}
	}
	var errs []error
	for _, id := range ids {
		id.Owner.Namespace = owners[id.Owner.Name]
		d, err := b.sweepOne(ctx, p, strategy, id, now)
		soon(d)
		errs = append(errs, err)
	}
	return next, errors.Join(errs...)
}

// sweepOne takes the one step id needs and says when it needs the next.
func (b *Broker) sweepOne(ctx context.Context, p Provider, strategy *strategyv1alpha1.Etcd, id Identity, now time.Time) (time.Duration, error) {
	l := log.FromContext(ctx).WithValues("accessKeyID", id.AccessKeyID, "namespace", id.Owner.Namespace)
	if !id.Expires.IsZero() {
		if now.Before(id.Expires) {
			return id.Expires.Sub(now), nil
		}
		l.Info("deleting an expired tenant key")
		return 0, p.Delete(ctx, id.AccessKeyID)
	}
	ns := id.Owner.Namespace
	if ns == "" {
		l.Info("deleting a tenant key whose namespace is gone", "name", id.Owner.Name)
		return 0, p.Delete(ctx, id.AccessKeyID)
	}
	var s corev1.Secret
	err := b.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: SecretName(strategy.Name)}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("read Secret %s/%s: %w", ns, SecretName(strategy.Name), err)
	}
	if err != nil || !b.ours(&s, strategy.Name) || string(s.Data[s3object.AccessKeyIDKey]) != id.AccessKeyID {
		l.Info("retiring a tenant key that its namespace's Secret no longer holds", "expires", now.Add(b.Grace))
		return b.Grace, p.Expire(ctx, id.AccessKeyID, now.Add(b.Grace))
	}
	due := id.IssuedAt.Add(rotationInterval(strategy))
	if s.Annotations[ScopeAnnotation] == ScopeOf(strategy, ns).String() && now.Before(due) {
		return due.Sub(now), nil
	}
	l.Info("rotating a tenant key", "issuedAt", id.IssuedAt)
	if err := b.issue(ctx, p, strategy, &s); err != nil {
		return 0, err
	}
	return b.Grace, p.Expire(ctx, id.AccessKeyID, now.Add(b.Grace))
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

// Remove deletes every identity of strategy and every tenant Secret that
// holds one: the strategy is going.
func (b *Broker) Remove(ctx context.Context, strategy *strategyv1alpha1.Etcd) error {
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return err
	}
	ids, err := p.List(ctx, Group(strategy.Name))
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, p.Delete(ctx, id.AccessKeyID))
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
