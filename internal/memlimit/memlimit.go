// Package memlimit sets the Go runtime's soft memory limit from the
// container's memory limit, so that the garbage collector works harder
// before the kernel's OOM killer would: with the default GOGC the heap may
// grow to twice what is live, and a driver caching ten thousand Backups
// would pass a 256 MiB limit although it needs about half of it.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroup files holding the memory limit: v2's unified hierarchy, then v1.
var limitFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// unlimited is what cgroup v1 reports for "no limit" (a page-rounded
// maximum int64); any value at least this large means none.
const unlimited = 1 << 62

// Limit is the memory limit of the cgroup mounted at root (usually
// /sys/fs/cgroup), or 0 when there is none.
func Limit(root string) (int64, error) {
	for _, f := range limitFiles {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("memory limit in %s: %w", f, err)
		}
		if n >= unlimited {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// Apply sets the runtime's memory limit to ratio of the cgroup's limit,
// unless GOMEMLIMIT is set (it then already applies), ratio is 0, or there
// is no limit. It returns the limit set, 0 if none.
func Apply(root string, ratio float64) (int64, error) {
	if ratio <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	if ratio > 1 {
		return 0, fmt.Errorf("memory limit ratio %v is above 1", ratio)
	}
	limit, err := Limit(root)
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * ratio)
	debug.SetMemoryLimit(soft)
	return soft, nil
}
