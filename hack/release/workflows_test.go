package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflowsDir is the repository's workflows, seen from this module.
var workflowsDir = filepath.Join("..", "..", ".github", "workflows")

var (
	// pinnedAction is owner/repo[/path]@<full commit SHA>.
	pinnedAction = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@\s]+)?@[0-9a-f]{40}$`)
	// pinnedImage is docker://image@sha256:<digest>.
	pinnedImage = regexp.MustCompile(`^docker://[^@\s]+@sha256:[0-9a-f]{64}$`)
	// tagComment names the release the SHA is, for people and Dependabot.
	tagComment = regexp.MustCompile(`^#\s*v[0-9]+(\.[0-9]+)*\S*$`)
)

// TestEveryActionIsPinnedByCommit: every `uses:` of every workflow names
// the full commit SHA its tag pointed at, with that tag in a comment
// (`uses: owner/repo@<40 hex> # v1.2.3`). A tag can be moved to any
// commit by whoever controls the action's repository, and the release
// jobs hold id-token: write (keyless signing, attestations) and
// packages: write. Dependabot (.github/dependabot.yml) proposes new SHAs.
// Local actions (./...) are the checkout's own.
func TestEveryActionIsPinnedByCommit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(workflowsDir, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no workflows in %s", workflowsDir)
	}
	seen := 0
	for _, f := range files {
		for _, u := range usesOf(t, f) {
			seen++
			ref := strings.Trim(u.Value, `"'`)
			switch {
			case strings.HasPrefix(ref, "./"):
			case strings.HasPrefix(ref, "docker://"):
				if !pinnedImage.MatchString(ref) {
					t.Errorf("%s:%d: uses %s: pin the image by digest (docker://image@sha256:...)", filepath.Base(f), u.Line, ref)
				}
			case !pinnedAction.MatchString(ref):
				t.Errorf("%s:%d: uses %s: pin the action by the full commit SHA its tag points at (owner/repo@<40 hex> # vX.Y.Z)", filepath.Base(f), u.Line, ref)
			case !tagComment.MatchString(strings.TrimSpace(u.LineComment)):
				t.Errorf("%s:%d: uses %s: say which release the SHA is in a comment (# vX.Y.Z), not %q", filepath.Base(f), u.Line, ref, u.LineComment)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no uses: found in any workflow")
	}
}

// TestDependabotKeepsTheActionsCurrent: pinned SHAs do not move by
// themselves; Dependabot proposes each new release of the actions.
func TestDependabotKeepsTheActionsCurrent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(workflowsDir, "..", "dependabot.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Updates []struct {
			Ecosystem string `yaml:"package-ecosystem"`
			Directory string `yaml:"directory"`
			Schedule  struct {
				Interval string `yaml:"interval"`
			} `yaml:"schedule"`
		} `yaml:"updates"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.Updates {
		if u.Ecosystem == "github-actions" && u.Directory == "/" && u.Schedule.Interval != "" {
			return
		}
	}
	t.Fatalf("dependabot.yml has no github-actions update for / with a schedule: %+v", cfg.Updates)
}

// usesOf returns the value node of every `uses` key in the workflow file.
func usesOf(t *testing.T, file string) []*yaml.Node {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, v := n.Content[i], n.Content[i+1]; k.Value == "uses" && v.Kind == yaml.ScalarNode {
					out = append(out, v)
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	return out
}
