package changereplay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
)

// A chain that is wrong in any way is refused with its own error, naming
// the segment, before anything is restored or applied: the work
// directory here is a file, which any restore would have failed on.
func TestReplayRefusesABrokenChainFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cli := startEtcd(ctx, t, filepath.Join(t.TempDir(), "live"), "")
	base, b := takeBase(ctx, t, cli)
	if _, err := cli.Put(ctx, "/registry/pods/other", "x"); err != nil {
		t.Fatal(err)
	}
	otherBase, _ := takeBase(ctx, t, cli)
	var groups [][]changelog.Revision
	rev := b.Revision
	for range 4 {
		var g []changelog.Revision
		for range 2 {
			rev++
			g = append(g, changelog.Revision{Revision: rev, Time: time.Now(),
				Events: []changelog.Event{{Type: changelog.Put, Key: []byte(fmt.Sprintf("/registry/pods/p%d", rev)), Value: []byte("v")}}})
		}
		groups = append(groups, g)
	}
	idx, stored := handSegments(t, b, groups)
	flipped := filepath.Join(t.TempDir(), "flipped")
	data, _ := os.ReadFile(stored[1].Path)
	data[len(data)-2] ^= 1
	if err := os.WriteFile(flipped, data, 0o600); err != nil {
		t.Fatal(err)
	}
	corrupted := append([]changelog.Stored(nil), stored...)
	corrupted[1].Path = flipped
	swapped := append([]changelog.Stored(nil), stored...)
	swapped[1], swapped[2] = stored[2], stored[1]
	swapped[1].Seq, swapped[2].Seq = 1, 2
	foreign := idx
	foreign.Base.Revision++

	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		base   string
		idx    changelog.Index
		stored []changelog.Stored
		want   error
		seq    int64
	}{
		{"a corrupted segment", base, idx, corrupted, changelog.ErrChecksum, 1},
		{"two segments swapped", base, idx, swapped, changelog.ErrOutOfOrder, 1},
		{"a segment missing", base, idx, []changelog.Stored{stored[0], stored[2], stored[3]}, changelog.ErrOutOfOrder, 2},
		{"segments reordered", base, idx, []changelog.Stored{stored[0], stored[2], stored[1], stored[3]}, changelog.ErrOutOfOrder, 2},
		{"an index of another chain", base, foreign, stored, changelog.ErrForeignChain, 0},
		{"another base snapshot", otherBase, idx, stored, ErrBaseMismatch, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Replay(ctx, Input{Base: tc.base, Index: tc.idx, Segments: tc.stored, Target: changelog.Target{Revision: rev},
				WorkDir: notADir, Out: filepath.Join(t.TempDir(), "out"), Limits: changelog.DefaultLimits})
			var se *changelog.SegmentError
			if !errors.Is(err, tc.want) || (tc.seq >= 0) != errors.As(err, &se) || (se != nil && se.Seq != tc.seq) {
				t.Fatalf("Replay = %v, want %v naming segment %d", err, tc.want, tc.seq)
			}
			t.Log(err)
		})
	}
}

// A chain whose changes do not fit its base (a deletion of a key the base
// never held makes no revision in etcd) stops the replay at that
// revision: it is never snapshotted as if it had held.
func TestReplayStopsWhereTheChainDoesNotFitItsBase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, cli := startEtcd(ctx, t, filepath.Join(t.TempDir(), "live"), "")
	base, b := takeBase(ctx, t, cli)
	idx, stored := handChain(t, b,
		changelog.Revision{Revision: b.Revision + 1, Time: time.Now(), Events: []changelog.Event{{Type: changelog.Put, Key: []byte("/registry/a"), Value: []byte("1")}}},
		changelog.Revision{Revision: b.Revision + 2, Time: time.Now(), Events: []changelog.Event{{Type: changelog.Delete, Key: []byte("/registry/never")}}})
	out := filepath.Join(t.TempDir(), "out")
	_, err := Replay(ctx, Input{Base: base, Index: idx, Segments: stored, Target: changelog.Target{Revision: b.Revision + 2},
		WorkDir: t.TempDir(), Out: out, Limits: changelog.DefaultLimits})
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("Replay = %v, want ErrDiverged", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a diverged replay left %s: %v", out, err)
	}
}
