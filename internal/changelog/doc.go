// Package changelog is the format of a tenant's captured etcd changes: the
// segments the capture step (internal/tenantjobs/capture/step) writes and
// replay (internal/changereplay) applies on top of a base Backup, how they
// chain, where they live in S3 and the index that finds them.
//
// A chain follows one base Backup at revision R. Segment 0 holds the
// revisions from R+1 on; segment n+1 starts right after segment n ends.
// Every revision is whole: all the events of one etcd transaction, in
// their order, in one record. A segment is a fixed header followed by a
// raw DEFLATE stream of records:
//
//	header   magic "EBDCHG\x00\x01", seq, base revision, from, to,
//	         from time, to time (Unix milliseconds), events, raw body
//	         bytes, etcd cluster ID, sha256 of the previous segment
//	         (for segment 0: of the base Backup's snapshot)
//	record   revision delta (zigzag varint, always 1), receive-time delta
//	         (uvarint ms), items, 0x00
//	item     0x01 put (key, value), 0x02 put with lease (key, value,
//	         lease ID), 0x03 delete (key), 0x04 lease note (lease ID, TTL)
//	key      bytes shared with the segment's previous key (uvarint),
//	         suffix length (uvarint), suffix
//
// The time of a revision is when the capture had it whole, read from the
// capture's clock (never earlier than the commit; see docs/point-in-time.md
// for how close). Each segment's sha256 is recorded beside it, as the
// object's metadata, and in the next segment's header; the index holds
// the newest one. A reader walks a chain by sequence number from keys it
// can compute (SegmentKey), never by listing a bucket.
//
// Reading is streaming and bounded (Limits): a hostile or corrupt segment
// is refused with a typed error before the reader allocates more than one
// revision's bound. Verify checks a fetched chain whole before anything
// is applied; each way a chain can be wrong is a distinct error
// (ErrChecksum, ErrOutOfOrder, ErrChainBroken, ErrGap, ErrOverlap,
// ErrMissing, ErrForeignChain, ErrCorrupt, ErrTooLarge), wrapped in a
// *SegmentError that names the segment.
package changelog
