package changelog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var testBase = Base{Revision: 100, SHA256: hex.EncodeToString(make([]byte, 32))}

// chainOf writes segments of the given sizes (in revisions) after base,
// each to a file of dir, and returns them as a store would, with the
// index a capture would have written.
func chainOf(t *testing.T, dir string, base Base, sizes ...int) ([]Stored, Index, [][]Revision) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	prev, _ := parseSum(base.SHA256)
	from, at := base.Revision+1, t0
	idx := NewIndex(base, t0)
	var stored []Stored
	var revs [][]Revision
	for seq, n := range sizes {
		rs := revisions(rng, from, n, at)
		w := NewWriter(Start{Seq: int64(seq), BaseRevision: base.Revision, From: from, ClusterID: 0xc1, Prev: prev, NotBefore: at}, DefaultLimits)
		write(t, w, rs)
		seg, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, SegmentKey("c", int64(seq), from)[2:])
		if err := os.WriteFile(path, seg.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, Stored{Seq: int64(seq), Key: SegmentKey("c", int64(seq), from), Path: path, RecordedSHA256: hex.EncodeToString(seg.SHA256[:])})
		idx = idx.WithSegment(seg, stored[seq].Key, t0)
		revs = append(revs, rs)
		prev, from, at = seg.SHA256, seg.Header.To+1, seg.Header.ToTime.Add(time.Second)
	}
	return stored, idx, revs
}

// Verify accepts an intact chain and refuses each way one can be wrong
// with its own error, naming the segment.
func TestVerifyChain(t *testing.T) {
	dir := t.TempDir()
	stored, idx, _ := chainOf(t, dir, testBase, 5, 7, 3, 4)
	if c, err := Verify(testBase, stored, idx, DefaultLimits); err != nil || len(c.Segments) != 4 {
		t.Fatalf("intact chain: %v", err)
	}
	// Look-alikes of segment 2 made as a writer would, but out of place.
	rewrite := func(name string, s Start, from int64) Stored {
		rng := rand.New(rand.NewPCG(5, 6))
		w := NewWriter(s, DefaultLimits)
		write(t, w, revisions(rng, from, 3, t0.Add(time.Hour)))
		seg, err := w.Finish()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, seg.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		return Stored{Seq: 2, Key: "look-alike " + name, Path: path, RecordedSHA256: hex.EncodeToString(seg.SHA256[:])}
	}
	h1 := mustHeader(t, stored[1])
	prev1, _ := parseSum(stored[1].RecordedSHA256)
	next := Start{Seq: 2, BaseRevision: testBase.Revision, From: h1.To + 1, ClusterID: 0xc1, Prev: prev1}

	flipped := filepath.Join(dir, "flipped")
	b, _ := os.ReadFile(stored[2].Path)
	b[len(b)-3] ^= 0x40
	if err := os.WriteFile(flipped, b, 0o600); err != nil {
		t.Fatal(err)
	}
	withFlipped := replace(stored, 2, Stored{Seq: 2, Key: stored[2].Key, Path: flipped, RecordedSHA256: stored[2].RecordedSHA256})
	withFlippedRecomputed := replace(stored, 2, Stored{Seq: 2, Key: stored[2].Key, Path: flipped, RecordedSHA256: sumOf(b)})

	wrongPrev, gapStart, overlapStart, foreign, otherCluster := next, next, next, next, next
	wrongPrev.Prev = [32]byte{1}
	gapStart.From++
	overlapStart.From--
	foreign.BaseRevision = 99
	otherCluster.ClusterID = 0xc2
	for _, tc := range []struct {
		name   string
		stored []Stored
		idx    Index
		want   error
		seq    int64
	}{
		{"a flipped byte", withFlipped, idx, ErrChecksum, 2},
		{"a flipped byte with its sha256 recomputed", withFlippedRecomputed, idx, ErrCorrupt, 2},
		{"a segment replaced whole, its sha256 recomputed", replace(stored, 2, rewrite("replaced", next, next.From)), idx, ErrChainBroken, 3},
		{"no sha256 recorded", replace(stored, 1, Stored{Seq: 1, Key: stored[1].Key, Path: stored[1].Path}), idx, ErrChecksum, 1},
		{"segments 1 and 2 swapped", []Stored{stored[0], stored[2], stored[1], stored[3]}, idx, ErrOutOfOrder, 2},
		{"segment 1 left out", []Stored{stored[0], stored[2], stored[3]}, idx, ErrOutOfOrder, 2},
		{"a segment carrying another previous sha256", replace(stored, 2, rewrite("prev", wrongPrev, next.From)), idx, ErrChainBroken, 2},
		{"a segment starting after a gap", replace(stored, 2, rewrite("gap", gapStart, gapStart.From)), idx, ErrGap, 2},
		{"a segment overlapping the previous one", replace(stored, 2, rewrite("overlap", overlapStart, overlapStart.From)), idx, ErrOverlap, 2},
		{"a segment of another base's chain", replace(stored, 2, rewrite("foreign", foreign, next.From)), idx, ErrForeignChain, 2},
		{"a segment of another etcd cluster", replace(stored, 2, rewrite("cluster", otherCluster, next.From)), idx, ErrForeignChain, 2},
		{"an index naming another newest segment", stored, withHeadSum(idx, sumOf([]byte("x"))), ErrChainBroken, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(testBase, tc.stored, tc.idx, DefaultLimits)
			var se *SegmentError
			if !errors.Is(err, tc.want) || !errors.As(err, &se) || se.Seq != tc.seq {
				t.Fatalf("Verify = %v, want %v naming segment %d", err, tc.want, tc.seq)
			}
			t.Log(err)
		})
	}
	if _, err := Verify(Base{Revision: 100, SHA256: sumOf([]byte("another base"))}, stored, idx, DefaultLimits); !errors.Is(err, ErrChainBroken) {
		t.Fatalf("the chain against another base snapshot: %v", err)
	}
}

func mustHeader(t *testing.T, s Stored) Header {
	t.Helper()
	b, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func replace(s []Stored, i int, with Stored) []Stored {
	out := append([]Stored(nil), s...)
	out[i] = with
	return out
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func withHeadSum(idx Index, sum string) Index {
	h := *idx.Head
	h.SHA256 = sum
	idx.Head = &h
	return idx
}
