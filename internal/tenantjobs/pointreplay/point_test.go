package pointreplay

import (
	"flag"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
)

// The flags carry the point whole, by revision and by time; none given is
// no point; a half-given point is refused.
func TestPointFlagsRoundTrip(t *testing.T) {
	b := changelog.Base{Revision: 42, SHA256: pointchain.SHA256([]byte("base"))}
	chain := changelog.ChainPrefix("tenant-a/etcd", 42)
	for _, want := range []Point{
		{},
		{Chain: chain, Base: b, Target: changelog.Target{Revision: 50}},
		{Chain: chain, Base: b, Target: changelog.Target{Time: time.Date(2026, 12, 6, 17, 0, 0, 123456789, time.UTC)}},
	} {
		var got Point
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		done := Bind(fs, &got)
		if err := fs.Parse(want.Args()); err != nil {
			t.Fatal(err)
		}
		if err := done(); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Bind(%q) = %+v, %v; want %+v", want.Args(), got, err, want)
		}
	}
	for _, args := range [][]string{
		{"--chain=" + chain},
		{"--chain=" + chain, "--chain-base-revision=42", "--chain-base-sha256=" + b.SHA256},
		{"--chain=" + chain, "--chain-base-revision=42", "--chain-base-sha256=" + b.SHA256, "--to-revision=50", "--to-time=2026-12-06T17:00:00Z"},
		{"--chain=" + changelog.ChainPrefix("tenant-a/etcd", 41), "--chain-base-revision=42", "--chain-base-sha256=" + b.SHA256, "--to-revision=50"},
		{"--chain=" + chain, "--chain-base-revision=42", "--chain-base-sha256=" + b.SHA256, "--to-revision=41"},
		{"--chain=" + chain, "--chain-base-revision=42", "--chain-base-sha256=" + b.SHA256, "--to-time=yesterday"},
	} {
		var p Point
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		done := Bind(fs, &p)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := done()
		if reason, refused := Refusal(err); reason != ReasonInvalidPoint || !refused {
			t.Fatalf("Bind(%q) = %v, want a refused invalid point", args, err)
		}
	}
}
