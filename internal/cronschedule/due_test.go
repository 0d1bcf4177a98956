package cronschedule

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	clocktesting "k8s.io/utils/clock/testing"
)

// deadline is the default starting deadline of a Plan.
const deadline = 300 * time.Second

// The controller was down for three hours: of the 18 ten-minute runs missed,
// only the newest (still inside the starting deadline) starts, and the other
// 17 are reported skipped.
func TestDueRunsAfterThreeHoursDown(t *testing.T) {
	s := mustParse(t, "*/10 * * * *", "")
	last := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(last)
	clk.Step(3*time.Hour + 2*time.Minute)

	r := DueRuns(s, last, clk.Now(), deadline)
	if want := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC); !r.Due.Equal(want) {
		t.Fatalf("due = %s, want %s", r.Due, want)
	}
	if r.Missed != 17 || r.Superseded != 0 || r.Truncated {
		t.Fatalf("missed = %d superseded = %d truncated = %v, want 17, 0, false", r.Missed, r.Superseded, r.Truncated)
	}
	if want := time.Date(2026, 5, 1, 11, 50, 0, 0, time.UTC); !r.LastSkipped.Equal(want) {
		t.Fatalf("last skipped = %s, want %s", r.LastSkipped, want)
	}
	if want := time.Date(2026, 5, 1, 12, 10, 0, 0, time.UTC); !r.Next.Equal(want) {
		t.Fatalf("next = %s, want %s", r.Next, want)
	}

	// Once the newest run is older than the deadline, nothing starts.
	clk.Step(4 * time.Minute) // 12:06, six minutes late
	r = DueRuns(s, last, clk.Now(), deadline)
	if !r.Due.IsZero() || r.Missed != 18 {
		t.Fatalf("late: due = %s missed = %d, want none and 18", r.Due, r.Missed)
	}

	// A long deadline still starts one run, never a burst.
	r = DueRuns(s, last, clk.Now(), 24*time.Hour)
	if r.Due.IsZero() || r.Missed != 0 || r.Superseded != 17 {
		t.Fatalf("long deadline: %+v, want one due and 17 superseded", r)
	}
}

func TestDueRunsNothingDue(t *testing.T) {
	s := mustParse(t, "0 * * * *", "")
	last := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	r := DueRuns(s, last, last.Add(59*time.Minute), deadline)
	if !r.Due.IsZero() || r.Missed != 0 || !r.Next.Equal(last.Add(time.Hour)) {
		t.Fatalf("got %+v", r)
	}
	// Exactly at the run time it is due.
	r = DueRuns(s, last, last.Add(time.Hour), deadline)
	if !r.Due.Equal(last.Add(time.Hour)) {
		t.Fatalf("got %+v", r)
	}
}

func TestDueRunsBoundsCounting(t *testing.T) {
	s := mustParse(t, "@every 1m", "")
	last := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	now := last.Add(2 * 365 * 24 * time.Hour)
	r := DueRuns(s, last, now, 10*time.Minute)
	if !r.Truncated || r.Missed != maxCountedMisses || !r.Due.Equal(now) {
		t.Fatalf("got %+v", r)
	}
	if r.Superseded != 10 {
		t.Fatalf("superseded = %d, want the 10 runs inside the deadline", r.Superseded)
	}
}

func TestRunName(t *testing.T) {
	at := time.Unix(1_780_000_000, 0)
	if got := RunName("nightly", at); got != "nightly-29666666" {
		t.Fatalf("RunName = %q", got)
	}
	long := strings.Repeat("a", 60)
	other := strings.Repeat("a", 59) + "b"
	n1, n2 := RunName(long, at), RunName(other, at)
	if len(n1) > 63 || len(n2) > 63 || n1 == n2 {
		t.Fatalf("long names %q %q must be distinct and at most 63 characters", n1, n2)
	}
	if !strings.HasSuffix(n1, "-29666666") {
		t.Fatalf("%q lost the run minutes", n1)
	}
	// Truncation never leaves "-" or "." before the hash.
	dotted := strings.Repeat("a", 44) + "." + strings.Repeat("b", 20)
	n := RunName(dotted, at)
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || len(n) > 63 {
		t.Fatalf("%q: %v", n, errs)
	}
	if errs := validation.IsValidLabelValue(n1); len(errs) > 0 {
		t.Fatalf("%q is not a label value: %v", n1, errs)
	}
}
