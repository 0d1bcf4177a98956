package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
		err                 bool
	}{
		{"v2 limit", "memory.max", "268435456\n", 268435456, false},
		{"v2 no limit", "memory.max", "max\n", 0, false},
		{"v1 limit", "memory/memory.limit_in_bytes", "134217728\n", 134217728, false},
		{"v1 no limit", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0, false},
		{"garbage", "memory.max", "lots\n", 0, true},
		{"no cgroup files", "", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			if tc.file != "" {
				p := filepath.Join(root, tc.file)
				g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
				g.Expect(os.WriteFile(p, []byte(tc.content), 0o644)).To(Succeed())
			}
			got, err := Limit(root)
			if tc.err {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestApply(t *testing.T) {
	g := NewWithT(t)
	defer debug.SetMemoryLimit(math.MaxInt64)
	root := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644)).To(Succeed())

	t.Setenv("GOMEMLIMIT", "")
	set, err := Apply(root, 0.9)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set).To(Equal(int64(900000000)))
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(900000000)))

	set, err = Apply(root, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set).To(BeZero(), "ratio 0 turns it off")

	_, err = Apply(root, 1.5)
	g.Expect(err).To(HaveOccurred())

	t.Setenv("GOMEMLIMIT", "100MiB")
	set, err = Apply(root, 0.9)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set).To(BeZero(), "an explicit GOMEMLIMIT wins")
}
