package changelog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// MetaSHA256 is the user metadata key (x-amz-meta-sha256, as S3 returns
// it) that records a segment's sha256 beside its bytes.
const MetaSHA256 = "Sha256"

// ErrNoIndex: the chain has no index yet (no segment was ever made
// durable).
var ErrNoIndex = errors.New("change chain has no index")

// Store is one chain in S3: its segments and its index, reached with
// the tenant's own key through the endpoint policy.
type Store struct {
	S3    s3object.Store
	Creds s3object.Credentials
	// Bucket is the endpoint, bucket, region and addressing; its Key is
	// ignored.
	Bucket s3object.Location
	// Chain is the chain's prefix (ChainPrefix).
	Chain  string
	Limits Limits
}

func (s Store) at(key string) s3object.Location {
	loc := s.Bucket
	loc.Key = key
	return loc
}

// PutSegment stores seg with its sha256 beside it and returns its key.
func (s Store) PutSegment(ctx context.Context, seg Segment) (string, error) {
	key := SegmentKey(s.Chain, seg.Header.Seq, seg.Header.From)
	meta := map[string]string{MetaSHA256: fmt.Sprintf("%x", seg.SHA256)}
	if err := s.S3.Put(ctx, s.at(key), s.Creds, bytes.NewReader(seg.Data), int64(len(seg.Data)), meta); err != nil {
		return "", fmt.Errorf("store segment %d: %w", seg.Header.Seq, err)
	}
	return key, nil
}

// PutIndex replaces the chain's index.
func (s Store) PutIndex(ctx context.Context, idx Index) error {
	b := idx.Marshal()
	if err := s.S3.Put(ctx, s.at(IndexKey(s.Chain)), s.Creds, bytes.NewReader(b), int64(len(b)), nil); err != nil {
		return fmt.Errorf("store the chain's index: %w", err)
	}
	return nil
}

// ReadIndex reads the chain's index: ErrNoIndex when there is none,
// ErrCorrupt or ErrTooLarge when it is not one.
func (s Store) ReadIndex(ctx context.Context) (Index, error) {
	r, info, err := s.S3.OpenInfo(ctx, s.at(IndexKey(s.Chain)), s.Creds)
	if errors.Is(err, s3object.ErrNotFound) {
		return Index{}, fmt.Errorf("%w: %s", ErrNoIndex, IndexKey(s.Chain))
	}
	if err != nil {
		return Index{}, err
	}
	defer r.Close()
	if info.Size > MaxIndexBytes {
		return Index{}, fmt.Errorf("%w: index of %d bytes, at most %d", ErrTooLarge, info.Size, MaxIndexBytes)
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxIndexBytes+1))
	if err != nil {
		return Index{}, err
	}
	return ParseIndex(b)
}

// Fetch downloads the chain idx names into dir, from segment 0 on, and
// verifies each as it arrives (Verifier): the key of the next segment is
// computed from the last verified one, so a segment out of place, broken
// or missing stops the walk with its own error. want says, from a
// verified segment's header, whether the segments after it are needed;
// the walk also ends at the index's newest segment. The chain returned
// is verified and checked against idx.
func (s Store) Fetch(ctx context.Context, idx Index, want func(Header) bool, dir string) (Chain, error) {
	v, err := NewVerifier(idx.Base, s.Limits)
	if err != nil {
		return Chain{}, err
	}
	for {
		seq, from := v.Next()
		if seq >= idx.Segments {
			break
		}
		st, err := s.download(ctx, seq, from, dir)
		if err != nil {
			return Chain{}, &SegmentError{Seq: seq, Key: SegmentKey(s.Chain, seq, from), Err: err}
		}
		vs, err := v.Add(st)
		if err != nil {
			return Chain{}, err
		}
		if !want(vs.Header) {
			break
		}
	}
	if err := v.CheckIndex(idx); err != nil {
		return Chain{}, err
	}
	return v.Chain(), nil
}

// download copies one segment to dir, refusing one above the bounds
// before reading it.
func (s Store) download(ctx context.Context, seq, from int64, dir string) (Stored, error) {
	key := SegmentKey(s.Chain, seq, from)
	r, info, err := s.S3.OpenInfo(ctx, s.at(key), s.Creds)
	if errors.Is(err, s3object.ErrNotFound) {
		return Stored{}, fmt.Errorf("%w: %v", ErrMissing, err)
	}
	if err != nil {
		return Stored{}, err
	}
	defer r.Close()
	if max := s.Limits.MaxStoredBytes(); info.Size > max {
		return Stored{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, info.Size, max)
	}
	path := filepath.Join(dir, strconv.FormatInt(seq, 10)+".seg")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return Stored{}, err
	}
	n, err := io.Copy(f, io.LimitReader(r, info.Size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Stored{}, err
	}
	if n != info.Size {
		return Stored{}, fmt.Errorf("%w: read %d bytes of %d", ErrCorrupt, n, info.Size)
	}
	return Stored{Seq: seq, Key: key, Path: path, RecordedSHA256: info.Metadata[MetaSHA256]}, nil
}
