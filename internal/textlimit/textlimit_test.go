package textlimit

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in  string
		max int
	}{
		{"short", 10},
		{strings.Repeat("a", 40000), MaxMessage},
		{strings.Repeat("ж", 3000), MaxNote},
		{strings.Repeat("€", 10), 7},
	} {
		got := Cut(tc.in, tc.max)
		if len(got) > tc.max || !utf8.ValidString(got) {
			t.Errorf("Cut(%d bytes, %d) = %d bytes, valid=%v", len(tc.in), tc.max, len(got), utf8.ValidString(got))
		}
		if len(tc.in) <= tc.max && got != tc.in {
			t.Errorf("Cut changed a string that fits: %q", got)
		}
		if len(tc.in) > tc.max && !strings.HasSuffix(got, ellipsis) {
			t.Errorf("Cut(%d bytes) does not show it was cut", len(tc.in))
		}
	}
}
