package credbroker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// NewProvider connects to a provider's admin API at endpoint with the
// platform's admin key.
type NewProvider func(endpoint string, admin Key) (Provider, error)

// Broker issues, writes, rotates and removes tenant keys.
type Broker struct {
	// Client writes tenant Secrets.
	Client client.Client
	// Reader reads Secrets and Namespaces live (Secrets are not cached).
	Reader client.Reader
	// Namespace is the driver's own namespace, where admin Secrets live.
	Namespace string
	// Providers connect to each provider kind.
	Providers map[driverv1alpha1.CredentialBrokerProvider]NewProvider
	// Clock is injected for tests.
	Clock clock.PassiveClock
	// Grace is how long a replaced key keeps working: longer than any
	// backup or restore, whose Pods read the key once at start.
	Grace time.Duration

	mu sync.Mutex
	// admins holds each strategy's platform credential for AdminKeyTTL:
	// every Ensure reads its tenant's key back from the provider, and the
	// admin Secret need not be read again for each backup of a busy hour.
	admins map[string]heldAdmin
}

// AdminKeyTTL is how long the broker uses a platform credential it read
// before it reads the admin Secret again: how long a replaced platform
// credential may still be used.
const AdminKeyTTL = time.Minute

type heldAdmin struct {
	secret string
	key    s3object.Credentials
	at     time.Time
}

// ErrForeignSecret means a Secret with the broker's name exists in the
// tenant namespace and is not the driver's: the driver leaves it alone.
var ErrForeignSecret = errors.New("a Secret with the credential broker's name exists and is not the driver's")

// ErrUnsoundKey means the provider did not hold a key the broker had just
// issued to its tenant's scope: the key was deleted and nothing handed out.
var ErrUnsoundKey = errors.New("the S3 service did not keep the new key to its tenant's scope")

// ErrStrategyDeleting means the strategy or its StrategyPolicy is being
// deleted: it issues no more keys (its keys and tenant Secrets are being
// removed).
var ErrStrategyDeleting = errors.New("the Etcd strategy or its StrategyPolicy is being deleted and issues no keys")

// ErrOutOfScope means an object lies outside the tenant's prefix.
var ErrOutOfScope = errors.New("object lies outside the tenant's prefix")

// Ensure makes sure the tenant namespace has its key of strategy in the
// driver-owned Secret and returns the Secret's name. It reads the key the
// Secret holds back from the provider and keeps it only when it is sound
// (its owner's parent, the broker's mark, its own policy exactly the
// tenant's scope, not retiring); otherwise it issues a new one (deleting
// at once a key that lost its scope). A tenant whose prefix may hold
// another strategy's objects gets nothing, not even the key it holds
// (ErrOverlappingScopes). It rotates nothing: Sweep does.
func (b *Broker) Ensure(ctx context.Context, strategy strategypolicy.Strategy, namespace string) (string, error) {
	if !strategy.DeletionTimestamp.IsZero() || strategy.Policy.Deleting {
		return "", fmt.Errorf("%w: %q", ErrStrategyDeleting, strategy.Name)
	}
	if err := strategy.Check(); err != nil {
		// A key scoped to what a template renders is never issued.
		return "", err
	}
	// Refused before a held key is handed out too: the key may predate the
	// strategy its prefix now overlaps (the sweep deletes it).
	if err := b.refuseOverlap(ctx, strategy, namespace); err != nil {
		return "", err
	}
	name := SecretName(strategy.Name)
	scope := ScopeOf(strategy, namespace)
	var s corev1.Secret
	err := b.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
	switch {
	case apierrors.IsNotFound(err):
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	case err != nil:
		return "", fmt.Errorf("read Secret %s/%s: %w", namespace, name, err)
	case !b.ours(&s, strategy.Name):
		return "", fmt.Errorf("%w: Secret %s/%s (remove it; the driver writes it)", ErrForeignSecret, namespace, name)
	}
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return "", err
	}
	if held := heldKey(&s, scope); held != "" {
		why, err := b.check(ctx, p, strategy.Name, held, OwnerOf(strategy.Name, namespace), scope)
		if err != nil {
			return "", err
		}
		if why == "" {
			return name, nil
		}
		log.FromContext(ctx).Info("issuing a new tenant key: the one its Secret holds is not sound", "namespace", namespace, "accessKeyID", held, "why", why)
	}
	if err := b.issue(ctx, p, strategy, &s); err != nil {
		return "", err
	}
	return name, nil
}

// heldKey is the access key id s holds for scope, or "" when it holds
// none, an incomplete one, or one of another scope.
func heldKey(s *corev1.Secret, scope Scope) string {
	if s.ResourceVersion == "" || s.Annotations[ScopeAnnotation] != scope.String() || len(s.Data[s3object.SecretAccessKeyKey]) == 0 {
		return ""
	}
	return string(s.Data[s3object.AccessKeyIDKey])
}

func (b *Broker) ours(s *corev1.Secret, strategy string) bool {
	return s.Labels[StrategyLabel] == strategyHash(strategy)
}

// issue issues a new key for s's namespace, reads it back, and writes it
// into s (created when it has no resourceVersion) only when the provider
// holds it sound. A key that is not, or whose Secret write fails, is
// deleted again; a key left behind by a crash is retired by Sweep once it
// is older than YoungKeyGrace.
func (b *Broker) issue(ctx context.Context, p Provider, strategy strategypolicy.Strategy, s *corev1.Secret) error {
	if err := b.refuseOverlap(ctx, strategy, s.Namespace); err != nil {
		return err
	}
	now := b.Clock.Now()
	owner, scope := OwnerOf(strategy.Name, s.Namespace), ScopeOf(strategy, s.Namespace)
	key, err := p.Issue(ctx, owner, scope, now)
	if err != nil {
		return err
	}
	if why, err := b.check(ctx, p, strategy.Name, key.AccessKeyID, owner, scope); err != nil || why != "" {
		if err == nil {
			err = fmt.Errorf("%w: %s", ErrUnsoundKey, why)
		}
		return errors.Join(fmt.Errorf("new key for namespace %s: %w", s.Namespace, err), p.Delete(ctx, key.AccessKeyID))
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Labels[StrategyLabel] = strategyHash(strategy.Name)
	s.Annotations[IssuedAnnotation] = now.UTC().Format(time.RFC3339)
	s.Annotations[ScopeAnnotation] = scope.String()
	s.Type = corev1.SecretTypeOpaque
	s.Data = map[string][]byte{
		s3object.AccessKeyIDKey:     []byte(key.AccessKeyID),
		s3object.SecretAccessKeyKey: []byte(key.SecretAccessKey),
	}
	if s.ResourceVersion == "" {
		err = b.Client.Create(ctx, s)
	} else {
		err = b.Client.Update(ctx, s)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write Secret %s/%s: %w", s.Namespace, s.Name, err), p.Delete(ctx, key.AccessKeyID))
	}
	return b.undoIfDeleting(ctx, p, strategy, s, key.AccessKeyID)
}

// undoIfDeleting reads strategy and its StrategyPolicy live after a key of
// it was handed out: when either is being deleted (or gone, or replaced),
// Remove may have listed its owners before this key existed, and nothing
// would ever sweep the key, so the key and its Secret are deleted again.
// Either Remove saw the key, or this read sees the deletion.
func (b *Broker) undoIfDeleting(ctx context.Context, p Provider, strategy strategypolicy.Strategy, s *corev1.Secret, accessKeyID string) error {
	going, err := b.going(ctx, strategy)
	if err != nil || !going {
		return err
	}
	return errors.Join(fmt.Errorf("%w: %q", ErrStrategyDeleting, strategy.Name), p.Delete(ctx, accessKeyID),
		client.IgnoreNotFound(b.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID})))
}

// going reads strategy and its StrategyPolicy live and reports whether
// either is being deleted, gone or replaced since they were read, or the
// policy no longer brokers keys.
func (b *Broker) going(ctx context.Context, strategy strategypolicy.Strategy) (bool, error) {
	var live strategyv1alpha1.Etcd
	err := b.Reader.Get(ctx, client.ObjectKeyFromObject(strategy.Etcd), &live)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read Etcd strategy %s: %w", strategy.Name, err)
	case !live.DeletionTimestamp.IsZero() || (strategy.UID != "" && live.UID != strategy.UID):
		return true, nil
	}
	var policy driverv1alpha1.StrategyPolicy
	err = b.Reader.Get(ctx, client.ObjectKey{Name: strategy.Name}, &policy)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read StrategyPolicy %s: %w", strategy.Name, err)
	}
	return !policy.DeletionTimestamp.IsZero() || policy.Spec.CredentialBroker == nil ||
		(strategy.Policy.UID != "" && policy.UID != strategy.Policy.UID), nil
}

// check reads accessKeyID back and says why the broker may not hand it out
// or keep it for owner and scope ("" when it may). A key under the owner's
// own user that could reach beyond the scope (no policy of its own,
// another policy, not the broker's) is deleted at once. A key under any
// other parent is never deleted here: its id may come from a Secret the
// tenant wrote, and the broker deletes only keys it finds under its own
// owners (the sweep deletes the keys of the old layout it lists).
func (b *Broker) check(ctx context.Context, p Provider, strategy, accessKeyID string, owner Owner, scope Scope) (string, error) {
	id, err := p.Inspect(ctx, accessKeyID)
	if errors.Is(err, ErrNoSuchKey) {
		return "the S3 service no longer knows it", nil
	}
	if err != nil {
		return "", err
	}
	if why := unsafe(id, owner.Name, scope, true); why != "" {
		if id.Parent != owner.Name {
			return "it is not a key of the tenant's own user (" + why + ")", nil
		}
		log.FromContext(ctx).Info("deleting a tenant key that is not confined to its scope", "accessKeyID", accessKeyID, "namespace", owner.Namespace, "why", why)
		keysDeleted.WithLabelValues(strategy, why).Inc()
		return why, p.Delete(ctx, accessKeyID)
	}
	switch {
	case !id.Expires.IsZero():
		return "it is retiring", nil
	case !id.Enabled:
		return "it is disabled", nil
	}
	return "", nil
}

// Why a key is unsafe: each a label value of keysDeleted.
const (
	whyNoOwnPolicy   = "no-own-policy"
	whyOtherPolicy   = "policy-not-scope"
	whyPlatformChild = "not-owner-parent"
	whyNotBrokers    = "not-brokers"
	whyOverlaps      = "prefix-holds-another-strategy"
)

// unsafe says why id may reach beyond scope ("" when it cannot): no policy
// of its own (it has its parent's rights), a parent other than the
// owner's, no broker's mark, or, when the policy is known (withPolicy),
// an own policy other than the scope's.
func unsafe(id Identity, owner string, scope Scope, withPolicy bool) string {
	switch {
	case id.Parent != owner:
		return whyPlatformChild
	case !id.Brokered:
		return whyNotBrokers
	case id.Inherits || (withPolicy && len(id.Policy) == 0):
		return whyNoOwnPolicy
	case withPolicy && !SamePolicy(id.Policy, Policy(scope)):
		return whyOtherPolicy
	}
	return ""
}

// provider connects to strategy's provider with the admin Secret of the
// driver's namespace.
func (b *Broker) provider(ctx context.Context, strategy strategypolicy.Strategy) (Provider, error) {
	cfg := strategy.Policy.CredentialBroker
	connect := b.Providers[cfg.Provider]
	if connect == nil {
		return nil, fmt.Errorf("credential broker provider %q is not supported", cfg.Provider)
	}
	admin, err := b.heldAdminKey(ctx, strategy)
	if err != nil {
		return nil, err
	}
	return connect(adminEndpoint(strategy), Key{AccessKeyID: admin.AccessKeyID, SecretAccessKey: admin.SecretAccessKey})
}

// heldAdminKey is strategy's platform credential, read at most
// AdminKeyTTL ago.
func (b *Broker) heldAdminKey(ctx context.Context, strategy strategypolicy.Strategy) (s3object.Credentials, error) {
	secret, now := strategy.Policy.CredentialBroker.AdminSecretRef.Name, b.Clock.Now()
	b.mu.Lock()
	h, ok := b.admins[strategy.Name]
	b.mu.Unlock()
	if ok && h.secret == secret && now.Sub(h.at) < AdminKeyTTL && !now.Before(h.at) {
		return h.key, nil
	}
	key, err := b.AdminKey(ctx, strategy)
	if err != nil {
		return key, err
	}
	b.mu.Lock()
	if b.admins == nil {
		b.admins = map[string]heldAdmin{}
	}
	b.admins[strategy.Name] = heldAdmin{secret: secret, key: key, at: now}
	b.mu.Unlock()
	return key, nil
}

// AdminKey reads the platform credential of strategy from the driver's
// namespace.
func (b *Broker) AdminKey(ctx context.Context, strategy strategypolicy.Strategy) (s3object.Credentials, error) {
	return s3object.ReadCredentials(ctx, b.Reader, b.Namespace, strategy.Policy.CredentialBroker.AdminSecretRef.Name)
}
