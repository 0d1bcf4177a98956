package provenance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// A running keyring forgets a key removed from the Secret within Refresh:
// its Backups stop verifying without a restart.
func TestRemovedKeyStopsVerifyingInARunningKeyring(t *testing.T) {
	ctx := context.Background()
	k := &Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: "keys-ttl", Refresh: 50 * time.Millisecond}
	if err := k.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	b := sealed(t, k)
	if v, err := Verify(ctx, k, b); err != nil || !v.Verified {
		t.Fatalf("fresh signature does not verify: %+v, %v", v, err)
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, &s); err != nil {
		t.Fatal(err)
	}
	old := string(s.Data[ActiveEntry])
	delete(s.Data, old)
	s.Data["k2"], s.Data[ActiveEntry] = []byte(strings.Repeat("n", 32)), []byte("k2")
	if err := env.Client.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if v, err := Verify(ctx, k, b); err != nil || v.Verified || v.Reason != ReasonUnknownKey {
		t.Fatalf("key %s removed from the Secret still verifies in the running keyring: %+v, %v", old, v, err)
	}
}

// A key Secret lost after keys were issued is reported (metric, Event on
// the marker, errors that say so) and not replaced by a fresh key, at a
// restart as while running; restored, it is used again.
func TestLostKeySecretIsReportedNotReplaced(t *testing.T) {
	ctx := context.Background()
	name := "keys-lost"
	rec := events.NewFakeRecorder(10)
	kr := func() *Keyring {
		return &Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: name,
			Refresh: 50 * time.Millisecond, Recorder: rec}
	}
	running := kr()
	if err := running.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	b := sealed(t, running)
	var s corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.DriverNamespace, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	kept := s.DeepCopy()
	if err := env.Client.Delete(ctx, &s); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)

	// While running: nothing verifies or signs, and it says why.
	if _, err := Verify(ctx, running, b); err == nil || !strings.Contains(err.Error(), "missing although the driver issued keys") {
		t.Fatalf("verification with the Secret lost: %v", err)
	}
	if got := testutil.ToFloat64(keyLost); got != 1 {
		t.Fatalf("etcd_backup_driver_provenance_key_lost = %v, want 1", got)
	}
	// After a restart: no new key is made.
	restarted := kr()
	if err := restarted.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: testenv.DriverNamespace, Name: name}, &corev1.Secret{})
	if err == nil {
		t.Fatal("a restarted keyring replaced the lost key Secret with a fresh key")
	}
	if _, _, err := restarted.Active(ctx); err == nil {
		t.Fatal("a restarted keyring signs with the key Secret lost")
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, ReasonKeyLost) {
			t.Fatalf("event %q, want %s", e, ReasonKeyLost)
		}
	default:
		t.Fatal("no Event reports the lost key Secret")
	}

	// Restored from the operator's backup: verification works again.
	kept.ResourceVersion, kept.UID = "", ""
	if err := env.Client.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if v, err := Verify(ctx, restarted, b); err != nil || !v.Verified {
		t.Fatalf("restored key Secret does not verify: %+v, %v", v, err)
	}
	if got := testutil.ToFloat64(keyLost); got != 0 {
		t.Fatalf("etcd_backup_driver_provenance_key_lost = %v after the restore, want 0", got)
	}
}
