package changelog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
)

func testStore(t *testing.T) Store {
	t.Helper()
	creds := s3server.Credentials{AccessKeyID: "ak", SecretAccessKey: "sk-0123456789"}
	srv, err := s3server.Start(t.TempDir(), creds, "bkt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	policy, err := endpointpolicy.Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	return Store{
		S3:     s3object.Store{Policy: policy, AllowHTTP: true},
		Creds:  s3object.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: srv.URL, Bucket: "bkt", ForcePathStyle: true},
		Chain:  ChainPrefix("tenant-a/etcd", testBase.Revision),
		Limits: DefaultLimits,
	}
}

// upload stores a chain made by chainOf as the capture would: each
// segment under its key with its sha256 beside it, then the index.
func upload(ctx context.Context, t *testing.T, s Store, stored []Stored, idx Index) []string {
	t.Helper()
	var keys []string
	for _, st := range stored {
		b, err := os.ReadFile(st.Path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHeader(b, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		key, err := s.PutSegment(ctx, Segment{Header: h, Data: b, SHA256: mustSum(t, st.RecordedSHA256)})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	idx.Head.Key = keys[len(keys)-1]
	if err := s.PutIndex(ctx, idx); err != nil {
		t.Fatal(err)
	}
	return keys
}

func mustSum(t *testing.T, s string) [32]byte {
	t.Helper()
	b, err := parseSum(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Against a real S3 server: the chain is found from its index alone,
// fetched only as far as the target needs, and a segment missing,
// corrupted or swapped in the bucket stops the fetch with its error.
func TestFetchAgainstS3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := testStore(t)
	if _, err := s.ReadIndex(ctx); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("ReadIndex of a new chain = %v", err)
	}
	stored, idx, _ := chainOf(t, t.TempDir(), testBase, 3, 3, 3, 3)
	keys := upload(ctx, t, s, stored, idx)
	idx, err := s.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c, err := s.Fetch(ctx, idx, Target{Revision: 105}.Want, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Segments) != 2 || c.Segments[1].Header.To != 106 {
		t.Fatalf("fetched %d segments for revision 105, want 2 (to 106)", len(c.Segments))
	}
	if c, err = s.Fetch(ctx, idx, func(Header) bool { return true }, t.TempDir()); err != nil || len(c.Segments) != 4 {
		t.Fatalf("fetch all: %d segments, %v", len(c.Segments), err)
	}

	loc := func(key string) s3object.Location { l := s.Bucket; l.Key = key; return l }
	put := func(key string, b []byte, sum string) {
		if err := s.S3.Put(ctx, loc(key), s.Creds, bytes.NewReader(b), int64(len(b)), map[string]string{MetaSHA256: sum}); err != nil {
			t.Fatal(err)
		}
	}
	seg2, _ := os.ReadFile(stored[2].Path)
	seg1, _ := os.ReadFile(stored[1].Path)
	corrupt := append([]byte(nil), seg2...)
	corrupt[HeaderSize+2] ^= 1
	for _, tc := range []struct {
		name   string
		break_ func()
		want   error
		seq    int64
	}{
		{"corrupted", func() { put(keys[2], corrupt, stored[2].RecordedSHA256) }, ErrChecksum, 2},
		{"swapped", func() { put(keys[1], seg2, stored[2].RecordedSHA256); put(keys[2], seg1, stored[1].RecordedSHA256) }, ErrOutOfOrder, 1},
		{"missing", func() {
			if err := s.S3.Delete(ctx, loc(keys[2]), s.Creds); err != nil {
				t.Fatal(err)
			}
		}, ErrMissing, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.break_()
			defer func() { put(keys[1], seg1, stored[1].RecordedSHA256); put(keys[2], seg2, stored[2].RecordedSHA256) }()
			_, err := s.Fetch(ctx, idx, func(Header) bool { return true }, t.TempDir())
			var se *SegmentError
			if !errors.Is(err, tc.want) || !errors.As(err, &se) || se.Seq != tc.seq || se.Key != keys[tc.seq] {
				t.Fatalf("Fetch = %v, want %v naming %s", err, tc.want, keys[tc.seq])
			}
		})
	}
}
