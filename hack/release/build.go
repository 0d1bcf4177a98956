package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// goBuild builds every released binary for p into dir with one go build
// (its links run in parallel), as `make image-context` builds the image's:
// static (CGO off), -trimpath, the Makefile's LDFLAGS.
func goBuild(root, dir string, p platform, ldflags string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-ldflags", ldflags, "-o", dir + string(os.PathSeparator)}
	for _, bin := range binaries {
		args = append(args, "./cmd/"+bin)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), buildEnv(p)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "go build %s: %s\n", p, strings.Join(binaries, ", "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w", p, err)
	}
	return nil
}

// buildEnv is the environment of a build for p. The instruction-set levels
// are pinned to each architecture's baseline so that a developer's GOAMD64
// or GOARM64 never makes a release that some machines of that arch cannot
// run (nor one whose bytes differ from the tag's build).
func buildEnv(p platform) []string {
	return []string{
		"CGO_ENABLED=0",
		"GOOS=" + p.goos,
		"GOARCH=" + p.goarch,
		"GOAMD64=v1",
		"GOARM64=v8.0",
	}
}
