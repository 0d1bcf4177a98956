package main

import (
	"fmt"
	"os/exec"
	"strings"
)

// checkTagged refuses a release (not a snapshot) of anything but the commit
// tagged v<version>, checked out unchanged: what is published must be what
// the tag names, so that anyone can rebuild it from the tag.
func checkTagged(root, version, commit string) error {
	tag := "v" + version
	tagged, err := git(root, "rev-parse", "--verify", "--quiet", "refs/tags/"+tag+"^{commit}")
	if err != nil {
		return fmt.Errorf("no tag %s in %s (-snapshot, SNAPSHOT=1 to make, builds any checkout): %w", tag, root, err)
	}
	if tagged != commit {
		return fmt.Errorf("tag %s is commit %s, not -commit %s", tag, tagged, commit)
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if head != commit {
		return fmt.Errorf("the checkout is at %s, not at %s (%s)", head, commit, tag)
	}
	status, err := git(root, "status", "--porcelain")
	if err != nil {
		return err
	}
	if status != "" {
		return fmt.Errorf("the checkout differs from %s:\n%s", tag, status)
	}
	return nil
}

// git runs git in dir and returns its output without the trailing newline.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}
