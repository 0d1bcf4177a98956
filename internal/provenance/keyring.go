package provenance

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ActiveEntry is the key Secret's entry naming the signing key.
const ActiveEntry = "active"

// DefaultSecretName names the key Secret in the driver's namespace.
const DefaultSecretName = "etcd-backup-driver-provenance"

// Keyring reads keys from a Secret in the driver's namespace: entry
// "active" holds the signing key's id, every other entry a key (at least
// MinKeyBytes) under its id. The Secret is read live (the driver caches no
// Secrets); it is re-read when older than Refresh, and at once when a
// signature names a key not yet seen, so a rotation takes effect without a
// restart.
type Keyring struct {
	// Reader reads the Secret live.
	Reader client.Reader
	// Writer creates the Secret when it does not exist.
	Writer client.Client
	// Namespace and Name locate the Secret.
	Namespace, Name string
	// Refresh is how long a read stays current (keys removed from the
	// Secret stop verifying within it); 0 means one minute.
	Refresh time.Duration
	// Recorder, when set, emits Events on the marker ConfigMap when the
	// Secret is lost or found again.
	Recorder events.EventRecorder

	mu       sync.Mutex
	keys     map[string][]byte
	active   string
	loadedAt time.Time
	// version is the Secret's resourceVersion when last read; generation
	// counts the reads that found it changed.
	version    string
	generation uint64
	// lost: the Secret is missing although keys were issued.
	lost bool
}

// Generation re-reads the Secret when the copy is older than Refresh and
// returns a number that changes whenever the keys may have (a key added,
// rotated or removed), so verdicts remembered under other keys can be
// re-checked. A failed read keeps the last number.
func (k *Keyring) Generation(ctx context.Context) uint64 {
	if err := k.load(ctx, false); err != nil {
		log.FromContext(ctx).Error(err, "re-read the provenance keys")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.generation
}

// Start ensures the Secret exists, creating it with a fresh random key on
// the first start, then re-reads it every Refresh until ctx ends, so a lost
// Secret is reported (and a restored one picked up) even while nothing
// signs or verifies. It is a manager Runnable.
func (k *Keyring) Start(ctx context.Context) error {
	if err := k.Ensure(ctx); err != nil {
		return err
	}
	t := time.NewTicker(k.refresh())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = k.Generation(ctx) // logs a failed read
		}
	}
}

func (k *Keyring) refresh() time.Duration {
	if k.Refresh == 0 {
		return time.Minute
	}
	return k.Refresh
}

// NeedLeaderElection: every replica may create the Secret (the create is
// idempotent), and every replica must be able to verify.
func (k *Keyring) NeedLeaderElection() bool { return false }

// Ensure creates the key Secret when it does not exist and no keys were
// issued before; when they were, the loss is reported and nothing is made.
func (k *Keyring) Ensure(ctx context.Context) error {
	var s corev1.Secret
	err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &s)
	if err == nil {
		// Secrets made before the marker existed get one now.
		return k.markIssued(ctx)
	}
	if !apierrors.IsNotFound(err) {
		return k.wrap(err)
	}
	marker, err := k.issued(ctx)
	if err != nil {
		return k.wrap(err)
	}
	if marker != nil {
		// Reported, not fatal: the driver keeps serving what needs no
		// key, and picks the Secret up once it is restored.
		k.setLost(ctx, true, marker)
		return nil
	}
	key := make([]byte, MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generate provenance key: %w", err)
	}
	id := "k" + time.Now().UTC().Format("20060102t150405")
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{
			"app.kubernetes.io/name": "etcd-backup-driver", "app.kubernetes.io/component": "provenance-key"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{ActiveEntry: []byte(id), id: key},
	}
	err = k.Writer.Create(ctx, &s)
	if err != nil && !apierrors.IsAlreadyExists(err) { // another replica may have made it
		return k.wrap(err)
	}
	if err == nil {
		log.FromContext(ctx).Info("created the provenance key Secret", "namespace", k.Namespace, "name", k.Name, "key", id)
	}
	return k.markIssued(ctx)
}

// Active implements Keys.
func (k *Keyring) Active(ctx context.Context) (string, []byte, error) {
	if err := k.load(ctx, false); err != nil {
		return "", nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key, ok := k.keys[k.active]
	if !ok {
		return "", nil, fmt.Errorf("provenance Secret %s/%s: entry %q names key %q, which it does not hold (or which is shorter than %d bytes)",
			k.Namespace, k.Name, ActiveEntry, k.active, MinKeyBytes)
	}
	return k.active, key, nil
}

// Lookup implements Keys. Keys are looked up in a copy no older than
// Refresh, so a key removed from the Secret stops verifying within it.
func (k *Keyring) Lookup(ctx context.Context, id string) ([]byte, error) {
	if err := k.load(ctx, false); err != nil {
		return nil, err
	}
	if key, ok := k.cached(id); ok {
		return key, nil
	}
	if err := k.load(ctx, true); err != nil {
		return nil, err
	}
	if key, ok := k.cached(id); ok {
		return key, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownKey, id)
}

func (k *Keyring) isLost() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

func (k *Keyring) cached(id string) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key, ok := k.keys[id]
	return key, ok
}

// load re-reads the Secret when the copy is stale, or when force is set and
// the copy is older than a second (so unknown ids cannot make it re-read on
// every call).
func (k *Keyring) load(ctx context.Context, force bool) error {
	refresh := k.refresh()
	k.mu.Lock()
	age := time.Since(k.loadedAt)
	// While the Secret is lost it is looked for again at the same pace
	// (not at every call).
	fresh := (k.keys != nil || k.lost) && (age < refresh && !force || force && age < time.Second)
	lost := k.lost
	k.mu.Unlock()
	if fresh && lost {
		return k.errLost()
	}
	if fresh {
		return nil
	}
	var s corev1.Secret
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &s); err != nil {
		if !apierrors.IsNotFound(err) {
			return k.wrap(err)
		}
		if marker, merr := k.issued(ctx); merr == nil && marker != nil {
			k.setLost(ctx, true, marker)
			k.mu.Lock()
			k.loadedAt = time.Now()
			k.mu.Unlock()
			return k.errLost()
		}
		return k.wrap(err)
	}
	if k.isLost() {
		marker, _ := k.issued(ctx)
		k.setLost(ctx, false, marker)
	}
	keys := map[string][]byte{}
	for id, v := range s.Data {
		if id != ActiveEntry && keyID.MatchString(id) && len(v) >= MinKeyBytes {
			keys[id] = v
		}
	}
	k.mu.Lock()
	k.keys, k.active, k.loadedAt = keys, string(s.Data[ActiveEntry]), time.Now()
	if s.ResourceVersion != k.version {
		k.version = s.ResourceVersion
		k.generation++
	}
	k.mu.Unlock()
	return nil
}

func (k *Keyring) wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("provenance key Secret %s/%s: %w", k.Namespace, k.Name, err)
}
