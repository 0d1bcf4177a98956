package credbroker

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
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
	Providers map[strategyv1alpha1.CredentialBrokerProvider]NewProvider
	// Clock is injected for tests.
	Clock clock.PassiveClock
	// Grace is how long a replaced key keeps working: longer than any
	// backup or restore, whose Pods read the key once at start.
	Grace time.Duration
}

// ErrForeignSecret means a Secret with the broker's name exists in the
// tenant namespace and is not the driver's: the driver leaves it alone.
var ErrForeignSecret = errors.New("a Secret with the credential broker's name exists and is not the driver's")

// ErrOutOfScope means an object lies outside the tenant's prefix.
var ErrOutOfScope = errors.New("object lies outside the tenant's prefix")

// Ensure makes sure the tenant namespace has its key of strategy in the
// driver-owned Secret, issuing one if the Secret is missing, incomplete or
// for another scope, and returns the Secret's name. It rotates nothing:
// Sweep does.
func (b *Broker) Ensure(ctx context.Context, strategy *strategyv1alpha1.Etcd, namespace string) (string, error) {
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
	case s.Annotations[ScopeAnnotation] == scope.String() && len(s.Data[s3object.AccessKeyIDKey]) > 0 && len(s.Data[s3object.SecretAccessKeyKey]) > 0:
		return name, nil
	}
	p, err := b.provider(ctx, strategy)
	if err != nil {
		return "", err
	}
	if err := b.issue(ctx, p, strategy, &s); err != nil {
		return "", err
	}
	return name, nil
}

func (b *Broker) ours(s *corev1.Secret, strategy string) bool {
	return s.Labels[StrategyLabel] == strategyHash(strategy)
}

// issue issues a new key for s's namespace and writes it into s (created
// when it has no resourceVersion). A key whose Secret write fails is
// deleted again; a key left behind by a crash is retired by Sweep.
func (b *Broker) issue(ctx context.Context, p Provider, strategy *strategyv1alpha1.Etcd, s *corev1.Secret) error {
	now := b.Clock.Now()
	scope := ScopeOf(strategy, s.Namespace)
	key, err := p.Issue(ctx, OwnerOf(strategy.Name, s.Namespace), scope, now)
	if err != nil {
		return err
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
	return nil
}

// provider connects to strategy's provider with the admin Secret of the
// driver's namespace.
func (b *Broker) provider(ctx context.Context, strategy *strategyv1alpha1.Etcd) (Provider, error) {
	cfg := strategy.Spec.CredentialBroker
	connect := b.Providers[cfg.Provider]
	if connect == nil {
		return nil, fmt.Errorf("credential broker provider %q is not supported", cfg.Provider)
	}
	admin, err := b.AdminKey(ctx, strategy)
	if err != nil {
		return nil, err
	}
	return connect(adminEndpoint(strategy), Key{AccessKeyID: admin.AccessKeyID, SecretAccessKey: admin.SecretAccessKey})
}

// AdminKey reads the platform credential of strategy from the driver's
// namespace.
func (b *Broker) AdminKey(ctx context.Context, strategy *strategyv1alpha1.Etcd) (s3object.Credentials, error) {
	return s3object.ReadCredentials(ctx, b.Reader, b.Namespace, strategy.Spec.CredentialBroker.AdminSecretRef.Name)
}
