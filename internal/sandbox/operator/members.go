package operator

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"sigs.k8s.io/controller-runtime/pkg/event"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// memberStartTimeout bounds how long a new member may take to serve.
const memberStartTimeout = 30 * time.Second

func (r *ClusterReconciler) memberSpec(rc *runningCluster, name string) (etcdproc.Spec, error) {
	clientURL, err := etcdproc.FreeURL()
	if err != nil {
		return etcdproc.Spec{}, err
	}
	peerURL, err := etcdproc.FreeURL()
	if err != nil {
		return etcdproc.Spec{}, err
	}
	return etcdproc.Spec{
		Binary:    r.EtcdBinary,
		Name:      name,
		DataDir:   filepath.Join(rc.dir, name),
		ClientURL: clientURL,
		PeerURL:   peerURL,
		Token:     rc.token,
		LogFile:   filepath.Join(rc.dir, name+".log"),
	}, nil
}

// startMember starts a process, waits until it serves, and arranges for its
// exit to re-queue the cluster.
func (r *ClusterReconciler) startMember(ctx context.Context, c *etcdv1alpha2.EtcdCluster, spec etcdproc.Spec) (*etcdproc.Member, error) {
	m, err := etcdproc.Start(spec)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, memberStartTimeout)
	defer cancel()
	if err := m.WaitHealthy(wctx); err != nil {
		m.Stop(stopGrace)
		return nil, err
	}
	obj := c.DeepCopy()
	go func() {
		<-m.Exited()
		select { // never block a member's exit on a stopped controller
		case r.exits <- event.TypedGenericEvent[*etcdv1alpha2.EtcdCluster]{Object: obj}:
		default:
		}
	}()
	return m, nil
}

func clientFor(endpoints ...string) (*clientv3.Client, error) {
	return etcdproc.Client(endpoints...)
}

func joinComma(s []string) string { return strings.Join(s, ",") }
