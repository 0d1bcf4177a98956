package step

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Result is what Stage produced.
type Result struct {
	// SnapshotRevision is the revision the snapshot as stored restores
	// at: its newest key's, or its compaction mark's when that is higher
	// (a compaction at a head of deletions).
	SnapshotRevision int64 `json:"snapshotRevision"`
	// Revision is the latest revision of the staged snapshot: a restore
	// of it starts there.
	Revision int64 `json:"revision"`
	// CompactedRevision is the scheduled compaction of the staged
	// snapshot: every revision up to it answers ErrCompacted.
	CompactedRevision int64 `json:"compactedRevision"`
	// Size and SHA256 (hex) are those of the staged output file.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Point is what was replayed onto the snapshot before it was staged
	// (a restore to a point); SnapshotRevision is then the point's.
	Point *PointResult `json:"point,omitempty"`
}

// ErrArguments marks arguments Stage or Main cannot work with (a driver
// bug or a hand-made Job, never the tenant's data).
var ErrArguments = errors.New("invalid arguments")

// errTooLarge is returned as soon as the stream passes the expected size.
var errTooLarge = fmt.Errorf("%w: the object is larger than recorded", s3object.ErrSizeMismatch)

// localError is a failure of the local disk (the staging volume), not of
// the object or the store.
type localError struct{ err error }

func (e localError) Error() string { return e.err.Error() }
func (e localError) Unwrap() error { return e.err }

// LocalError marks err as a failure of the local disk, which Classify
// calls ReasonVolumeFailed (retryable).
func LocalError(err error) error { return localError{err} }

// Stage streams the snapshot r into a temporary file next to out, refusing
// it unless it is exactly size bytes with sha256 sha256Hex and an intact
// etcd integrity trailer; raises its revision as p says (see the package
// doc); appends a fresh trailer; syncs; and renames it to out. Memory use
// does not grow with the snapshot. On any error out is left untouched and
// the temporary file is removed; temporary files of earlier attempts that
// were killed before they could remove theirs are removed first.
func Stage(r io.Reader, size int64, sha256Hex string, out string, p Plan) (Result, error) {
	return stage(r, size, sha256Hex, out, p, nil)
}

// stage is Stage, with the downloaded snapshot first replayed to a point
// when at is set (StageAt).
func stage(r io.Reader, size int64, sha256Hex string, out string, p Plan, at Replayer) (Result, error) {
	if err := checkArgs(size, sha256Hex, out, p); err != nil {
		return Result{}, err
	}
	dir := filepath.Dir(out)
	tmpName, err := download(r, size, sha256Hex, dir, tempPrefix(out))
	if err != nil {
		return Result{}, err
	}
	var point *PointResult
	if at != nil {
		tmpName, point, err = replayTo(tmpName, out, at)
		if err != nil {
			return Result{}, err
		}
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmpName)
		}
	}()

	e, err := bumpRevision(tmpName, p)
	if err != nil {
		return Result{}, err
	}
	staged, err := appendTrailer(tmpName)
	if err != nil {
		return Result{}, err
	}
	if err := os.Rename(tmpName, out); err != nil {
		return Result{}, localError{fmt.Errorf("move the staged snapshot into place: %w", err)}
	}
	done = true
	if err := syncDir(dir); err != nil {
		return Result{}, err
	}
	return Result{
		SnapshotRevision:  e.snapshotRevision,
		Revision:          e.target,
		CompactedRevision: e.target,
		Size:              staged.Size,
		SHA256:            staged.SHA256,
		Point:             point,
	}, nil
}

// Download streams the snapshot r into a new file named prefix* in dir,
// refusing it unless it is exactly size bytes with sha256 sha256Hex and an
// intact etcd integrity trailer, and strips the trailer: the file is the
// bolt database alone. Files named prefix* that earlier attempts left are
// removed first. On an error no file is left; otherwise the caller
// removes the returned one. Errors sort as Stage's (Classify).
func Download(r io.Reader, size int64, sha256Hex, dir, prefix string) (string, error) {
	if err := CheckObject(size, sha256Hex); err != nil {
		return "", err
	}
	if prefix == "" || strings.ContainsRune(prefix, filepath.Separator) {
		return "", fmt.Errorf("%w: temporary file prefix %q", ErrArguments, prefix)
	}
	return download(r, size, sha256Hex, dir, prefix)
}

func download(r io.Reader, size int64, sha256Hex, dir, prefix string) (string, error) {
	if err := removeLeftovers(dir, prefix); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return "", localError{fmt.Errorf("create the download file in %s: %w", dir, err)}
	}
	tmpName := tmp.Name()
	fail := func(err error) (string, error) {
		tmp.Close()
		os.Remove(tmpName)
		return "", err
	}
	// The copy into the file goes through the check: a write error
	// surfaces as the copy's error, which is why it is wrapped.
	_, err = s3object.CheckSnapshot(io.TeeReader(&boundedReader{r: r, left: size}, writerOf{tmp}), size, "sha256:"+sha256Hex)
	if err != nil {
		return fail(fmt.Errorf("check the snapshot: %w", err))
	}
	// Drop etcd's trailer: bolt must see only the database.
	if err := tmp.Truncate(size - sha256.Size); err != nil {
		return fail(localError{fmt.Errorf("strip the integrity trailer: %w", err)})
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return "", localError{fmt.Errorf("close the download file: %w", err)}
	}
	return tmpName, nil
}

// tempPrefix is how the temporary files of out are named.
func tempPrefix(out string) string { return "." + filepath.Base(out) + ".staging-" }

// removeLeftovers removes the temporary files named prefix* in dir: an
// attempt killed mid-download (OOM, deadline, a lost node) leaves its
// file, and a few of them next to a new download fill the claim. Only one
// attempt runs at a time (the Job replaces a Pod once it has failed), and
// one that still wrote to such a file would fail its rename and be
// retried.
func removeLeftovers(dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return localError{fmt.Errorf("list %s: %w", dir, err)}
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return localError{fmt.Errorf("remove the leftover %s: %w", e.Name(), err)}
		}
	}
	return nil
}

func checkArgs(size int64, sha256Hex, out string, p Plan) error {
	if err := CheckObject(size, sha256Hex); err != nil {
		return err
	}
	if out == "" {
		return fmt.Errorf("%w: no output path", ErrArguments)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrArguments, err)
	}
	return nil
}

// CheckObject refuses recorded facts no etcd snapshot can have.
func CheckObject(size int64, sha256Hex string) error {
	if size <= sha256.Size {
		return fmt.Errorf("%w: size %d cannot hold an etcd snapshot", ErrArguments, size)
	}
	if b, err := hex.DecodeString(sha256Hex); err != nil || len(b) != sha256.Size || strings.ToLower(sha256Hex) != sha256Hex {
		return fmt.Errorf("%w: sha256 %q is not 64 lower-case hex digits", ErrArguments, sha256Hex)
	}
	return nil
}

// appendTrailer appends the sha256 of the database at path, as etcd's
// Maintenance API does, and syncs the file; it returns the size and sha256
// of the whole result. etcdutl strips and checks a trailer only when the
// file's size is 32 past a multiple of 512, which a bolt file of whole
// pages followed by it is.
func appendTrailer(path string) (s3object.Checked, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return s3object.Checked{}, localError{fmt.Errorf("reopen the staged database: %w", err)}
	}
	defer f.Close()
	db, whole := sha256.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(db, whole), f)
	if err != nil {
		return s3object.Checked{}, localError{fmt.Errorf("hash the staged database: %w", err)}
	}
	if n%512 != 0 {
		return s3object.Checked{}, fmt.Errorf("%w: the staged database is %d bytes, not whole pages", s3object.ErrCorrupt, n)
	}
	trailer := db.Sum(nil)
	if _, err := f.Write(trailer); err != nil {
		return s3object.Checked{}, localError{fmt.Errorf("append the integrity trailer: %w", err)}
	}
	if err := f.Sync(); err != nil {
		return s3object.Checked{}, localError{fmt.Errorf("sync the staged snapshot: %w", err)}
	}
	if err := f.Close(); err != nil {
		return s3object.Checked{}, localError{fmt.Errorf("close the staged snapshot: %w", err)}
	}
	return s3object.Checked{Size: n + int64(len(trailer)), SHA256: sumHex(whole, trailer)}, nil
}

func sumHex(h hash.Hash, more []byte) string {
	h.Write(more)
	return hex.EncodeToString(h.Sum(nil))
}

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return localError{fmt.Errorf("open %s to sync it: %w", dir, err)}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return localError{fmt.Errorf("sync %s: %w", dir, err)}
	}
	return nil
}

// boundedReader fails as soon as more than left bytes arrive, so an
// oversized object is refused before it fills the volume.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	// Read one byte past the bound to see whether the stream ends there.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}

// writerOf marks write errors of the staging file as local.
type writerOf struct{ f *os.File }

func (w writerOf) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = localError{fmt.Errorf("write the staging file: %w", err)}
	}
	return n, err
}
