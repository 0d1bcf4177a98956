package s3object

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// fakeSnapshot is what etcd's Maintenance API streams: whole pages and
// their sha256.
func fakeSnapshot(pages int) []byte {
	db := bytes.Repeat([]byte{0xab, 0x01, 0x02, 0x03}, pages*4096/4)
	for i := range db {
		db[i] ^= byte(i / 7)
	}
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

func checksumOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestCheckSnapshot(t *testing.T) {
	good := fakeSnapshot(3)
	flipped := append([]byte(nil), good...)
	flipped[100] ^= 0xff
	random := bytes.Repeat([]byte{7}, len(good))
	for _, tc := range []struct {
		name     string
		data     []byte
		size     int64
		checksum string
		want     error
	}{
		{"intact", good, int64(len(good)), checksumOf(good), nil},
		{"intact, nothing recorded", good, 0, "", nil},
		{"truncated", good[:len(good)-100], int64(len(good)), checksumOf(good), ErrSizeMismatch},
		{"random bytes of the same size", random, int64(len(good)), checksumOf(good), ErrChecksumMismatch},
		{"random bytes, no checksum recorded", random, int64(len(good)), "", ErrCorrupt},
		{"flipped byte, no checksum recorded", flipped, 0, "", ErrCorrupt},
		{"no trailer", good[:len(good)-32], 0, "", ErrCorrupt},
		{"empty", nil, 0, "", ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time exercises the trailer bookkeeping.
			for _, r := range []io.Reader{bytes.NewReader(tc.data), iotest.OneByteReader(bytes.NewReader(tc.data))} {
				got, err := CheckSnapshot(r, tc.size, tc.checksum)
				if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
					t.Fatalf("CheckSnapshot = %v, want %v", err, tc.want)
				}
				if got.Size != int64(len(tc.data)) {
					t.Fatalf("size %d, want %d", got.Size, len(tc.data))
				}
			}
		})
	}
}

// A database of whole pages with its trailer appended checks as a
// snapshot; one that is not whole pages is refused.
func TestAppendTrailer(t *testing.T) {
	snap := fakeSnapshot(2)
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, snap[:len(snap)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := AppendTrailer(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Equal(b, snap) || got.Size != int64(len(snap)) || "sha256:"+got.SHA256 != checksumOf(snap) {
		t.Fatalf("AppendTrailer = %+v; the file is not the snapshot", got)
	}
	if err := os.WriteFile(path, []byte("not pages"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendTrailer(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("AppendTrailer of a partial page = %v", err)
	}
}
