package plugin

import (
	"regexp"
	"strings"
)

// screen replays what a program wrote to a terminal and returns the lines
// left on it: carriage return goes back to the line's start, ESC[K erases
// to its end, colour codes take no room. This is what a person sees once
// the live status line has been cleared for the last time.
func screen(raw string) []string {
	var lines []string
	var cur []rune
	col := 0
	sgr := regexp.MustCompile(`^\x1b\[[0-9;]*m`)
	rs := []rune(raw)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\x1b':
			rest := string(rs[i:])
			if strings.HasPrefix(rest, "\x1b[K") {
				cur = cur[:col]
				i += 2
				continue
			}
			if m := sgr.FindString(rest); m != "" {
				i += len([]rune(m)) - 1
				continue
			}
			cur, col = put(cur, col, r)
		case r == '\r':
			col = 0
		case r == '\n':
			lines = append(lines, string(cur))
			cur, col = nil, 0
		default:
			cur, col = put(cur, col, r)
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

func put(line []rune, col int, r rune) ([]rune, int) {
	if col < len(line) {
		line[col] = r
	} else {
		line = append(line, r)
	}
	return line, col + 1
}
