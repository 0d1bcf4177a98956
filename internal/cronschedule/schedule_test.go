package cronschedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// inZone writes expr with tz as its CRON_TZ prefix ("" for none).
func inZone(expr, tz string) string {
	if tz == "" {
		return expr
	}
	return "CRON_TZ=" + tz + " " + expr
}

func mustParse(t *testing.T, expr, tz string) Schedule {
	t.Helper()
	s, err := Parse(inZone(expr, tz), "")
	if err != nil {
		t.Fatalf("Parse(%q): %v", inZone(expr, tz), err)
	}
	return s
}

// runsBetween lists every run of s in (from, to], in UTC.
func runsBetween(s Schedule, from, to time.Time) []string {
	var out []string
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		out = append(out, t.UTC().Format(time.RFC3339))
	}
	return out
}

func TestParseScheduleRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		expr, tz string
		want     error
	}{
		{"", "", ErrInvalidCron},
		{"61 * * * *", "", ErrInvalidCron},
		{"* * * *", "", ErrInvalidCron},
		{"@fortnightly", "", ErrInvalidCron},
		{"@every 30s", "", ErrInvalidCron},
		{"0 3 * * *", "Mars/Olympus", ErrInvalidTimeZone},
		{"0 3 * * *", "Local", ErrInvalidTimeZone},
		{"H 3 * * *", "Mars/Olympus", ErrInvalidTimeZone},
		{"TZ= 0 3 * * *", "", ErrInvalidTimeZone},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "Europe/Paris", ErrInvalidCron},
	} {
		if _, err := Parse(inZone(tc.expr, tc.tz), ""); !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", inZone(tc.expr, tc.tz), err, tc.want)
		}
	}
}

func TestParseScheduleReadsTheTimeZone(t *testing.T) {
	from := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ expr, tz, want string }{
		{"0 3 * * *", "", "2026-01-10T03:00:00Z"},
		{"0 3 * * *", "UTC", "2026-01-10T03:00:00Z"},
		{"0 3 * * *", "Europe/Berlin", "2026-01-10T02:00:00Z"},
		{"0 3 * * *", "America/New_York", "2026-01-10T08:00:00Z"},
		{"CRON_TZ=Asia/Tokyo 0 3 * * *", "", "2026-01-10T18:00:00Z"},
		{"TZ=Asia/Tokyo 0 3 * * *", "", "2026-01-10T18:00:00Z"},
		{"H(0-0) 3 * * *", "Europe/Berlin", "2026-01-10T02:00:00Z"},
		{"@daily", "Asia/Kolkata", "2026-01-10T18:30:00Z"},
		{"@hourly", "", "2026-01-10T01:00:00Z"},
		{"@every 90m", "Europe/Berlin", "2026-01-10T01:30:00Z"},
	} {
		got := mustParse(t, tc.expr, tc.tz).Next(from).UTC().Format(time.RFC3339)
		if got != tc.want {
			t.Errorf("%q in %q: next = %s, want %s", tc.expr, tc.tz, got, tc.want)
		}
	}
}

// A daily run at a local time that the spring change skips happens once,
// when the clock jumps; one the autumn change repeats happens once too.
func TestDaylightSavingChanges(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	daily := mustParse(t, "30 2 * * *", "Europe/Berlin")

	// 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
	spring := runsBetween(daily, time.Date(2026, 3, 27, 12, 0, 0, 0, berlin), time.Date(2026, 3, 31, 12, 0, 0, 0, berlin))
	wantSpring := []string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}
	if strings.Join(spring, " ") != strings.Join(wantSpring, " ") {
		t.Errorf("spring forward runs = %v, want %v", spring, wantSpring)
	}

	// 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00 UTC).
	autumn := runsBetween(daily, time.Date(2026, 10, 23, 12, 0, 0, 0, berlin), time.Date(2026, 10, 26, 12, 0, 0, 0, berlin))
	wantAutumn := []string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}
	if strings.Join(autumn, " ") != strings.Join(wantAutumn, " ") {
		t.Errorf("fall back runs = %v, want %v", autumn, wantAutumn)
	}

	// A schedule for every hour keeps running every elapsed hour through
	// the repeated hour.
	hourly := mustParse(t, "0 * * * *", "Europe/Berlin")
	got := runsBetween(hourly, time.Date(2026, 10, 24, 23, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 30, 0, 0, time.UTC))
	want := []string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("hourly across fall back = %v, want %v", got, want)
	}

	// New York moves at 02:00 local on its own dates.
	ny := mustParse(t, "15 2 * * *", "America/New_York")
	got = runsBetween(ny, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	want = []string{"2026-03-08T07:00:00Z", "2026-03-09T06:15:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("New York spring forward = %v, want %v", got, want)
	}
}

// Driving DueRuns with a fake clock across the autumn change starts the
// repeated daily run once.
func TestDueRunsAcrossFallBackWithFakeClock(t *testing.T) {
	s := mustParse(t, "30 2 * * *", "Europe/Berlin")
	clk := clocktesting.NewFakeClock(time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC))
	last := clk.Now()
	var started []string
	for clk.Now().Before(time.Date(2026, 10, 25, 4, 0, 0, 0, time.UTC)) {
		clk.Step(5 * time.Minute)
		r := DueRuns(s, last, clk.Now(), deadline)
		if r.Missed+r.Superseded != 0 {
			t.Fatalf("at %s: unexpected skips %+v", clk.Now(), r)
		}
		if !r.Due.IsZero() {
			started = append(started, r.Due.UTC().Format(time.RFC3339))
			last = r.Due
		}
	}
	if len(started) != 1 || started[0] != "2026-10-25T00:30:00Z" {
		t.Fatalf("started %v, want exactly the first 02:30 (00:30Z)", started)
	}
}

// A drill schedule without a zone of its own is read in the zone of the
// backup schedule; one with its own keeps it.
func TestInZoneOf(t *testing.T) {
	for _, tc := range []struct{ expr, other, want string }{
		{"0 4 * * 0", "CRON_TZ=Europe/Berlin 0 3 * * *", "CRON_TZ=Europe/Berlin 0 4 * * 0"},
		{" H 4 * * 0 ", "TZ=Asia/Tokyo H 3 * * *", "TZ=Asia/Tokyo H 4 * * 0"},
		{"CRON_TZ=UTC 0 4 * * 0", "CRON_TZ=Europe/Berlin 0 3 * * *", "CRON_TZ=UTC 0 4 * * 0"},
		{"0 4 * * 0", "0 3 * * *", "0 4 * * 0"},
	} {
		if got := InZoneOf(tc.expr, tc.other); got != tc.want {
			t.Errorf("InZoneOf(%q, %q) = %q, want %q", tc.expr, tc.other, got, tc.want)
		}
	}
}
