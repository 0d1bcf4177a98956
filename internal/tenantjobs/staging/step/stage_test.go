package step

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// boltSnapshot is a snapshot as etcd's Maintenance API streams it: a bolt
// database laid out as etcd's (buckets "key" and "meta", revision keys,
// tombstones) followed by its sha256. Its latest revision is latest.
func boltSnapshot(t *testing.T, latest int64) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		keys, err := tx.CreateBucket(keyBucket)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket(metaBucket); err != nil {
			return err
		}
		for rev := int64(2); rev <= latest; rev++ {
			k := revisionKey(rev, 0)
			if rev == latest {
				k = append(k, markTombstone)
			}
			if err := keys.Put(k, []byte("value")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return withTrailer(b)
}

func withTrailer(db []byte) []byte {
	sum := sha256.Sum256(db)
	return append(append([]byte(nil), db...), sum[:]...)
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readStaged checks the staged file's trailer and returns the latest and
// scheduled-compaction revisions of its database.
func readStaged(t *testing.T, path string, res Result) (latest, compacted int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s3object.CheckSnapshot(f, res.Size, "sha256:"+res.SHA256); err != nil {
		t.Fatalf("the staged file is not an intact snapshot matching its Result: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "staged.db")
	if err := os.WriteFile(db, b[:len(b)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	latest, compacted, err = latestRevision(db)
	if err != nil {
		t.Fatal(err)
	}
	return latest, compacted
}

func TestStageRaisesTheRevisionAndMarksItCompacted(t *testing.T) {
	snap := boltSnapshot(t, 500)
	for _, tc := range []struct {
		name string
		plan Plan
		want int64
	}{
		{"live above the snapshot", FloorPlan(800), 800 + DefaultMargin},
		{"live below the snapshot", FloorPlan(100), 500 + DefaultMargin},
		{"unknown live revision", BumpPlan(UnknownLiveBump), 500 + UnknownLiveBump},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "snapshot.db")
			res, err := Stage(bytes.NewReader(snap), int64(len(snap)), hexSum(snap), out, tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			if res.SnapshotRevision != 500 || res.Revision != tc.want || res.CompactedRevision != tc.want {
				t.Fatalf("Result %+v, want snapshot 500, revision and compaction %d", res, tc.want)
			}
			latest, compacted := readStaged(t, out, res)
			if latest != tc.want || compacted != tc.want {
				t.Fatalf("staged database: latest %d, compaction %d, want %d", latest, compacted, tc.want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
				t.Fatalf("staging left %d files, want only the output", len(entries))
			}
		})
	}
}

// endless yields bytes forever and counts them.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

func TestStageRefusesWhatIsNotTheRecordedSnapshot(t *testing.T) {
	snap := boltSnapshot(t, 50)
	size, sum := int64(len(snap)), hexSum(snap)

	badTrailer := append([]byte(nil), snap...)
	badTrailer[len(badTrailer)-1] ^= 0xff
	notBolt := withTrailer(bytes.Repeat([]byte{0x5a}, 8192))
	noKeyBucket := func() []byte {
		path := filepath.Join(t.TempDir(), "empty.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		b, _ := os.ReadFile(path)
		return withTrailer(b)
	}()
	inf := &endless{}

	for _, tc := range []struct {
		name   string
		r      io.Reader
		size   int64
		sha    string
		reason report.Reason
	}{
		{"truncated", bytes.NewReader(snap[:len(snap)-512]), size, sum, ReasonArtifactChanged},
		{"longer than recorded", bytes.NewReader(append(append([]byte(nil), snap...), 0)), size, sum, ReasonArtifactChanged},
		{"endless stream", inf, size, sum, ReasonArtifactChanged},
		{"other bytes of the recorded size", bytes.NewReader(badTrailer), size, sum, ReasonArtifactChanged},
		{"recorded facts match a broken trailer", bytes.NewReader(badTrailer), size, hexSum(badTrailer), ReasonArtifactCorrupt},
		{"intact trailer, not a bolt database", bytes.NewReader(notBolt), int64(len(notBolt)), hexSum(notBolt), ReasonArtifactCorrupt},
		{"bolt database without etcd's buckets", bytes.NewReader(noKeyBucket), int64(len(noKeyBucket)), hexSum(noKeyBucket), ReasonArtifactCorrupt},
		{"upper-case checksum argument", bytes.NewReader(snap), size, "AB" + sum[2:], ReasonInvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "snapshot.db")
			if err := os.WriteFile(out, []byte("previous"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Stage(tc.r, tc.size, tc.sha, out, FloorPlan(100))
			if reason, _ := Classify(err); err == nil || reason != tc.reason {
				t.Fatalf("Stage = %v (%s), want %s", err, reason, tc.reason)
			}
			if b, _ := os.ReadFile(out); string(b) != "previous" {
				t.Fatal("a refused stage changed the output")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("a refused stage left %d files behind", len(entries))
			}
		})
	}
	// The endless stream was refused within a read of the bound.
	if inf.n > size+64*1024 {
		t.Fatalf("read %d bytes of an endless stream recorded as %d", inf.n, size)
	}
}

func TestPlanTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan Plan
		snap int64
		want int64 // 0: refused
	}{
		{"floor above", FloorPlan(1000), 10, 1000 + DefaultMargin},
		{"floor below", FloorPlan(5), 10, 10 + DefaultMargin},
		{"bump", BumpPlan(7), 10, 17},
		{"floor without margin at the snapshot", Plan{Floor: 10}, 10, 0},
		{"floor without margin above", Plan{Floor: 11}, 10, 11},
		{"both", Plan{Floor: 1, Bump: 1}, 10, 0},
		{"neither", Plan{}, 10, 0},
		{"negative", BumpPlan(-1), 10, 0},
		{"margin with a bump", Plan{Bump: 1, Margin: 1}, 10, 0},
		{"overflow", BumpPlan(1 << 62), 1 << 62, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.plan.Target(tc.snap)
			if tc.want == 0 {
				if !errors.Is(err, ErrPlan) {
					t.Fatalf("Target = %d, %v; want ErrPlan", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Target = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// latestRevision reads what bumpRevision wrote: the latest main revision in
// bucket "key" and the scheduled compaction (0 when none).
func latestRevision(path string) (latest, scheduled int64, err error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		keys, meta := tx.Bucket(keyBucket), tx.Bucket(metaBucket)
		if keys == nil || meta == nil {
			return errors.New("not an etcd v3 database")
		}
		if last, _ := keys.Cursor().Last(); last != nil {
			if latest, err = ParseRevisionKey(last); err != nil {
				return err
			}
		}
		if v := meta.Get(scheduledCompactID); v != nil {
			if scheduled, err = ParseRevisionKey(v); err != nil {
				return err
			}
		}
		return nil
	})
	return latest, scheduled, err
}

// Garbage on any page past bolt's two meta pages, under an intact trailer
// (whoever wrote it computed the trailer), is refused as corrupt: bolt
// checks only its meta pages and panics on the others, which would be
// retried as a crash of this machine.
func TestStageRefusesGarbagePages(t *testing.T) {
	db := boltSnapshot(t, 3000)
	db = db[:len(db)-32]
	const pageSize = 4096
	refused := 0
	for page := 2; page < len(db)/pageSize; page++ {
		b := append([]byte(nil), db...)
		copy(b[page*pageSize:], bytes.Repeat([]byte{0xA5}, 64))
		snap := withTrailer(b)
		out := filepath.Join(t.TempDir(), "snapshot.db")
		_, err := Stage(bytes.NewReader(snap), int64(len(snap)), hexSum(snap), out, FloorPlan(100))
		if err == nil {
			continue // a page the edit never reads
		}
		if reason, retryable := Classify(err); retryable || reason != ReasonArtifactCorrupt {
			t.Errorf("garbage on page %d: %v (%s, retryable %v), want ArtifactCorrupt", page, err, reason, retryable)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("no garbage page was refused")
	}
}
