package operator

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// stopGrace is how long a member gets to exit on SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// runningCluster is one incarnation (one UID) of an EtcdCluster.
type runningCluster struct {
	uid       types.UID
	dir       string
	token     string
	clusterID string
	members   []*etcdproc.Member
}

func (rc *runningCluster) endpoints() []string {
	var eps []string
	for _, m := range rc.members {
		if m.Running() {
			eps = append(eps, m.Spec.ClientURL)
		}
	}
	return eps
}

func (rc *runningCluster) initialCluster(extra ...*etcdproc.Spec) string {
	var parts []string
	for _, m := range rc.members {
		parts = append(parts, m.Spec.Name+"="+m.Spec.PeerURL)
	}
	for _, s := range extra {
		parts = append(parts, s.Name+"="+s.PeerURL)
	}
	return strings.Join(parts, ",")
}

// Fleet tracks every member process the stand-in started. It is the
// operator's memory of what runs; the API server holds the rest.
type Fleet struct {
	// Root holds one folder per cluster incarnation.
	Root string

	mu       sync.Mutex
	clusters map[types.NamespacedName]*runningCluster
}

// NewFleet returns an empty fleet keeping data under root.
func NewFleet(root string) *Fleet {
	return &Fleet{Root: root, clusters: map[types.NamespacedName]*runningCluster{}}
}

func (f *Fleet) get(key types.NamespacedName) *runningCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clusters[key]
}

func (f *Fleet) put(key types.NamespacedName, rc *runningCluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[key] = rc
}

// Endpoints returns the client URLs of key's live members.
func (f *Fleet) Endpoints(key types.NamespacedName) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rc := f.clusters[key]; rc != nil {
		return rc.endpoints()
	}
	return nil
}

// teardown stops key's members and removes their data.
func (f *Fleet) teardown(key types.NamespacedName) {
	f.mu.Lock()
	rc := f.clusters[key]
	delete(f.clusters, key)
	f.mu.Unlock()
	if rc == nil {
		return
	}
	stopAll(rc.members)
	_ = os.RemoveAll(rc.dir)
}

// StopAll stops every member of every cluster; the sandbox calls it on exit.
func (f *Fleet) StopAll() {
	f.mu.Lock()
	all := f.clusters
	f.clusters = map[types.NamespacedName]*runningCluster{}
	f.mu.Unlock()
	for _, rc := range all {
		stopAll(rc.members)
	}
}

func stopAll(members []*etcdproc.Member) {
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() { defer wg.Done(); m.Stop(stopGrace) }()
	}
	wg.Wait()
}

func clusterDir(root string, key types.NamespacedName, uid types.UID) string {
	return filepath.Join(root, key.Namespace, key.Name+"-"+string(uid)[:8])
}
