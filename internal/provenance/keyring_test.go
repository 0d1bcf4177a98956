package provenance

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// The keyring makes its Secret on first start (once, however many replicas
// start), signs with the active key, and after a rotation signs with the
// new key while Backups signed with the old one still verify.
func TestKeyringCreatesRotatesAndKeepsOldKeys(t *testing.T) {
	ctx := context.Background()
	kr := func() *Keyring {
		return &Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: "keys-" + strings.ToLower(t.Name())}
	}
	first, second := kr(), kr()
	for _, k := range []*Keyring{first, second} {
		if err := k.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.DriverNamespace, Name: first.Name}, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data) != 2 || len(s.Data[string(s.Data[ActiveEntry])]) < MinKeyBytes {
		t.Fatalf("want one active key of %d bytes, got %d entries", MinKeyBytes, len(s.Data))
	}
	old := sealed(t, first)
	oldID, _, _ := first.Active(ctx)

	// Rotation, as the README describes it: add a key, point active at it.
	s.Data["k2"] = []byte(strings.Repeat("n", 32))
	s.Data[ActiveEntry] = []byte("k2")
	if err := env.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	rotated := kr() // a restarted driver; a running one re-reads within Refresh
	if id, _, err := rotated.Active(ctx); err != nil || id != "k2" {
		t.Fatalf("active key after rotation = %q, %v", id, err)
	}
	if v, err := Verify(ctx, rotated, old); err != nil || !v.Verified {
		t.Fatalf("a Backup signed with %s no longer verifies: %+v, %v", oldID, v, err)
	}
	// A running keyring picks up a key it has not seen when a signature
	// names it.
	fresh := sealed(t, rotated)
	if v, err := Verify(ctx, second, fresh); err != nil || !v.Verified {
		t.Fatalf("a running keyring did not load the new key: %+v, %v", v, err)
	}
	// Removing a key makes its Backups unverifiable, not verifiable.
	delete(s.Data, oldID)
	if err := env.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if v, err := Verify(ctx, kr(), old); err != nil || v.Verified || v.Reason != ReasonUnknownKey {
		t.Fatalf("a removed key still verifies: %+v, %v", v, err)
	}
}

// Generation changes when the key Secret does (so the metrics verifier
// re-checks what it remembered), and only then.
func TestKeyringGenerationFollowsTheSecret(t *testing.T) {
	ctx := context.Background()
	k := &Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: "keys-generation", Refresh: time.Nanosecond}
	if err := k.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	g1 := k.Generation(ctx)
	if g := k.Generation(ctx); g != g1 {
		t.Fatalf("generation moved from %d to %d with no change", g1, g)
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["k2"] = []byte(strings.Repeat("n", 32))
	if err := env.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	if g := k.Generation(ctx); g == g1 {
		t.Fatalf("generation stayed %d after the Secret changed", g)
	}
}
