package strategytemplate

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// Templates come from admin-owned strategies, but they range over
// tenant-controlled application metadata, so execution is bounded by the
// work it can do, on the calling goroutine (nothing outlives a render): no
// nested templates (define, template, block: the only way to recurse), at
// most maxRangeDepth nested range loops, each over a field or variable of
// the data (never a literal or a function's result, so never over a number
// the template makes up); and before running, the most steps the template
// can take — its nodes times the largest collection or integer in the data
// to the power of its range depth — must be within MaxWork. String functions
// refuse results past MaxIntermediateBytes, and output stops at
// MaxOutputBytes.
const (
	// MaxTemplateBytes bounds one field's template text.
	MaxTemplateBytes = 4096
	// MaxOutputBytes bounds one field's rendered value.
	MaxOutputBytes = 2048
	// MaxWork bounds the steps (template nodes evaluated) of one field.
	MaxWork = 1 << 22
	// MaxIntermediateBytes bounds a value a template function returns.
	MaxIntermediateBytes = 64 << 10
	maxRangeDepth        = 2
)

var errOutputLimit = fmt.Errorf("renders to more than %d bytes", MaxOutputBytes)

// shape is what the static check learns about a template.
type shape struct {
	nodes  int
	ranges int // deepest range nesting
}

// checkShape refuses templates that could recurse, loop deeply, or loop
// over anything but the data, and measures the rest.
func checkShape(t *template.Template) (shape, error) {
	if len(t.Templates()) > 1 {
		return shape{}, errors.New("template defines sub-templates (define/block), which are not allowed")
	}
	var sh shape
	return sh, walk(t.Tree.Root, 0, &sh)
}

func walk(n parse.Node, ranges int, sh *shape) error {
	sh.nodes++
	sh.ranges = max(sh.ranges, ranges)
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, ranges, sh); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return errors.New("template invokes another template, which is not allowed")
	case *parse.RangeNode:
		if ranges+1 > maxRangeDepth {
			return fmt.Errorf("template nests more than %d range loops", maxRangeDepth)
		}
		if !rangesOverData(n.Pipe) {
			return fmt.Errorf("range over %q is not allowed: a range loop may only go over a field or variable of the data", n.Pipe)
		}
		return walkBranch(&n.BranchNode, ranges+1, sh)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, ranges, sh)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, ranges, sh)
	case *parse.ActionNode:
		sh.nodes += len(n.Pipe.Cmds)
	}
	return nil
}

func walkBranch(b *parse.BranchNode, ranges int, sh *shape) error {
	sh.nodes += len(b.Pipe.Cmds)
	if err := walk(b.List, ranges, sh); err != nil {
		return err
	}
	return walk(b.ElseList, ranges, sh)
}

// rangesOverData: the loop's pipeline is one field, variable or dot — a
// value of the data, whose size the work bound measures.
func rangesOverData(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode:
		return true
	}
	return false
}

// cardinality is the most iterations one range loop can make over data:
// its largest map or slice, or its largest integer (a range over an integer
// counts up to it).
func cardinality(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := int64(len(v))
		for _, e := range v {
			n = max(n, cardinality(e))
		}
		return n
	case map[string]string:
		return int64(len(v))
	case []any:
		n := int64(len(v))
		for _, e := range v {
			n = max(n, cardinality(e))
		}
		return n
	case []string:
		return int64(len(v))
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// work is the most steps a template of shape sh can take over data, capped
// just above MaxWork.
func work(sh shape, data map[string]any) int64 {
	w := int64(sh.nodes)
	per := cardinality(data) + 1
	for range sh.ranges {
		if per > MaxWork || w > MaxWork/per {
			return MaxWork + 1
		}
		w *= per
	}
	return w
}

// limitedWriter fails once more than its room is written, which stops
// text/template's execution.
type limitedWriter struct {
	b    strings.Builder
	room int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > w.room {
		return 0, errOutputLimit
	}
	w.room -= len(p)
	return w.b.Write(p)
}

// execute runs t, of shape sh, within MaxWork and MaxOutputBytes, on the
// calling goroutine.
func execute(t *template.Template, sh shape, data map[string]any) (string, error) {
	if w := work(sh, data); w > MaxWork {
		return "", fmt.Errorf("template could take more than %d steps over this application (%d nodes, %d nested range loops over collections or numbers of up to %d): it is refused rather than run",
			MaxWork, sh.nodes, sh.ranges, cardinality(data))
	}
	w := &limitedWriter{room: MaxOutputBytes}
	err := t.Execute(w, data)
	if errors.Is(err, errOutputLimit) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("template failed: %w", err)
	}
	return w.b.String(), nil
}
