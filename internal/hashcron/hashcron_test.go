package hashcron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/robfig/cron/v3"
)

// minuteOf resolves "H 3 * * *" for key and returns the minute chosen.
func minuteOf(t *testing.T, key string) int {
	t.Helper()
	got, err := Resolve("H 3 * * *", key)
	if err != nil {
		t.Fatal(err)
	}
	m, err := strconv.Atoi(strings.Fields(got)[0])
	if err != nil || !strings.HasSuffix(got, " 3 * * *") {
		t.Fatalf("Resolve(%q) = %q, want <minute> 3 * * *", key, got)
	}
	return m
}

// A thousand Plans over "H 3 * * *" land on most minutes of the hour, none
// crowded: the point of H.
func TestResolveSpreadsPlansOverTheHour(t *testing.T) {
	perMinute := map[int]int{}
	for i := range 1000 {
		m := minuteOf(t, fmt.Sprintf("tenant-%04d/nightly", i))
		if m < 0 || m > 59 {
			t.Fatalf("minute %d out of 0-59", m)
		}
		perMinute[m]++
	}
	busiest := 0
	for _, n := range perMinute {
		busiest = max(busiest, n)
	}
	// Uniform draws put ~16.7 Plans in each minute; 1,000 balls in 60 bins
	// leave a bin empty or above 35 with negligible probability.
	if len(perMinute) < 58 || busiest > 35 {
		t.Errorf("1,000 Plans hit %d distinct minutes, the busiest %d times; want at least 58 and at most 35", len(perMinute), busiest)
	}
}

// The same key gives the same minute every time (a restart, another
// replica); different Plans, including the same name in another namespace,
// mostly differ.
func TestResolveIsStablePerPlanAndDiffersAcrossPlans(t *testing.T) {
	a := minuteOf(t, "tenant-a/nightly")
	for range 3 {
		if again := minuteOf(t, "tenant-a/nightly"); again != a {
			t.Fatalf("tenant-a/nightly: minute %d, then %d", a, again)
		}
	}
	// Pinned: the hash is part of the contract (a changed hash would move
	// every Plan's run after an upgrade).
	if got, _ := Resolve("H 3 * * *", "tenant-a/nightly"); got != fmt.Sprintf("%d 3 * * *", a) || a != pinnedMinute {
		t.Errorf("tenant-a/nightly runs at minute %d, pinned %d", a, pinnedMinute)
	}
	same := 0
	for i := range 100 {
		if minuteOf(t, fmt.Sprintf("tenant-%d/nightly", i)) == minuteOf(t, fmt.Sprintf("tenant-%d/weekly", i)) {
			same++
		}
	}
	// Two independent draws agree with probability 1/60.
	if same > 10 {
		t.Errorf("%d of 100 pairs of Plans share their minute", same)
	}
}

// pinnedMinute is the minute "H 3 * * *" resolves to for tenant-a/nightly.
const pinnedMinute = 31

func TestResolveStaysInRange(t *testing.T) {
	for _, tc := range []struct {
		expr string
		// ok says whether a resolved expression matches what the term allows.
		ok func(fields []string) bool
	}{
		{"H(0-29) 3 * * *", func(f []string) bool { return inRange(f[0], 0, 29) }},
		{"H(30-59) H(1-5) * * *", func(f []string) bool { return inRange(f[0], 30, 59) && inRange(f[1], 1, 5) }},
		{"0 0 H * *", func(f []string) bool { return inRange(f[2], 1, 28) }},
		{"0 0 H(29-31) * *", func(f []string) bool { return inRange(f[2], 29, 31) }},
		{"0 0 * H H", func(f []string) bool { return inRange(f[3], 1, 12) && inRange(f[4], 0, 6) }},
		{"H/15 * * * *", func(f []string) bool { return steps(f[0], 0, 14, 59, 15) }},
		{"H(0-29)/10 * * * *", func(f []string) bool { return steps(f[0], 0, 9, 29, 10) }},
		{"0 H/6 * * *", func(f []string) bool { return steps(f[1], 0, 5, 23, 6) }},
		{"H(0-29),H(30-59) * * * *", func(f []string) bool {
			a, b, ok := strings.Cut(f[0], ",")
			return ok && inRange(a, 0, 29) && inRange(b, 30, 59)
		}},
		// Step as wide as the range: one value.
		{"H/60 * * * *", func(f []string) bool { return inRange(f[0], 0, 59) }},
		{"0 3 * * THU", func(f []string) bool { return f[4] == "THU" }},
		{"CRON_TZ=Europe/Berlin H 3 * * *", func(f []string) bool { return f[0] == "CRON_TZ=Europe/Berlin" && inRange(f[1], 0, 59) }},
	} {
		for i := range 200 {
			key := fmt.Sprintf("ns-%d/plan", i)
			got, err := Resolve(tc.expr, key)
			if err != nil {
				t.Fatalf("Resolve(%q, %q): %v", tc.expr, key, err)
			}
			if !tc.ok(strings.Fields(got)) {
				t.Fatalf("Resolve(%q, %q) = %q: out of range", tc.expr, key, got)
			}
			if _, err := cron.ParseStandard(got); err != nil {
				t.Fatalf("Resolve(%q, %q) = %q does not parse: %v", tc.expr, key, got, err)
			}
		}
	}
}

func inRange(s string, lo, hi int) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= lo && n <= hi
}

// steps reports whether s is "start-hi/step" or a lone start, with start
// in lo..maxStart.
func steps(s string, lo, maxStart, hi, step int) bool {
	rng, st, ok := strings.Cut(s, "/")
	if !ok {
		return false
	}
	a, b, _ := strings.Cut(rng, "-")
	return inRange(a, lo, maxStart) && b == strconv.Itoa(hi) && st == strconv.Itoa(step)
}

func TestResolveLeavesExpressionsWithoutHAlone(t *testing.T) {
	for _, expr := range []string{"0 3 * * *", "@daily", "@every 1h", "*/5  *  * * MON-FRI", "0 3 * * THU", "not cron"} {
		if got, err := Resolve(expr, "ns/p"); err != nil || got != expr {
			t.Errorf("Resolve(%q) = %q, %v; want it unchanged", expr, got, err)
		}
	}
}

func TestResolveRejectsWhatItDoesNotSupport(t *testing.T) {
	for _, expr := range []string{
		"H 3 * *",              // four fields
		"@daily H",             // a descriptor
		"H(0-60) 3 * * *",      // beyond the minute's bounds
		"0 H(5-3) * * *",       // backwards
		"H(0-29 3 * * *",       // no closing bracket
		"H(0) 3 * * *",         // not a range
		"H/0 * * * *",          // zero step
		"H/61 * * * *",         // step wider than the range
		"H(0-9)/11 * * * *",    // step wider than the explicit range
		"H-5 * * * *",          // Jenkins has no H ranges of this form
		"Hx 3 * * *",           // trailing garbage
		"0 0 * * H(MON-FRI)",   // names
		"0 0 * * H(0-7)",       // day of week 7
		"H(a-b) 3 * * *",       // not numbers
		"H(-1-5) 3 * * *",      // negative
		"H/+5 * * * *",         // signed
		"0 0 H(0-10) * *",      // day of month 0
		"H(00-100) 3 * * *",    // three digits
		"H(0-29)/x 3 * * *",    // bad step
		"H/15/2 3 * * *",       // two steps
		"0 0 * H(0-12) *",      // month 0
		"H(0-29)(1-2) 3 * * *", // two ranges
	} {
		if got, err := Resolve(expr, "ns/p"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrInvalid", expr, got, err)
		}
	}
}
