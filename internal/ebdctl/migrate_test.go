package ebdctl

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const legacyValues = `replicas: 3
backup:
  enabled: true
  schedule: "0 2 * * *"
  destinationPath: s3://etcd-backups/tenant-a/
  endpointURL: https://s3.example.com
  s3AccessKey: AK
  s3SecretKey: SK
`

func TestMigrateLegacyValues(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stdout   []string
		stderr   []string
		noStdout bool
	}{
		{
			name: "converts", args: []string{"migrate-legacy-values", "-f", "-", "--namespace", "tenant-a"}, stdin: legacyValues,
			stdout: []string{"kind: Secret", "kind: Etcd", "kind: BackupClass", "kind: Plan", "bucket: etcd-backups", "key: tenant-a/"},
			stderr: []string{"keep it out of Git"},
		},
		{
			name: "bad values fail with every reason", args: []string{"migrate-legacy-values", "-f", "-", "--namespace", "tenant-a"},
			stdin: "backup:\n  enabled: true\n  destinationPath: s3://b//x\n", code: 1, noStdout: true,
			stderr: []string{"cannot migrate", "empty // segment", "endpointURL is required", "s3AccessKey is required"},
		},
		{name: "no file flag", args: []string{"migrate-legacy-values", "--namespace", "x"}, code: 2, noStdout: true, stderr: []string{"needs -f FILE and --namespace NS", "ebdctl --help"}},
		{name: "no namespace", args: []string{"migrate-legacy-values", "-f", "-"}, code: 2, noStdout: true, stderr: []string{"needs -f FILE and --namespace NS"}},
		{name: "unknown flag", args: []string{"migrate-legacy-values", "--frob"}, code: 2, noStdout: true, stderr: []string{"unknown flag: --frob"}},
		{name: "missing file", args: []string{"migrate-legacy-values", "-f", "/nonexistent/values.yaml", "--namespace", "x"}, code: 1, noStdout: true, stderr: []string{"read values"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, noStdout: true, stderr: []string{`unknown command "frobnicate"`}},
		{name: "no command", args: nil, code: 2, noStdout: true, stderr: []string{"migrate-legacy-values", "no command given"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			code := Main("ebdctl", tc.args, Streams{In: strings.NewReader(tc.stdin), Out: &stdout, ErrOut: &stderr})
			g.Expect(code).To(Equal(tc.code), stderr.String())
			for _, s := range tc.stdout {
				g.Expect(stdout.String()).To(ContainSubstring(s))
			}
			for _, s := range tc.stderr {
				g.Expect(stderr.String()).To(ContainSubstring(s))
			}
			if tc.noStdout {
				g.Expect(stdout.String()).To(BeEmpty())
			}
		})
	}
}
