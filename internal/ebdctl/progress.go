package ebdctl

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
)

// progress prints what a waited-for job does: one permanent line per
// change, each stamped with the time since the wait began. On a terminal
// it also keeps a live status line at the bottom (what the job is doing
// now and for how long), redrawn in place and cleared before each
// permanent line, and colours phases.
type progress struct {
	w        io.Writer
	terminal bool
	start    time.Time
	now      func() time.Time

	status      string
	statusShown bool
	spin        int
}

func newProgress(w io.Writer, terminal bool, now func() time.Time) *progress {
	return &progress{w: w, terminal: terminal, start: now(), now: now}
}

// line prints a permanent line.
func (p *progress) line(format string, args ...any) {
	p.clearStatus()
	elapsed := p.now().Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "[%6.1fs] %s\n", elapsed, fmt.Sprintf(format, args...))
	p.drawStatus()
}

// setStatus replaces the live status line (terminal only).
func (p *progress) setStatus(s string) {
	p.status = s
	p.tick()
}

// tick redraws the live status line with the current elapsed time.
func (p *progress) tick() {
	p.clearStatus()
	p.drawStatus()
}

// done removes the live status line.
func (p *progress) done() {
	p.clearStatus()
	p.status = ""
}

var spinner = []string{"|", "/", "-", "\\"}

func (p *progress) drawStatus() {
	if !p.terminal || p.status == "" {
		return
	}
	p.spin = (p.spin + 1) % len(spinner)
	fmt.Fprintf(p.w, "%s %s (%s)", spinner[p.spin], p.status, p.now().Sub(p.start).Round(time.Second))
	p.statusShown = true
}

func (p *progress) clearStatus() {
	if p.statusShown {
		// Carriage return, then erase to the end of the line.
		io.WriteString(p.w, "\r\033[K")
		p.statusShown = false
	}
}

// phase paints a job phase: green for success, red for failure, yellow
// while it runs.
func (p *progress) phase(ph string) string {
	colour := colourYellow
	switch ph {
	case "Succeeded", "Complete", "True":
		colour = colourGreen
	case "Failed":
		colour = colourRed
	}
	return paint(p.terminal, colour, ph)
}

// oneLine keeps a message on one line, printable: ebdctl's one sanitiser
// of what it prints.
func oneLine(s string) string {
	return printable(strings.Join(strings.Fields(s), " "))
}

// printable is s with control characters (a terminal's escape sequences
// among them) as "?": messages and names come from objects and snapshots
// a tenant writes. Plain spaces are kept (a table cell's indent); any
// other white space is "?" too (oneLine folds it first).
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}
