package planpolicy

import (
	"fmt"
	"strconv"
	"time"
)

// reader reads annotations and collects what did not parse.
type reader struct {
	annotations map[string]string
	problems    []Problem
	notes       []string
}

func (r *reader) problem(annotation, value, want string) {
	r.problems = append(r.problems, Problem{Annotation: annotation, Value: value, Want: want})
}

func (r *reader) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// int reads a decimal integer in [lo, hi]: set is false when the
// annotation is absent, ok false when it does not parse (and a problem is
// recorded). Only plain digits are accepted: no sign, space or exponent.
func (r *reader) int(annotation string, lo, hi int64, want string) (n int64, set, ok bool) {
	v, present := r.annotations[annotation]
	if !present {
		return 0, false, true
	}
	if !digits(v) {
		r.problem(annotation, v, want)
		return 0, true, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.problem(annotation, v, want)
		return 0, true, false
	}
	return n, true, true
}

// duration reads a positive Go duration (720h, 90m).
func (r *reader) duration(annotation string) (d time.Duration, set, ok bool) {
	v, present := r.annotations[annotation]
	if !present {
		return 0, false, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.problem(annotation, v, "a positive duration such as 720h")
		return 0, true, false
	}
	return d, true, true
}

func digits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
