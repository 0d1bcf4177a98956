package step

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// TestInspectFileCountsARealSnapshot writes Kubernetes' layout into a real
// etcd under /registry and two Kamaji prefixes, deletes, overwrites and
// compacts, takes a snapshot through the Maintenance API, and checks every
// count InspectFile reads from it, its revision and its compaction mark.
func TestInspectFileCountsARealSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := startEtcd(t)
	put := func(keys ...string) int64 {
		t.Helper()
		var rev int64
		for _, k := range keys {
			r, err := cli.Put(ctx, k, "v-"+k)
			if err != nil {
				t.Fatal(err)
			}
			rev = r.Header.Revision
		}
		return rev
	}
	del := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if r, err := cli.Delete(ctx, k); err != nil || r.Deleted != 1 {
				t.Fatalf("delete %s: %v", k, err)
			}
		}
	}
	put("/registry/namespaces/default", "/registry/namespaces/a", "/registry/namespaces/b", "/registry/namespaces/c",
		"/registry/pods/a/p1", "/registry/pods/a/p2", "/registry/pods/b/p1", "/registry/pods/c/p1",
		"/registry/services/specs/default/kubernetes",
		"/registry/example.com/widgets/a/w1", "/registry/example.com/widgets/b/w1",
		"/registry/minions/n1", "/registry/minions/n2",
		"/t1_cp1/namespaces/default", "/t1_cp1/namespaces/x",
		"/t1_cp1/pods/x/p1", "/t1_cp1/pods/x/p2", "/t1_cp1/pods/x/p3",
		"/t2_cp2/namespaces/default", "/t2_cp2/configmaps/default/cm1",
		"/other/stuff")
	del("/registry/pods/c/p1", "/registry/namespaces/c", "/registry/minions/n2")
	compacted := put("/registry/pods/a/p1", "/registry/pods/a/p1")
	if _, err := cli.Compact(ctx, compacted, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	head := put("/registry/namespaces/d", "/registry/pods/d/p1")

	db := saveDatabase(ctx, t, cli, t.TempDir())
	got, err := InspectFile(db)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(db)
	want := driverv1alpha1.BackupManifest{
		Revision: head, CompactedRevision: compacted, Keys: 20, DBSizeBytes: st.Size(),
		Keyspaces: []driverv1alpha1.KeyspaceManifest{{
			Prefix: "/registry", Objects: 12, Namespaces: 4,
			Resources: []driverv1alpha1.ObjectCount{
				{Name: "namespaces", Count: 4}, {Name: "pods", Count: 4}, {Name: "example.com/widgets", Count: 2},
				{Name: "minions", Count: 1}, {Name: "services/specs", Count: 1},
			},
			TopNamespaces:  []driverv1alpha1.ObjectCount{{Name: "a", Count: 3}, {Name: "b", Count: 2}, {Name: "d", Count: 1}, {Name: "default", Count: 1}},
			NamespaceNames: []string{"a", "b", "d", "default"},
		}, {
			Prefix: "/t1_cp1", Objects: 5, Namespaces: 2,
			Resources:      []driverv1alpha1.ObjectCount{{Name: "pods", Count: 3}, {Name: "namespaces", Count: 2}},
			TopNamespaces:  []driverv1alpha1.ObjectCount{{Name: "x", Count: 3}},
			NamespaceNames: []string{"default", "x"},
		}, {
			Prefix: "/t2_cp2", Objects: 2, Namespaces: 1,
			Resources:      []driverv1alpha1.ObjectCount{{Name: "configmaps", Count: 1}, {Name: "namespaces", Count: 1}},
			TopNamespaces:  []driverv1alpha1.ObjectCount{{Name: "default", Count: 1}},
			NamespaceNames: []string{"default"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("InspectFile =\n%+v\nwant\n%+v", got, want)
	}
}

// TestInspectFileRefusesBadBytes: a value in bucket "key" that is not a
// KeyValue, and a file that is not a bolt database, are ErrCorrupt
// (refused for good); a missing file is a local failure (retried).
func TestInspectFileRefusesBadBytes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := startEtcd(t)
	if _, err := cli.Put(ctx, "/registry/namespaces/default", "v"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := saveDatabase(ctx, t, cli, dir)

	garbage := filepath.Join(dir, "garbage-value.db")
	copyFile(t, db, garbage)
	b, err := bolt.Open(garbage, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rev := []byte{0, 0, 0, 0, 0, 0, 0, 9, '_', 0, 0, 0, 0, 0, 0, 0, 0}
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("key")).Put(rev, []byte("\xff\xff\xff garbage")) }); err != nil {
		t.Fatal(err)
	}
	b.Close()

	notBolt := filepath.Join(dir, "not-bolt.db")
	if err := os.WriteFile(notBolt, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	// bbolt says a file shorter than two pages is "too small", an error
	// it does not export: the bytes' fault all the same.
	onePage := filepath.Join(dir, "one-page.db")
	if err := os.WriteFile(onePage, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{garbage, notBolt, onePage} {
		if _, err := InspectFile(path); !errors.Is(err, s3object.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", filepath.Base(path), err)
		}
	}
	_, err = InspectFile(filepath.Join(dir, "missing.db"))
	if reason, retryable := stagingstep.Classify(err); err == nil || !retryable || reason != stagingstep.ReasonVolumeFailed {
		t.Errorf("missing file: %v (%s, retryable %v), want a retryable local failure", err, reason, retryable)
	}
}

func startEtcd(t testing.TB) *clientv3.Client {
	cli, _ := testenv.StartEtcd(t, "--quota-backend-bytes=1073741824")
	return cli
}

// saveDatabase takes a snapshot through the Maintenance API into dir and
// returns the path of its database: the snapshot without etcd's 32-byte
// trailer, which it checks.
func saveDatabase(ctx context.Context, t testing.TB, cli *clientv3.Client, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "snapshot.db")
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b[:len(b)-sha256.Size]); string(sum[:]) != string(b[len(b)-sha256.Size:]) {
		t.Fatal("the snapshot's trailer is not the sha256 of its database")
	}
	if err := os.WriteFile(path, b[:len(b)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInspectFileRefusesCorruptPages: bolt checks only its meta pages; a
// page of the tree that is garbage makes bbolt panic. InspectFile must
// refuse such a file (ErrCorrupt), not crash: a crash is retried as if
// the machine had failed, and says nothing of the object.
func TestInspectFileRefusesCorruptPages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := startEtcd(t)
	for i := range 2000 {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/pods/ns/p%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	orig, err := os.ReadFile(saveDatabase(ctx, t, cli, dir))
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	refused := 0
	for page := 2; page < len(orig)/pageSize; page++ {
		b := append([]byte(nil), orig...)
		copy(b[page*pageSize:], bytes.Repeat([]byte{0xA5}, 64))
		path := filepath.Join(dir, fmt.Sprintf("page-%d.db", page))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := InspectFile(path)
		switch {
		case errors.Is(err, s3object.ErrCorrupt):
			refused++
		case err != nil:
			t.Errorf("page %d garbage: %v, want ErrCorrupt", page, err)
		}
	}
	if refused == 0 {
		t.Fatal("no garbage page was refused")
	}
}
