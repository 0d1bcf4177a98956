package ebdctl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	. "github.com/onsi/gomega"
)

// snapshotFile builds bytes shaped like an etcd snapshot: a database of
// whole 512-byte sectors followed by the sha256 of it.
func snapshotFile(sectors int) []byte {
	db := make([]byte, 512*sectors)
	r := rand.New(rand.NewPCG(1, uint64(sectors)))
	for i := range db {
		db[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

func TestSnapshotCheck(t *testing.T) {
	good := snapshotFile(7)
	corrupt := bytes.Clone(good)
	corrupt[100] ^= 0xff
	wholeSum := sha256.Sum256(good)
	for _, tc := range []struct {
		name           string
		data           []byte
		trailer, match bool
	}{
		{"snapshot", good, true, true},
		{"a flipped byte", corrupt, true, false},
		{"a bare database file (no trailer)", good[:len(good)-32], false, false},
		{"shorter than a trailer", []byte("etcd"), false, false},
		{"empty", nil, false, false},
	} {
		// Every way of cutting the stream gives the same answer.
		for _, chunk := range []int{1, 7, 31, 32, 33, 512, 1 << 20} {
			g := NewWithT(t)
			c := newSnapshotCheck()
			var r io.Reader = bytes.NewReader(tc.data)
			if chunk == 1 {
				r = iotest.OneByteReader(r)
			}
			buf := make([]byte, chunk)
			_, err := io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{r}, buf)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Size()).To(Equal(int64(len(tc.data))), tc.name)
			g.Expect(c.HasTrailer()).To(Equal(tc.trailer), tc.name)
			g.Expect(c.TrailerMatches()).To(Equal(tc.match), "%s, chunks of %d", tc.name, chunk)
		}
	}
	c := newSnapshotCheck()
	_, _ = c.Write(good)
	NewWithT(t).Expect(c.Checksum()).To(Equal("sha256:" + hex.EncodeToString(wholeSum[:])))
}
