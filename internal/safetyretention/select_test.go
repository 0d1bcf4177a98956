package safetyretention

import (
	"reflect"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	cands := []Candidate{
		{"a1", "etcd", at(1)}, {"a2", "etcd", at(2)}, {"a3", "etcd", at(3)}, {"a4", "etcd", at(4)}, {"a5", "etcd", at(5)},
		{"b1", "other", at(1)},
	}
	for name, tc := range map[string]struct {
		protected map[string]bool
		keep      int
		want      []string
	}{
		"newest three per application": {nil, 3, []string{"a1", "a2"}},
		"a restore reads the oldest":   {map[string]bool{"a1": true}, 3, []string{"a2"}},
		"keep one":                     {nil, 1, []string{"a1", "a2", "a3", "a4"}},
	} {
		if got := Select(cands, tc.protected, tc.keep); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Select = %v, want %v", name, got, tc.want)
		}
	}
}
