package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// newRepo makes a git repository with one commit and returns it and the
// commit.
func newRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "README.md"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir, gitOut(t, dir, "rev-parse", "HEAD")
}

// TestReleaseNeedsTheTaggedCleanCommit: without -snapshot, only the commit
// tagged v<version>, checked out unchanged, is released, and a refused run
// leaves -out as it was.
func TestReleaseNeedsTheTaggedCleanCommit(t *testing.T) {
	root, commit := newRepo(t)
	if err := checkTagged(root, "1.2.3", commit); err == nil || !strings.Contains(err.Error(), "no tag v1.2.3") {
		t.Errorf("untagged commit: %v, want no tag v1.2.3", err)
	}
	gitOut(t, root, "tag", "v1.2.3")
	if err := checkTagged(root, "1.2.3", commit); err != nil {
		t.Errorf("tagged clean commit refused: %v", err)
	}
	other := strings.Repeat("a", 40)
	if err := checkTagged(root, "1.2.3", other); err == nil || !strings.Contains(err.Error(), "not -commit") {
		t.Errorf("-commit other than the tag's: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkTagged(root, "1.2.3", commit); err == nil || !strings.Contains(err.Error(), "differs from v1.2.3") {
		t.Errorf("changed checkout: %v, want differs from v1.2.3", err)
	}

	out := filepath.Join(t.TempDir(), "dist")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(out, "earlier.tar.gz")
	if err := os.WriteFile(keep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(options{root: root, out: out, version: "1.2.4", commit: commit, date: "2026-01-02T03:04:05Z", ldflags: "-s -w"})
	if err == nil || !strings.Contains(err.Error(), "no tag v1.2.4") {
		t.Errorf("run of an untagged version: %v, want no tag v1.2.4", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a refused run emptied -out: %v", err)
	}
}

// TestOptionsAreChecked: what the Makefile or a person passes is checked
// before anything is built or removed.
func TestOptionsAreChecked(t *testing.T) {
	good := options{out: "dist", version: "0.1.0-dev.g0123456789ab-dirty", commit: strings.Repeat("0", 40),
		date: "2026-01-02T03:04:05Z", ldflags: "-s -w"}
	if _, err := good.validate(); err != nil {
		t.Fatalf("good options refused: %v", err)
	}
	for name, change := range map[string]func(*options){
		"leading v":    func(o *options) { o.version = "v0.1.0" },
		"two numbers":  func(o *options) { o.version = "0.1" },
		"empty prerel": func(o *options) { o.version = "0.1.0-" },
		"short commit": func(o *options) { o.commit = "0123456" },
		"local date":   func(o *options) { o.date = "2026-01-02 03:04:05" },
		"no ldflags":   func(o *options) { o.ldflags = "" },
		"no out":       func(o *options) { o.out = "" },
	} {
		o := good
		change(&o)
		if _, err := o.validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, o)
		}
	}
}

// TestOutThatLooksLikeASourceTreeIsNotEmptied: -out is removed whole, so a
// folder holding .git or go.mod is refused.
func TestOutThatLooksLikeASourceTreeIsNotEmptied(t *testing.T) {
	root, _ := newRepo(t)
	if err := cleanOut(root); err == nil {
		t.Fatal("a repository accepted as -out")
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Errorf("the repository was emptied: %v", err)
	}
}
