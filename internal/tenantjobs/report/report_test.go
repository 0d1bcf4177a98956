package report

import (
	"errors"
	"strings"
	"testing"
)

// listReport is a step's report with a list to cut.
type listReport struct {
	Envelope
	Items []string `json:"items,omitempty"`
	Cut   bool     `json:"cut,omitempty"`
}

func (r *listReport) Step() Step {
	return Step{Name: "test", Outcomes: map[Outcome]int{"Done": ExitSucceeded, "Ended": 66}}
}

func (r *listReport) Shrink() bool {
	if len(r.Items) == 0 {
		return false
	}
	r.Items, r.Cut = r.Items[:len(r.Items)-1], true
	return true
}

func (r *listReport) Check() error {
	if r.Outcome == "Done" && len(r.Items) == 0 {
		return errors.New("done with nothing")
	}
	return nil
}

// Line fits MaxLine by cutting the list, then the message; Parse reads it
// back; the exit code goes with the outcome.
func TestLineFitsAndParsesBack(t *testing.T) {
	r := &listReport{Envelope: Envelope{Outcome: "Done", Reason: "Done", Message: strings.Repeat("\x01é", 2000)}}
	for range 400 {
		r.Items = append(r.Items, strings.Repeat("x", 40))
	}
	line := Line(r)
	if len(line) > MaxLine || strings.Count(line, "\n") != 1 {
		t.Fatalf("line of %d bytes", len(line))
	}
	var got listReport
	if err := Parse(line, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Cut || len(got.Items) == 0 || encodedLen(got.Message) > MaxMessage || ExitCode(&got) != ExitSucceeded {
		t.Fatalf("parsed %d items, cut %v, message of %d bytes, exit %d", len(got.Items), got.Cut, encodedLen(got.Message), ExitCode(&got))
	}
	for o, code := range map[Outcome]int{"Done": ExitSucceeded, "Ended": 66, Retryable: ExitRetryable, Refused: ExitRefused, "Other": ExitRetryable} {
		if got := ExitCode(&listReport{Envelope: Envelope{Outcome: o}}); got != code {
			t.Errorf("outcome %s exits %d, want %d", o, got, code)
		}
	}
}

// Parse refuses anything but one report of the step within its bounds.
func TestParseRefuses(t *testing.T) {
	good := `{"outcome":"Done","reason":"Done","items":["a"]}`
	if err := Parse(good, &listReport{}); err != nil {
		t.Fatalf("the well-formed report is refused: %v", err)
	}
	for name, msg := range map[string]string{
		"oversized":       `{"outcome":"Refused","reason":"x","message":"` + strings.Repeat("a", MaxLine) + `"}`,
		"long message":    `{"outcome":"Refused","reason":"x","message":"` + strings.Repeat("a", MaxMessage+1) + `"}`,
		"two reports":     good + good,
		"unknown field":   `{"outcome":"Refused","reason":"x","extra":1}`,
		"unknown outcome": `{"outcome":"Staged","reason":"x"}`,
		"no reason":       `{"outcome":"Refused"}`,
		"long reason":     `{"outcome":"Refused","reason":"` + strings.Repeat("r", MaxReason+1) + `"}`,
		"step's check":    `{"outcome":"Done","reason":"Done"}`,
		"cut short":       good[:20],
		"a log":           "panic: runtime error",
		"empty":           "",
	} {
		if err := Parse(msg, &listReport{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
