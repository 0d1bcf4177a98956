package cpfence

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EtcdNamespaceLabel is the label Cozystack's tenant chart puts on every
// tenant namespace it creates (packages/apps/tenant, namespace.yaml): the
// tenant namespace whose etcd the tenant's Kubernetes clusters store in,
// its own when the tenant runs an etcd, else the nearest ancestor's. The
// platform writes it from the parent tenant's values (Cozystack's tenant
// roles grant no write on Namespaces), and its network policy lets exactly
// the namespaces carrying it reach that etcd.
const EtcdNamespaceLabel = "namespace.cozystack.io/etcd"

// sharingTTL is how long a namespace's label is taken as read: the label
// changes only when a parent tenant gets or drops an etcd of its own.
const sharingTTL = time.Minute

// sharingCap bounds the remembered namespaces; past it they are forgotten
// and read again.
const sharingCap = 4096

// Sharing says which namespaces share a tenant's etcd: the tenant's own,
// and those labelled EtcdNamespaceLabel with its name. A control plane in
// any other namespace is not the restore's to fence, whatever DataStore it
// names. It reads each foreign namespace live at most once a minute (only
// namespaces whose control planes name the restored etcd's DataStore are
// read at all). The zero value is ready to use.
type Sharing struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	seen map[string]sharingEntry
}

type sharingEntry struct {
	etcd string
	at   time.Time
}

// Shares reports whether the control planes of namespace planeNS may store
// in the etcd of namespace etcdNS. r reads Namespaces (from the API server:
// the driver does not cache them).
func (s *Sharing) Shares(ctx context.Context, r client.Reader, planeNS, etcdNS string) (bool, error) {
	if planeNS == etcdNS {
		return true, nil
	}
	if s == nil || r == nil {
		return false, nil
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	s.mu.Lock()
	e, ok := s.seen[planeNS]
	s.mu.Unlock()
	if !ok || now.Sub(e.at) >= sharingTTL {
		var n corev1.Namespace
		err := r.Get(ctx, client.ObjectKey{Name: planeNS}, &n)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("read Namespace %s to tell whether it shares the etcd of %s: %w", planeNS, etcdNS, err)
		}
		e = sharingEntry{etcd: n.Labels[EtcdNamespaceLabel], at: now}
		s.mu.Lock()
		if s.seen == nil || len(s.seen) >= sharingCap {
			s.seen = map[string]sharingEntry{}
		}
		s.seen[planeNS] = e
		s.mu.Unlock()
	}
	return e.etcd == etcdNS, nil
}
