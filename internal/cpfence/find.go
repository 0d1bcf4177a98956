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
	// record is what the restore wrote down it fences (nil when nothing).
	record *Record
}

// FencedBy returns the control planes restore uid fenced: those its record
// holds that still carry its fence. A restore that fenced before records
// were kept (a driver upgraded mid-restore) has none: then those found
// carrying its fence.
func (p Planes) FencedBy(uid types.UID) []*kamajiv1alpha1.TenantControlPlane {
	var out []*kamajiv1alpha1.TenantControlPlane
	for i := range p.Items {
		if t := &p.Items[i]; FencedBy(t) == uid && (p.record == nil || p.record.has(t)) {
			out = append(out, t)
		}
	}
	return out
}

// Recorded reports whether the restore wrote down any fence (its record
// exists).
func (p Planes) Recorded() bool { return p.record != nil }

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
// those a DataStore pointing at it lists as users, and those whose spec or
// status names such a DataStore, each only when its namespace shares that
// etcd (ns itself, or one sharing labels as using it; namespaces are read
// through live). A control plane of any other namespace is never found
// that way, so a tenant cannot put its own into another tenant's restore:
// naming a DataStore is not enough. Besides, it returns every control
// plane rec (the restore's record, read from the driver's namespace; nil
// when it has none) holds, wherever it is and whatever its namespace says
// now, so what the restore fenced is always found to be lifted; without a
// record, those the restore uid fenced that the same test finds.
func Find(ctx context.Context, r client.Reader, sharing *Sharing, live client.Reader, ns string, uid types.UID, rec *Record) (Planes, error) {
	var stores kamajiv1alpha1.DataStoreList
	if err := r.List(ctx, &stores); err != nil {
		return Planes{}, fmt.Errorf("list Kamaji DataStores: %w", err)
	}
	out := Planes{record: rec}
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
		if rec.has(t) {
			out.Items = append(out.Items, *t)
			continue
		}
		uses := users[Key(t)] || slices.Contains(out.DataStores, t.Spec.DataStore) ||
			slices.Contains(out.DataStores, t.Status.Storage.DataStoreName)
		if !uses && (uid == "" || rec != nil || FencedBy(t) != uid) {
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
