// Package kamajistandin is the sandbox's stand-in for Kamaji: every
// TenantControlPlane gets a REAL kube-apiserver process (bin/kube-apiserver,
// watch cache on) storing in the tenant etcd its DataStore points at, so
// that what an in-place etcd restore does to a Kubernetes living in that
// etcd can be observed, and the driver's handling of it tested.
//
// What it reproduces of Kamaji's contract:
//   - The DataStore (spec.dataStore; the etcd chart renders one named after
//     the namespace, endpoint <cluster>-client.<ns>.svc:2379) lists the
//     control plane in status.usedBy as "<namespace>/<name>".
//   - A Pod labelled kamaji.clastix.io/name=<tcp> and
//     kamaji.clastix.io/component=deployment stands for the control plane's
//     Deployment Pod, Running and Ready while the apiserver serves. Deleting
//     it restarts the apiserver process (a fresh watch cache) and a new Pod
//     appears once the new process is ready: that is how a restart of a
//     Kamaji control plane is asked for.
//   - spec.writePermissions is enforced inside the tenant cluster by a
//     validating admission webhook the stand-in serves and registers there
//     (Kamaji's soot webhook), denying creates, updates or deletes per flag
//     to everyone but the apiserver itself.
//   - status.storage.dataStoreName, and status.kubernetesResources.version
//     .status: Ready, WriteLimited (ready, and a flag blocks something;
//     reported only once the webhook enforces it), NotReady (the process is
//     down or restarting).
//
// Differences, invisible to the driver: no controller manager, scheduler
// or konnectivity in the tenant; the apiserver serves on a loopback port
// that stays the same across restarts, with certificates of the
// stand-in's own CA; it reaches etcd through a loopback proxy standing for
// the client Service (members are plain-HTTP processes that a restore
// replaces on new ports); keys go under /<namespace>_<name>, Kamaji's
// default dataStoreSchema, whatever spec.dataStoreSchema says.
package kamajistandin

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Options configure the stand-in.
type Options struct {
	// APIServerBinary is bin/kube-apiserver.
	APIServerBinary string
	// Dir holds one folder per control plane (certificates, log).
	Dir string
	// Endpoints returns the client URLs of an EtcdCluster's live members
	// (operator.Fleet.Endpoints).
	Endpoints func(cluster types.NamespacedName) []string
}

// StandIn runs the control planes; Setup registers it with a manager.
type StandIn struct {
	client client.Client
	o      Options
	ca     *authority
	fence  *writeFence
	// exits carries a control plane's key when its process ends.
	exits chan event.GenericEvent

	mu     sync.Mutex
	planes map[types.NamespacedName]*controlPlane
}

// controlPlane is what runs for one TenantControlPlane.
type controlPlane struct {
	dataStore string
	proxy     *etcdProxy
	api       *apiServer
	// pod is the UID of the Pod standing for the running process.
	pod types.UID
}

// Setup registers the stand-in's controller and webhook server with mgr,
// whose scheme must hold the Kamaji mirror (api/kamaji/v1alpha1).
func Setup(mgr ctrl.Manager, o Options) (*StandIn, error) {
	if o.APIServerBinary == "" || o.Dir == "" || o.Endpoints == nil {
		return nil, fmt.Errorf("kamaji stand-in: APIServerBinary, Dir and Endpoints are required")
	}
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	fence, err := newWriteFence(ca)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(fence); err != nil {
		return nil, err
	}
	s := &StandIn{client: mgr.GetClient(), o: o, ca: ca, fence: fence, exits: make(chan event.GenericEvent, 16), planes: map[types.NamespacedName]*controlPlane{}}
	return s, s.setupWithManager(mgr)
}

// Config reaches the control plane's apiserver as tenant-admin, a member
// of system:masters (subject to the write fence). It stays valid across
// restarts; an error means the stand-in has not started this control
// plane yet.
func (s *StandIn) Config(key types.NamespacedName) (*rest.Config, error) {
	cp := s.plane(key)
	if cp == nil {
		return nil, fmt.Errorf("TenantControlPlane %s has no kube-apiserver yet", key)
	}
	cert, k, err := s.ca.client("tenant-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(cp.api.admin)
	cfg.CertData, cfg.KeyData = cert, k
	return cfg, nil
}

// StopAll stops every apiserver and proxy; the sandbox calls it once the
// manager has stopped.
func (s *StandIn) StopAll() {
	s.mu.Lock()
	planes := s.planes
	s.planes = map[types.NamespacedName]*controlPlane{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, cp := range planes {
		wg.Go(cp.stop)
	}
	wg.Wait()
}

func (s *StandIn) plane(key types.NamespacedName) *controlPlane {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planes[key]
}

// ensurePlane returns key's control plane, preparing (not starting) it on
// first sight: the etcd proxy and the apiserver's certificates.
func (s *StandIn) ensurePlane(key, cluster types.NamespacedName, dataStore string) (*controlPlane, error) {
	if cp := s.plane(key); cp != nil {
		return cp, nil
	}
	proxy, err := startProxy(func() []string { return s.o.Endpoints(cluster) })
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.o.Dir, key.Namespace, key.Name)
	api, err := newAPIServer(s.ca, s.o.APIServerBinary, dir, proxy.URL(), "/"+key.Namespace+"_"+key.Name)
	if err != nil {
		proxy.Close()
		return nil, err
	}
	cp := &controlPlane{dataStore: dataStore, proxy: proxy, api: api}
	s.mu.Lock()
	s.planes[key] = cp
	s.mu.Unlock()
	return cp, nil
}

func (s *StandIn) removePlane(key types.NamespacedName) *controlPlane {
	s.mu.Lock()
	cp := s.planes[key]
	delete(s.planes, key)
	s.mu.Unlock()
	if cp != nil {
		cp.stop()
		s.fence.forget(key)
	}
	return cp
}

func (cp *controlPlane) stop() {
	cp.api.stop()
	cp.proxy.Close()
}

// start runs the apiserver, installs the write fence in it, and arranges
// for the process's end to trigger a reconcile.
func (s *StandIn) start(ctx context.Context, key types.NamespacedName, cp *controlPlane) error {
	if err := cp.api.start(ctx); err != nil {
		return fmt.Errorf("control plane %s: %w", key, err)
	}
	if err := s.installFence(ctx, key, cp); err != nil {
		cp.api.stop()
		return err
	}
	exited := cp.api.exited
	go func() {
		<-exited
		// Never blocks: after the manager stops nobody reads.
		select {
		case s.exits <- event.GenericEvent{Object: tcpStub(key)}:
		default:
		}
	}()
	return nil
}
