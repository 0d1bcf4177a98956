// Package report is the one line every step the driver runs in a
// tenant's namespace (`etcd-stage stage`, `inspect`, `rehearse` and
// `capture`) writes
// to its termination log, and the driver reads back from the Pod's
// termination message: an Envelope (outcome, reason, message) with the
// step's own fields beside it, at most MaxLine bytes (Line cuts the step's
// lists, then its message, to fit), read back strictly (Parse), with the
// exit code that goes with it (ExitCode). It has no Kubernetes imports:
// etcd-stage links it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Outcome is how a step ended. Retryable and Refused are every step's;
// each step names its own (Staged, Inspected, Rehearsed; the capture's
// Stopped and Gap) in its Step.
type Outcome string

const (
	// Retryable: failed; another attempt may succeed (ExitRetryable).
	Retryable Outcome = "Retryable"
	// Refused: refused for good (ExitRefused).
	Refused Outcome = "Refused"
)

// Reason says why a step ended as it did, in a word the driver shows.
type Reason string

// Exit codes of etcd-stage. Every tenant Job's podFailurePolicy fails the
// Job at once on ExitRefused and lets its backoff retry everything else.
// ExitRefused is a code nothing but a refusal produces: a Go panic or
// runtime fatal error exits 2, a kill 128+signal (137 for an OOM kill),
// a command that cannot start 126–128; 65 is sysexits' EX_DATAERR ("the
// input data was incorrect"), which neither Go, the container runtime
// nor the kubelet uses.
const (
	ExitSucceeded = 0
	ExitRetryable = 1
	ExitRefused   = 65
)

// Bounds of a report.
const (
	// MaxLine bounds the line, newline included: the kubelet keeps at
	// most 4096 bytes of a termination message.
	MaxLine = 4000
	// MaxMessage bounds the message, as it is and as JSON writes it.
	MaxMessage = 1024
	// MaxReason bounds the reason.
	MaxReason = 63
)

// TerminationLog is where a container's termination message is read
// from, and where a step writes its report unless told otherwise.
const TerminationLog = "/dev/termination-log"

// Envelope is what every report holds: a step's report embeds it and adds
// its own fields beside it, in the same JSON object.
type Envelope struct {
	Outcome Outcome `json:"outcome"`
	Reason  Reason  `json:"reason"`
	// Message says what happened in words, at most MaxMessage bytes.
	Message string `json:"message,omitempty"`
}

func (e *Envelope) envelope() *Envelope { return e }

// Step describes one step's reports.
type Step struct {
	// Name names the step ("staging", "inspection", ...) in errors.
	Name string
	// Outcomes are the step's own outcomes, each with its exit code: its
	// success with ExitSucceeded, and any other a step ends with for a
	// reason of its own (the capture's Gap). Retryable and Refused are
	// every step's.
	Outcomes map[Outcome]int
}

// Report is a pointer to a step's report: a struct embedding Envelope.
type Report interface {
	envelope() *Envelope
	// Step describes the step that writes the report.
	Step() Step
	// Shrink removes one thing from the report's lists, least useful
	// first, to fit MaxLine; false when nothing is left to remove.
	Shrink() bool
	// Check refuses values the step never writes; the envelope is
	// checked before.
	Check() error
}

// EnvelopeOf is r's envelope.
func EnvelopeOf(r Report) Envelope { return *r.envelope() }

// Cut cuts a message to MaxMessage bytes.
func Cut(msg string) string { return textlimit.Cut(msg, MaxMessage) }

// ExitCode is the process exit code that goes with r.
func ExitCode(r Report) int {
	o := r.envelope().Outcome
	if code, own := r.Step().Outcomes[o]; own {
		return code
	}
	if o == Refused {
		return ExitRefused
	}
	return ExitRetryable
}

// Line is r as one line of JSON, newline included, at most MaxLine bytes:
// the message is cut until JSON writes it in MaxMessage bytes (a control
// character takes six); then, while the line is longer, r.Shrink removes
// one thing, and last the message is halved. r is changed: pass a copy
// whose lists Shrink may cut.
func Line(r Report) string {
	e := r.envelope()
	e.Message = Cut(e.Message)
	for encodedLen(e.Message) > MaxMessage {
		e.Message = textlimit.Cut(e.Message, len(e.Message)/2)
	}
	for {
		b, err := json.Marshal(r)
		if err != nil {
			// Only strings, integers, booleans and times: cannot happen.
			panic(err)
		}
		switch {
		case len(b)+1 <= MaxLine:
			return string(b) + "\n"
		case r.Shrink():
		case e.Message != "":
			e.Message = textlimit.Cut(e.Message, len(e.Message)/2)
		default:
			// Nothing left to cut; a report within its bounds fits.
			return string(b) + "\n"
		}
	}
}

// encodedLen is how many bytes JSON writes for s, quotes left out.
func encodedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// Parse reads a Pod's termination message s into r. The Pod runs in a
// tenant's namespace, so the message is untrusted data: anything but one
// complete report of r's step within its bounds is refused, so a cut,
// foreign or forged message is never taken for an outcome.
func Parse(s string, r Report) error {
	step := r.Step()
	name := step.Name
	if len(s) > MaxLine {
		return fmt.Errorf("termination message is %d bytes, more than a report's %d", len(s), MaxLine)
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return fmt.Errorf("termination message is not the %s step's report: %w", name, err)
	}
	if dec.More() {
		return fmt.Errorf("termination message holds more than one %s report", name)
	}
	e := r.envelope()
	switch {
	case !known(step, e.Outcome):
		return fmt.Errorf("%s report has unknown outcome %q", name, textlimit.Value(string(e.Outcome)))
	case e.Reason == "" || len(e.Reason) > MaxReason:
		return fmt.Errorf("%s report has no usable reason", name)
	case len(e.Message) > MaxMessage:
		return fmt.Errorf("%s report's message is %d bytes, more than %d", name, len(e.Message), MaxMessage)
	}
	if err := r.Check(); err != nil {
		return fmt.Errorf("%s report: %w", name, err)
	}
	return nil
}

// Read parses a Pod's termination message s into a new report of type R
// (Parse).
func Read[R any, P interface {
	*R
	Report
}](s string) (R, error) {
	var r R
	if err := Parse(s, P(&r)); err != nil {
		var none R
		return none, err
	}
	return r, nil
}

// known reports whether o is an outcome of step's reports.
func known(step Step, o Outcome) bool {
	_, own := step.Outcomes[o]
	return own || o == Retryable || o == Refused
}

// Emit writes a report's line to stdout and to the termination log
// (TerminationLog when logPath is empty); a failed write is said on
// stderr, under name: the exit code still tells the Job what happened.
func Emit(name, line, logPath string, stdout, stderr io.Writer) {
	fmt.Fprint(stdout, line)
	if logPath == "" {
		logPath = TerminationLog
	}
	if err := os.WriteFile(logPath, []byte(line), 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: write the termination log: %v\n", name, err)
	}
}
