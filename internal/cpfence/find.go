// Package cpfence fences the Kamaji tenant control planes that store their
// state in a tenant's etcd while that etcd is restored in place, restarts
// their kube-apiservers once the restored etcd is up, and lifts the fence.
//
// A kube-apiserver that keeps running across an in-place restore serves its
// watch cache, and accepts writes, against data that is about to be
// replaced. Kamaji's own read-only switch, spec.writePermissions, makes its
// admission webhook in the tenant cluster refuse every create, update and
// delete; Kamaji reports the control plane WriteLimited once it enforces
// it. Flux does not undo it: Cozystack's Kubernetes controller leaves
// writePermissions and foreign annotations alone, and the fence is one
// merge patch of a field nothing else writes. The fence is recorded on the
// TenantControlPlane itself (who fenced it, and the permissions it had) in
// the same patch, so a driver that crashes finds it again, and lifting it
// puts back exactly what was there.
//
// Restarting is what Kamaji does itself: its Deployment's Pods carry
// kamaji.clastix.io/name=<control plane>; deleting them makes new ones,
// which start with empty caches and read the restored etcd afresh.
package cpfence

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// Endpoint is the address of the etcd in ns that the etcd chart's DataStore
// names, and Kamaji's control planes dial.
func Endpoint(ns string) string { return "etcd-client." + ns + ".svc:2379" }

// Planes are the control planes found for one etcd.
type Planes struct {
	// DataStores are the names of the DataStores that point at the etcd.
	DataStores []string
	// Items are the TenantControlPlanes that store in it, or that a
	// restore fenced, sorted by namespace/name.
	Items []kamajiv1alpha1.TenantControlPlane
}

// Names lists the control planes as namespace/name.
func (p Planes) Names() []string {
	out := make([]string, 0, len(p.Items))
	for i := range p.Items {
		out = append(out, Key(&p.Items[i]))
	}
	return out
}

// Key is a control plane's namespace/name.
func Key(t *kamajiv1alpha1.TenantControlPlane) string { return t.Namespace + "/" + t.Name }

// Find returns the control planes that store in the etcd of namespace ns:
// those a DataStore pointing at it lists as users, those whose spec or
// status names such a DataStore, and any that the restore uid fenced
// (whatever it points at now, so a fence is always found to be lifted),
// each only when its namespace shares that etcd (ns itself, or one
// sharing labels as using it; namespaces are read through live). A
// control plane of any other namespace is never returned, so a tenant
// cannot put its own into another tenant's restore: naming a DataStore is
// not enough.
func Find(ctx context.Context, r client.Reader, sharing *Sharing, live client.Reader, ns string, uid types.UID) (Planes, error) {
	var stores kamajiv1alpha1.DataStoreList
	if err := r.List(ctx, &stores); err != nil {
		return Planes{}, fmt.Errorf("list Kamaji DataStores: %w", err)
	}
	var out Planes
	users := map[string]bool{}
	for i := range stores.Items {
		ds := &stores.Items[i]
		if !slices.ContainsFunc(ds.Spec.Endpoints, func(e string) bool { return pointsAt(e, ns) }) {
			continue
		}
		out.DataStores = append(out.DataStores, ds.Name)
		for _, u := range ds.Status.UsedBy {
			users[u] = true
		}
	}
	var tcps kamajiv1alpha1.TenantControlPlaneList
	if err := r.List(ctx, &tcps); err != nil {
		return Planes{}, fmt.Errorf("list Kamaji TenantControlPlanes: %w", err)
	}
	for i := range tcps.Items {
		t := &tcps.Items[i]
		uses := users[Key(t)] || slices.Contains(out.DataStores, t.Spec.DataStore) ||
			slices.Contains(out.DataStores, t.Status.Storage.DataStoreName)
		if !uses && (uid == "" || FencedBy(t) != uid) {
			continue
		}
		ok, err := sharing.Shares(ctx, live, t.Namespace, ns)
		if err != nil {
			return Planes{}, err
		}
		if ok {
			out.Items = append(out.Items, *t)
		}
	}
	slices.SortFunc(out.Items, func(a, b kamajiv1alpha1.TenantControlPlane) int { return strings.Compare(Key(&a), Key(&b)) })
	slices.Sort(out.DataStores)
	return out, nil
}

// pointsAt reports whether a DataStore endpoint (host:port, optionally with
// a scheme) is the client Service of the etcd in ns, in any of the forms
// cluster DNS resolves.
func pointsAt(endpoint, ns string) bool {
	e := endpoint
	if i := strings.Index(e, "://"); i >= 0 {
		e = e[i+3:]
	}
	host, port, ok := strings.Cut(e, ":")
	if !ok || port != "2379" {
		return false
	}
	base := "etcd-client." + ns
	return host == base || host == base+".svc" || strings.HasPrefix(host, base+".svc.")
}

// FencedBy is the UID of the restore that fenced t, or "".
func FencedBy(t *kamajiv1alpha1.TenantControlPlane) types.UID {
	return types.UID(t.GetAnnotations()[backupsv1alpha1.FencedByAnnotation])
}
