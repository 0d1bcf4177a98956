package restoreoptions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestPointInTimeIsARevisionOrAnRFC3339Time(t *testing.T) {
	at := time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)
	for raw, want := range map[string]struct {
		ok  bool
		rev int64
		at  time.Time
	}{
		`{"pointInTime":"2026-12-06T17:00:00Z"}`:                          {ok: true, at: at},
		`{"pointInTime":"2026-12-06T18:00:00+01:00"}`:                     {ok: true, at: at},
		`{"pointInTime":"2026-12-06T17:00:00.25Z"}`:                       {ok: true, at: at.Add(250 * time.Millisecond)},
		`{"pointInTime":"12345"}`:                                         {ok: true, rev: 12345},
		`{"pointInTime":"12345","dryRun":true}`:                           {ok: true, rev: 12345},
		`{"pointInTime":"0"}`:                                             {},
		`{"pointInTime":"-3"}`:                                            {},
		`{"pointInTime":"99999999999999999999"}`:                          {},
		`{"pointInTime":"2026-12-06 17:00"}`:                              {},
		`{"pointInTime":"2026-12-06T17:00:00"}`:                           {},
		`{"pointInTime":"yesterday"}`:                                     {},
		`{"pointInTime":12345}`:                                           {},
		`{"pointInTime":"2026-12-06T17:00:00.123456789123456789123456Z"}`: {},
		`{"pointInTime":"2026-12-06T17:00:00Z","bumpRevision":false}`:     {},
	} {
		o, err := Parse(&runtime.RawExtension{Raw: []byte(raw)})
		if (err == nil) != want.ok {
			t.Errorf("%s: err %v, want ok=%t", raw, err, want.ok)
			continue
		}
		if !want.ok {
			continue
		}
		p, ok := o.Point()
		if !ok || p.Revision != want.rev || !p.Time.Equal(want.at) {
			t.Errorf("%s: point %+v (%t), want revision %d time %s", raw, p, ok, want.rev, want.at)
		}
	}
	if _, ok := (Options{}).Point(); ok {
		t.Error("no pointInTime is a point")
	}
}
