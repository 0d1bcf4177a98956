package changelog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

// Magic opens every segment: the format's name and version 1.
const Magic = "EBDCHG\x00\x01"

// HeaderSize is the fixed size of a segment's header.
const HeaderSize = len(Magic) + 9*8 + sha256.Size

// Header describes one segment.
type Header struct {
	// Seq is the segment's place in its chain, from 0.
	Seq int64
	// BaseRevision is the revision of the chain's base Backup.
	BaseRevision int64
	// From and To are the first and last revision the segment holds;
	// it holds every revision between them.
	From, To int64
	// FromTime and ToTime are when the capture received From and To
	// whole (millisecond precision).
	FromTime, ToTime time.Time
	// Events counts the segment's puts and deletes.
	Events int64
	// RawBytes is the size of the decompressed body.
	RawBytes int64
	// ClusterID is the etcd cluster the changes came from.
	ClusterID uint64
	// Prev is the sha256 of the previous segment; for segment 0, of the
	// base Backup's snapshot.
	Prev [sha256.Size]byte
}

// Revisions is how many revisions the segment holds.
func (h Header) Revisions() int64 { return h.To - h.From + 1 }

// PrevHex is Prev in lower-case hex.
func (h Header) PrevHex() string { return hex.EncodeToString(h.Prev[:]) }

func (h Header) marshal() []byte {
	b := make([]byte, 0, HeaderSize)
	b = append(b, Magic...)
	for _, v := range []int64{h.Seq, h.BaseRevision, h.From, h.To, h.FromTime.UnixMilli(), h.ToTime.UnixMilli(), h.Events, h.RawBytes, int64(h.ClusterID)} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return append(b, h.Prev[:]...)
}

// ParseHeader reads a segment's header from its first HeaderSize bytes
// and refuses one no segment within lim can have.
func ParseHeader(b []byte, lim Limits) (Header, error) {
	if len(b) < HeaderSize || !bytes.Equal(b[:len(Magic)], []byte(Magic)) {
		return Header{}, fmt.Errorf("%w: no segment header", ErrCorrupt)
	}
	f := make([]int64, 9)
	for i := range f {
		f[i] = int64(binary.BigEndian.Uint64(b[len(Magic)+8*i:]))
	}
	h := Header{Seq: f[0], BaseRevision: f[1], From: f[2], To: f[3],
		FromTime: time.UnixMilli(f[4]).UTC(), ToTime: time.UnixMilli(f[5]).UTC(),
		Events: f[6], RawBytes: f[7], ClusterID: uint64(f[8])}
	copy(h.Prev[:], b[len(Magic)+9*8:HeaderSize])
	switch {
	case h.Seq < 0 || h.BaseRevision < 1 || h.From <= h.BaseRevision || h.To < h.From:
		return Header{}, fmt.Errorf("%w: header holds seq %d, base %d, revisions %d..%d", ErrCorrupt, h.Seq, h.BaseRevision, h.From, h.To)
	case f[4] < 0 || f[5] < f[4]:
		return Header{}, fmt.Errorf("%w: header's times go backwards (%d..%d)", ErrCorrupt, f[4], f[5])
	case h.Events < h.Revisions():
		return Header{}, fmt.Errorf("%w: %d events for %d revisions", ErrCorrupt, h.Events, h.Revisions())
	case h.RawBytes > lim.MaxRawBytes:
		return Header{}, fmt.Errorf("%w: body of %d bytes, at most %d", ErrTooLarge, h.RawBytes, lim.MaxRawBytes)
	case h.Revisions() > h.RawBytes/3 || h.Events > h.RawBytes/3:
		// A record is at least 3 bytes and an event at least 3 bytes.
		return Header{}, fmt.Errorf("%w: %d revisions and %d events cannot fit %d bytes", ErrCorrupt, h.Revisions(), h.Events, h.RawBytes)
	}
	return h, nil
}
