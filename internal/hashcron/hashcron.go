// Package hashcron spreads cron schedules over time: it rewrites
// Jenkins-style H terms of a five-field cron expression into concrete values
// derived from a hash of a key (a Plan's namespace/name), so that a thousand
// Plans written as "H 3 * * *" start across the hour instead of in the same
// second, while each one keeps the same minute on every restart and on
// every replica.
//
// Supported, in any of the five fields and inside comma lists:
//
//	H          one value in the field's range
//	H(a-b)     one value in a..b (inclusive, within the field's bounds)
//	H/n        every n-th value of the field's range, from a hashed offset below n
//	H(a-b)/n   every n-th value of a..b, from a hashed offset below n
//
// The field's range for H and H/n is minute 0-59, hour 0-23, day of month
// 1-28 (a hashed day exists in every month), month 1-12, day of week 0-6.
// An explicit H(a-b) may use the full bounds (day of month up to 31).
// Numbers only: names (MON, JAN) and "?" are not allowed inside H terms.
// Descriptors (@daily, @every 1h) are not hashed. Each H term of an
// expression draws its own value, so "H H * * *" picks a minute and an hour
// independently.
package hashcron

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error Resolve returns.
var ErrInvalid = errors.New("invalid H term")

// field is one position of a five-field expression.
type field struct {
	name string
	// lo and hi bound an explicit H(a-b).
	lo, hi int
	// hashHi is the top of the range a bare H or H/n draws from (lo..hashHi).
	hashHi int
}

var fields = [5]field{
	{"minute", 0, 59, 59},
	{"hour", 0, 23, 23},
	{"day of month", 1, 31, 28},
	{"month", 1, 12, 12},
	{"day of week", 0, 6, 6},
}

// tzPrefixes introduce the time zone robfig/cron accepts before the fields.
var tzPrefixes = []string{"CRON_TZ=", "TZ="}

// Has reports whether expr uses an H term.
func Has(expr string) bool {
	for _, f := range strings.Fields(expr) {
		for _, term := range strings.Split(f, ",") {
			if strings.HasPrefix(term, "H") {
				return true
			}
		}
	}
	return false
}

// Resolve returns expr with every H term replaced by concrete values for
// key: the same expression and key always give the same result. An
// expression without H is returned unchanged (the cron parser judges it).
func Resolve(expr, key string) (string, error) {
	if !Has(expr) {
		return expr, nil
	}
	parts := strings.Fields(expr)
	var prefix []string
	if len(parts) > 0 && hasTZPrefix(parts[0]) {
		prefix, parts = parts[:1], parts[1:]
	}
	if len(parts) != len(fields) {
		return "", fmt.Errorf("%w: H needs the five-field form (minute hour day-of-month month day-of-week), got %d fields", ErrInvalid, len(parts))
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		terms := strings.Split(p, ",")
		for j, term := range terms {
			if !strings.HasPrefix(term, "H") {
				continue
			}
			v, err := resolveTerm(term, fields[i], draw(key, i, j))
			if err != nil {
				return "", err
			}
			terms[j] = v
		}
		out[i] = strings.Join(terms, ",")
	}
	return strings.Join(append(prefix, out...), " "), nil
}

func hasTZPrefix(s string) bool {
	for _, p := range tzPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// draw is the hash value of the j-th term of field i for key. SHA-256 is
// fixed for all time and every platform, so the value never changes with
// a Go release or a restart.
func draw(key string, i, j int) uint64 {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", key, i, j)))
	return binary.BigEndian.Uint64(sum[:8])
}

// resolveTerm turns one H term of f into a value or a stepped range.
func resolveTerm(term string, f field, h uint64) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %q in the %s field: %s (write H, H(a-b), H/n or H(a-b)/n)", ErrInvalid, term, f.name, why)
	}
	rest := term[1:]
	lo, hi := f.lo, f.hashHi
	if strings.HasPrefix(rest, "(") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return "", bad("the range has no closing bracket")
		}
		a, b, ok := strings.Cut(rest[1:end], "-")
		if !ok {
			return "", bad("the range must be a-b")
		}
		var err error
		if lo, err = number(a); err != nil {
			return "", bad(err.Error())
		}
		if hi, err = number(b); err != nil {
			return "", bad(err.Error())
		}
		if lo < f.lo || hi > f.hi || lo > hi {
			return "", bad(fmt.Sprintf("the range must lie within %d-%d and start before it ends", f.lo, f.hi))
		}
		rest = rest[end+1:]
	}
	size := hi - lo + 1
	step := size
	switch {
	case rest == "":
	case strings.HasPrefix(rest, "/"):
		n, err := number(rest[1:])
		if err != nil {
			return "", bad(err.Error())
		}
		if n < 1 || n > size {
			return "", bad(fmt.Sprintf("the step must be between 1 and %d", size))
		}
		step = n
	default:
		return "", bad(fmt.Sprintf("unexpected %q", rest))
	}
	start := lo + int(h%uint64(step))
	if start+step > hi {
		// One value only (a bare H, or a step as wide as the range).
		return strconv.Itoa(start), nil
	}
	return fmt.Sprintf("%d-%d/%d", start, hi, step), nil
}

// number reads a non-negative decimal of at most two digits (every cron
// field fits).
func number(s string) (int, error) {
	if s == "" || len(s) > 2 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number of one or two digits", s)
	}
	return strconv.Atoi(s)
}
