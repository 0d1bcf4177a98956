package changelog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// An index reads back as written, and anything that is not one whole,
// self-consistent index is refused.
func TestIndexParse(t *testing.T) {
	dir := t.TempDir()
	_, idx, _ := chainOf(t, dir, testBase, 2, 3)
	confirmed := idx.Head.ToTime.Add(time.Minute)
	idx.ConfirmedAt = &confirmed
	got, err := ParseIndex(idx.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Marshal()) != string(idx.Marshal()) {
		t.Fatalf("read back %s\nwrote %s", got.Marshal(), idx.Marshal())
	}
	if _, err := ParseIndex(NewIndex(testBase, t0).Marshal()); err != nil {
		t.Fatalf("an index without segments: %v", err)
	}
	good := string(idx.Marshal())
	early := idx.Head.FromTime.Add(-time.Second)
	for _, tc := range []struct {
		name string
		b    string
		want error
	}{
		{"an unknown field", strings.Replace(good, `"version":1`, `"version":1,"extra":true`, 1), ErrCorrupt},
		{"two indexes", good + good, ErrCorrupt},
		{"another version", strings.Replace(good, `"version":1`, `"version":2`, 1), ErrCorrupt},
		{"segments and head disagree", strings.Replace(good, `"segments":2`, `"segments":3`, 1), ErrCorrupt},
		{"newest is not the head", strings.Replace(good, `"newest":{"revision":105`, `"newest":{"revision":104`, 1), ErrCorrupt},
		{"a bad base sha256", strings.Replace(good, testBase.SHA256, "00", 1), ErrCorrupt},
		{"confirmed before the head", string(withConfirmed(idx, early).Marshal()), ErrCorrupt},
		{"too large", good + strings.Repeat(" ", MaxIndexBytes), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseIndex([]byte(tc.b)); !errors.Is(err, tc.want) {
				t.Fatalf("ParseIndex = %v, want %v", err, tc.want)
			}
		})
	}
}

func withConfirmed(idx Index, at time.Time) Index {
	idx.ConfirmedAt = &at
	return idx
}
