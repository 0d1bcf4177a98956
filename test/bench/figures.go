package bench

import (
	"os"
	"slices"
	"strconv"
	"time"
)

// percentile is the p-th percentile (0 < p ≤ 100, nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s)) + 0.999999)
	return s[min(max(rank, 1), len(s))-1]
}

// envInt is the integer in $name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envDuration is the duration in $name, or def.
func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
