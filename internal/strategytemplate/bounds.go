package strategytemplate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Templates come from admin-owned strategies, but they range over
// tenant-controlled application metadata, so execution is bounded: no
// nested templates (define, template, block: the only way to recurse), at
// most maxRangeDepth nested range loops, a deadline and an output limit.
const (
	// MaxTemplateBytes bounds one field's template text.
	MaxTemplateBytes = 4096
	// MaxOutputBytes bounds one field's rendered value.
	MaxOutputBytes = 2048
	// ExecTimeout bounds one field's rendering.
	ExecTimeout   = time.Second
	maxRangeDepth = 2
)

var errOutputLimit = fmt.Errorf("renders to more than %d bytes", MaxOutputBytes)

// checkShape refuses templates that could recurse or loop deeply.
func checkShape(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errors.New("template defines sub-templates (define/block), which are not allowed")
	}
	return walk(t.Tree.Root, 0)
}

func walk(n parse.Node, ranges int) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := walk(c, ranges); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		return errors.New("template invokes another template, which is not allowed")
	case *parse.RangeNode:
		if ranges+1 > maxRangeDepth {
			return fmt.Errorf("template nests more than %d range loops", maxRangeDepth)
		}
		return walkBranch(&n.BranchNode, ranges+1)
	case *parse.IfNode:
		return walkBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		return walkBranch(&n.BranchNode, ranges)
	}
	return nil
}

func walkBranch(b *parse.BranchNode, ranges int) error {
	if err := walk(b.List, ranges); err != nil {
		return err
	}
	return walk(b.ElseList, ranges)
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

// execute runs t within ExecTimeout and MaxOutputBytes. A template that
// outlives the deadline is abandoned (its goroutine ends when its loops do;
// the shape check bounds how long that can be).
func execute(t *template.Template, data map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ExecTimeout)
	defer cancel()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		w := &limitedWriter{room: MaxOutputBytes}
		err := t.Execute(w, data)
		done <- result{w.b.String(), err}
	}()
	select {
	case r := <-done:
		if errors.Is(r.err, errOutputLimit) {
			return "", r.err
		}
		if r.err != nil {
			return "", fmt.Errorf("template failed: %w", r.err)
		}
		return r.out, nil
	case <-ctx.Done():
		return "", fmt.Errorf("template did not finish within %s", ExecTimeout)
	}
}
