package ebdctl

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

// As a kubectl plugin the program presents itself as kubectl does.
func TestPluginNameInHelp(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	code := Main("kubectl etcd-backup", []string{"backup", "--help"}, Streams{Out: &out, ErrOut: &errOut})
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out.String()).To(ContainSubstring("kubectl etcd-backup backup APP [--wait] [flags]"))
	g.Expect(out.String()).To(ContainSubstring("kubectl etcd-backup backup etcd -n tenant-a --wait"))
	for _, flag := range []string{"--kubeconfig", "--namespace", "--context"} {
		g.Expect(out.String()).To(ContainSubstring(flag))
	}

	out.Reset()
	g.Expect(Main("kubectl etcd-backup", []string{"list", "-o", "table"}, Streams{Out: &out, ErrOut: &errOut})).To(Equal(ExitUsage))
	g.Expect(errOut.String()).To(ContainSubstring("Run 'kubectl etcd-backup --help' for usage."))
}
