package s3object

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
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
