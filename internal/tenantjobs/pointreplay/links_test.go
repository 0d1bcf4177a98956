package pointreplay

import (
	"os/exec"
	"strings"
	"testing"
)

// The driver builds the Jobs' arguments of a point through this package
// and the staging step's options, and must not link etcd's server (the
// replay's scratch etcd): a manager that did would carry etcd's whole
// server in its binary and memory. Seen failing when the staging step
// called run.Replay itself (46 packages of etcd's server and the replay in the manager).
func TestTheDriverLinksNoEtcdServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/etcd-backup-driver/etcd-backup-driver/cmd/manager").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var server []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "go.etcd.io/etcd/server/") || strings.HasSuffix(p, "/internal/changereplay") || strings.HasSuffix(p, "/internal/scratchetcd") {
			server = append(server, p)
		}
	}
	if len(server) > 0 {
		t.Fatalf("cmd/manager links %d packages of the replay or etcd's server, e.g. %v", len(server), server[:min(len(server), 5)])
	}
}
