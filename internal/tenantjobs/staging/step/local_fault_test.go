package step

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fsizeAtEOF hands r to Stage and, once the download is complete, lowers
// the process's file size limit (RLIMIT_FSIZE) to lim: from then on every
// write past lim bytes of any file fails (EFBIG), as writes to a full
// volume fail. Restore puts the old limit back.
type fsizeAtEOF struct {
	r   io.Reader
	lim uint64
	old *syscall.Rlimit
}

func (l *fsizeAtEOF) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err == io.EOF && l.old == nil {
		l.old = &syscall.Rlimit{}
		if gerr := syscall.Getrlimit(syscall.RLIMIT_FSIZE, l.old); gerr != nil {
			panic(gerr)
		}
		if serr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: l.lim, Max: l.old.Max}); serr != nil {
			panic(serr)
		}
	}
	return n, err
}

func (l *fsizeAtEOF) restore(t *testing.T) {
	if l.old != nil {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, l.old); err != nil {
			t.Fatal(err)
		}
	}
}

// A failure of the staging volume or of the local machine is retried as
// VolumeFailed, never refused as a corrupt artifact nor blamed on the
// network: the recorded bytes arrived intact, and another attempt (or a
// volume with room) stages them.
func TestLocalFailuresAreRetriedAsVolumeFailed(t *testing.T) {
	snap := boltSnapshot(t, 500)

	t.Run("the volume refuses the database's writes", func(t *testing.T) {
		dir := t.TempDir()
		r := &fsizeAtEOF{r: bytes.NewReader(snap), lim: 8192}
		_, err := Stage(r, int64(len(snap)), hexSum(snap), filepath.Join(dir, "snapshot.db"), FloorPlan(100))
		r.restore(t)
		if r.old == nil {
			t.Fatal("the download never ended")
		}
		if reason, retry := Classify(err); reason != ReasonVolumeFailed || !retry {
			t.Fatalf("Stage = %v, classified %s (retryable %v); want %s, retryable", err, reason, retry, ReasonVolumeFailed)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("a failed stage left %d files behind", len(entries))
		}
	})

	t.Run("the database file is locked", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "locked.db")
		if err := os.WriteFile(db, snap[:len(snap)-32], 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		defer func(d time.Duration) { openTimeout = d }(openTimeout)
		openTimeout = 200 * time.Millisecond
		_, err = bumpRevision(db, FloorPlan(100))
		if reason, retry := Classify(err); reason != ReasonVolumeFailed || !retry {
			t.Fatalf("bumpRevision = %v, classified %s (retryable %v); want %s, retryable", err, reason, retry, ReasonVolumeFailed)
		}
	})
}

// Temporary files of attempts that were killed (OOM, deadline, a lost
// node) are removed by the next attempt before it downloads: three of
// them next to a new download do not fit the claim. Files that are not
// this output's temporaries are left alone.
func TestLeftoversOfKilledAttemptsAreRemoved(t *testing.T) {
	snap := boltSnapshot(t, 50)
	dir := t.TempDir()
	out := filepath.Join(dir, "restore.db")
	leftovers := []string{".restore.db.staging-1234", ".restore.db.staging-98765"}
	kept := []string{"rollback.db", ".rollback.db.staging-555", "restore.db.staging-1", "notes"}
	for _, name := range append(append([]string{}, leftovers...), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{1}, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Stage(bytes.NewReader(snap), int64(len(snap)), hexSum(snap), out, FloorPlan(100)); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := append([]string{"restore.db"}, kept...)
	if strings.Join(sorted(got), ",") != strings.Join(sorted(want), ",") {
		t.Fatalf("after staging the folder holds %v, want %v", got, want)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
