package operator

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// stopGrace is how long a member gets to exit on SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// memberProc is the process of one EtcdMember (one UID): what its Pod and
// container would be on a real node.
type memberProc struct {
	uid        types.UID
	cluster    types.NamespacedName
	clusterUID types.UID
	proc       *etcdproc.Member
}

// Fleet tracks every member process the stand-in started, by EtcdMember.
// It is the node's view of what runs; the API server holds the rest.
type Fleet struct {
	// Root holds one data folder per member.
	Root string

	mu      sync.Mutex
	members map[types.NamespacedName]*memberProc
}

// NewFleet returns an empty fleet keeping data under root.
func NewFleet(root string) *Fleet {
	return &Fleet{Root: root, members: map[types.NamespacedName]*memberProc{}}
}

// dataDir is the folder a member's PVC stands for.
func (f *Fleet) dataDir(member types.NamespacedName) string {
	return filepath.Join(f.Root, member.Namespace, member.Name)
}

func (f *Fleet) get(member types.NamespacedName) *memberProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members[member]
}

func (f *Fleet) put(member types.NamespacedName, p *memberProc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members[member] = p
}

// Endpoints returns the client URLs of the live members of the newest
// incarnation of the EtcdCluster key, sorted by member name.
func (f *Fleet) Endpoints(cluster types.NamespacedName) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	newest := f.newestIncarnation(cluster)
	var names []string
	urls := map[string]string{}
	for key, p := range f.members {
		if p.cluster == cluster && p.clusterUID == newest && p.proc.Running() {
			names = append(names, key.Name)
			urls[key.Name] = p.proc.Spec.ClientURL
		}
	}
	slices.Sort(names)
	eps := make([]string, 0, len(names))
	for _, n := range names {
		eps = append(eps, urls[n])
	}
	return eps
}

// endpointsOf returns the client URLs of the live members of one
// incarnation.
func (f *Fleet) endpointsOf(clusterUID types.UID) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var eps []string
	for _, p := range f.members {
		if p.clusterUID == clusterUID && p.proc.Running() {
			eps = append(eps, p.proc.Spec.ClientURL)
		}
	}
	slices.Sort(eps)
	return eps
}

// newestIncarnation is the cluster UID whose member started last; callers
// hold f.mu.
func (f *Fleet) newestIncarnation(cluster types.NamespacedName) types.UID {
	var uid types.UID
	var started time.Time
	for _, p := range f.members {
		if p.cluster == cluster && p.proc.Started().After(started) {
			uid, started = p.clusterUID, p.proc.Started()
		}
	}
	return uid
}

// remove kills a member's process and deletes its data, as deleting its
// Pod and PVC would. No grace: the data goes anyway, and an etcd whose
// peers are stopping at the same time can spend seconds trying to hand
// over leadership.
func (f *Fleet) remove(member types.NamespacedName) {
	f.mu.Lock()
	p := f.members[member]
	delete(f.members, member)
	f.mu.Unlock()
	if p != nil {
		p.proc.Stop(0)
	}
	_ = os.RemoveAll(f.dataDir(member))
}

// forget drops the record of a member whose process has exited, keeping
// its data for the restart.
func (f *Fleet) forget(member types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.members, member)
}

// StopAll stops every member process; the sandbox calls it on exit.
func (f *Fleet) StopAll() {
	f.mu.Lock()
	all := f.members
	f.members = map[types.NamespacedName]*memberProc{}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Go(func() { p.proc.Stop(stopGrace) })
	}
	wg.Wait()
}
