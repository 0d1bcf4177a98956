package s3object

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
)

// Errors CheckSnapshot reports about the data itself.
var (
	// ErrSizeMismatch: the object's size is not the recorded one.
	ErrSizeMismatch = errors.New("size differs from the recorded size")
	// ErrChecksumMismatch: the sha256 is not the recorded checksum.
	ErrChecksumMismatch = errors.New("sha256 differs from the recorded checksum")
	// ErrCorrupt: etcd's integrity trailer does not match the data.
	ErrCorrupt = errors.New("not an intact etcd snapshot")
)

// Checked is what CheckSnapshot found.
type Checked struct {
	Size   int64
	SHA256 string
}

// CheckSnapshot reads a whole snapshot stream once and checks it: the size
// (when wantSize > 0), the sha256 of the whole stream against wantChecksum
// ("sha256:<hex>", when set), and etcd's own integrity trailer — a snapshot
// from etcd's Maintenance API is a bolt database followed by the 32-byte
// sha256 of that database, which is what etcdutl verifies on restore
// unless told to skip it.
func CheckSnapshot(r io.Reader, wantSize int64, wantChecksum string) (Checked, error) {
	whole, body := sha256.New(), sha256.New()
	tw := &trailerWriter{body: body}
	n, err := io.Copy(io.MultiWriter(whole, tw), r)
	if err != nil {
		return Checked{}, err
	}
	got := Checked{Size: n, SHA256: hex.EncodeToString(whole.Sum(nil))}
	if wantSize > 0 && n != wantSize {
		return got, fmt.Errorf("%w: %d bytes stored, %d recorded", ErrSizeMismatch, n, wantSize)
	}
	if want, ok := strings.CutPrefix(wantChecksum, "sha256:"); ok && !strings.EqualFold(want, got.SHA256) {
		return got, fmt.Errorf("%w: sha256:%s stored, %s recorded", ErrChecksumMismatch, got.SHA256, wantChecksum)
	}
	if n < sha256.Size || (n-sha256.Size)%512 != 0 {
		return got, fmt.Errorf("%w: %d bytes is not a database of whole pages followed by a %d-byte hash", ErrCorrupt, n, sha256.Size)
	}
	if !bytes.Equal(body.Sum(nil), tw.tail[:tw.held]) {
		return got, fmt.Errorf("%w: the trailing hash does not match the database", ErrCorrupt)
	}
	return got, nil
}

// trailerWriter feeds body everything but the last sha256.Size bytes seen.
type trailerWriter struct {
	body hash.Hash
	tail [sha256.Size]byte
	held int
}

func (w *trailerWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= sha256.Size {
		w.body.Write(w.tail[:w.held])
		w.body.Write(p[:len(p)-sha256.Size])
		w.held = copy(w.tail[:], p[len(p)-sha256.Size:])
		return n, nil
	}
	// Fewer bytes than a hash: shift the oldest held bytes into body.
	overflow := w.held + len(p) - sha256.Size
	if overflow > 0 {
		w.body.Write(w.tail[:overflow])
		copy(w.tail[:], w.tail[overflow:w.held])
		w.held -= overflow
	}
	w.held += copy(w.tail[w.held:], p)
	return n, nil
}

// AppendTrailer makes the bolt database at path an etcd snapshot, as
// etcd's Maintenance API does: it appends the sha256 of the database and
// syncs the file, returning the size and sha256 of the result. etcdutl
// strips and checks a trailer only when the size is 32 past a multiple of
// 512, which a database of whole pages followed by it is; a database that
// is not whole pages is ErrCorrupt.
func AppendTrailer(path string) (Checked, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return Checked{}, err
	}
	defer f.Close()
	db, whole := sha256.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(db, whole), f)
	if err != nil {
		return Checked{}, fmt.Errorf("hash %s: %w", path, err)
	}
	if n%512 != 0 {
		return Checked{}, fmt.Errorf("%w: %s is %d bytes, not whole pages", ErrCorrupt, path, n)
	}
	trailer := db.Sum(nil)
	if _, err := f.Write(trailer); err != nil {
		return Checked{}, fmt.Errorf("append the integrity trailer to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return Checked{}, fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return Checked{}, fmt.Errorf("close %s: %w", path, err)
	}
	whole.Write(trailer)
	return Checked{Size: n + int64(len(trailer)), SHA256: hex.EncodeToString(whole.Sum(nil))}, nil
}
