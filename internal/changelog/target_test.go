package changelog

import (
	"errors"
	"testing"
	"time"
)

// A revision resolves to itself within base..newest; a time to the
// newest revision received at or before it, inside the window only
// while the chain proves nothing else came by then.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	stored, idx, revs := chainOf(t, dir, testBase, 4, 6)
	c, err := Verify(testBase, stored, idx, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// Segment 1 starts a second after segment 0 ends; revisions 7 ms
	// apart.
	last := revs[1][5]
	for _, tc := range []struct {
		name    string
		target  Target
		idx     Index
		want    int64
		wantErr error
	}{
		{"the base", Target{Revision: 100}, idx, 100, nil},
		{"a revision", Target{Revision: 107}, idx, 107, nil},
		{"the newest revision", Target{Revision: 110}, idx, 110, nil},
		{"before the base", Target{Revision: 99}, idx, 0, ErrOutsideWindow},
		{"after the newest", Target{Revision: 111}, idx, 0, ErrOutsideWindow},
		{"a time before the first change", Target{Time: t0.Add(-time.Millisecond)}, idx, 100, nil},
		{"the first change's time", Target{Time: t0}, idx, 101, nil},
		{"between two changes", Target{Time: t0.Add(10 * time.Millisecond)}, idx, 102, nil},
		{"between two segments", Target{Time: revs[0][3].Time.Add(500 * time.Millisecond)}, idx, 104, nil},
		{"inside the second segment", Target{Time: revs[1][2].Time.Add(time.Millisecond)}, idx, 107, nil},
		{"the newest change's time", Target{Time: last.Time}, idx, 110, nil},
		{"after the newest change, unconfirmed", Target{Time: last.Time.Add(time.Millisecond)}, idx, 0, ErrOutsideWindow},
		{"after the newest change, confirmed later", Target{Time: last.Time.Add(time.Second)}, withConfirmed(idx, last.Time.Add(time.Minute)), 110, nil},
		{"after the confirmation", Target{Time: last.Time.Add(2 * time.Minute)}, withConfirmed(idx, last.Time.Add(time.Minute)), 0, ErrOutsideWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Resolve(c, tc.idx, tc.target, DefaultLimits)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Resolve(%s) = %v, want %v", tc.target, err, tc.wantErr)
			}
			if err == nil && p.Revision != tc.want {
				t.Fatalf("Resolve(%s) = revision %d, want %d", tc.target, p.Revision, tc.want)
			}
		})
	}
	// A chain fetched only up to a target's segment cannot prove a later
	// time.
	short := Chain{Base: c.Base, Segments: c.Segments[:1]}
	if _, err := Resolve(short, idx, Target{Time: revs[0][3].Time.Add(500 * time.Millisecond)}, DefaultLimits); !errors.Is(err, ErrOutsideWindow) {
		t.Fatalf("a time after a partial chain: %v", err)
	}
}
