package ebdctl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// Output formats of list, status and verify (-o).
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

func checkOutput(o string) error {
	switch o {
	case outputTable, outputWide, outputJSON, outputYAML:
		return nil
	}
	return usagef("-o must be json, yaml or wide, not %q", o)
}

// checkStructuredOutput accepts -o for the commands without a wide table
// (show, diff): a table, json or yaml.
func checkStructuredOutput(o string) error {
	switch o {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return usagef("-o must be json or yaml, not %q", o)
}

// writeStructured prints v as JSON or YAML.
func writeStructured(w io.Writer, format string, v any) error {
	if format == outputYAML {
		out, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ANSI colours, used only when output goes to a terminal.
const (
	colourRed    = "\033[31m"
	colourGreen  = "\033[32m"
	colourYellow = "\033[33m"
	colourBold   = "\033[1m"
	colourReset  = "\033[0m"
)

// paint wraps s in colour when on is true.
func paint(on bool, colour, s string) string {
	if !on || colour == "" {
		return s
	}
	return colour + s + colourReset
}

// table prints aligned columns the way kubectl does. Colour codes in cells
// would confuse the alignment, so rows carry a colour for one column and
// it is applied after padding.
type table struct {
	w       io.Writer
	headers []string
	rows    []row
	colour  bool
}

type row struct {
	cells []string
	// colourCol is the index of the cell painted colour (-1: none).
	colourCol int
	colour    string
}

// add adds a row; every cell is made printable (what tenants wrote
// cannot drive the terminal).
func (t *table) add(cells ...string) *row {
	for i, c := range cells {
		cells[i] = printable(c)
	}
	t.rows = append(t.rows, row{cells: cells, colourCol: -1})
	return &t.rows[len(t.rows)-1]
}

func (t *table) flush() error {
	widths := make([]int, len(t.headers))
	for i, h := range t.headers {
		widths[i] = len(h)
	}
	for _, r := range t.rows {
		for i, c := range r.cells {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string, colourCol int, colour string) {
		for i, c := range cells {
			pad := ""
			if i < len(cells)-1 {
				pad = strings.Repeat(" ", widths[i]-len([]rune(c))+3)
			}
			if i == colourCol {
				c = paint(t.colour, colour, c)
			}
			b.WriteString(c + pad)
		}
		b.WriteString("\n")
	}
	line(t.headers, -1, "")
	for _, r := range t.rows {
		line(r.cells, r.colourCol, r.colour)
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

// humanBytes renders a size in binary units, as kubectl does for quantities.
func humanBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// age renders how long ago t was, kubectl style (5m, 3h12m, 2d).
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
