// Package textlimit cuts the free text the driver writes into statuses and
// Events to what the API server accepts. Messages quote user-controlled
// values (a Backup's fields, object names); without a cut, one oversized
// value makes the whole status write fail and the object stays silent.
package textlimit

import (
	"strings"
	"unicode/utf8"
)

const (
	// MaxMessage bounds a condition or status message. The CRD limit of a
	// condition message is 32768; staying well below it leaves room for the
	// rest of the status in the same write.
	MaxMessage = 4096
	// MaxNote bounds an Event's note (events.k8s.io allows 1 KiB).
	MaxNote = 1024
	// MaxQuoted bounds one user-controlled value quoted inside a message.
	MaxQuoted = 256
)

const ellipsis = "…"

// Message cuts s to MaxMessage bytes.
func Message(s string) string { return Cut(s, MaxMessage) }

// Note cuts s to MaxNote bytes.
func Note(s string) string { return Cut(s, MaxNote) }

// Value cuts one user-controlled value before it is quoted in a message.
func Value(s string) string { return Cut(s, MaxQuoted) }

// Cut returns s when it has at most max bytes, otherwise its longest prefix
// that, with a trailing ellipsis, has at most max bytes and ends on a rune
// boundary.
func Cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(ellipsis)
	if n <= 0 {
		return ellipsis[:min(max, len(ellipsis))]
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "") + ellipsis
}
