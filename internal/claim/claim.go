// Package claim serialises destructive work on a tenant's etcd cluster. A
// RestoreJob claims the cluster by creating a coordination.k8s.io Lease in
// the driver's own namespace, with a name derived from the cluster; the API
// server's create is the atomic test-and-set, so at most one RestoreJob
// holds a cluster at a time, whatever the caches say. BackupJobs for a
// claimed cluster wait. Tenants cannot write in the driver's namespace, so
// no tenant can fake a claim or block one; Leases anywhere else are ignored.
package claim

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
)

// Labels and annotations on every claim Lease.
const (
	// ComponentLabel marks Leases that are restore claims.
	ComponentLabel = "app.kubernetes.io/component"
	// ComponentValue is ComponentLabel's value on claim Leases.
	ComponentValue = "etcd-restore-claim"
	// TargetNamespaceLabel is the namespace of the claimed cluster, so a
	// watcher can map a Lease to the jobs it concerns.
	TargetNamespaceLabel = "backups.cozystack.io/target-namespace"
	// HolderNameAnnotation is the holding RestoreJob's name (a label
	// value could not hold every RestoreJob name).
	HolderNameAnnotation = "backups.cozystack.io/restore-job"
)

// Target is the cluster a claim serialises work on.
type Target struct {
	// Namespace of the tenant (and of its EtcdCluster).
	Namespace string
	// Cluster is the EtcdCluster's name.
	Cluster string
}

func (t Target) String() string { return t.Namespace + "/" + t.Cluster }

// Holder is the RestoreJob that holds a claim.
type Holder struct {
	Namespace string
	Name      string
	UID       types.UID
	// LeaseUID identifies the Lease, for a conditional release.
	LeaseUID types.UID
}

// HeldBy reports whether h is rj.
func (h *Holder) HeldBy(rj *backupsv1alpha1.RestoreJob) bool {
	return h != nil && h.Namespace == rj.Namespace && h.Name == rj.Name && h.UID == rj.UID
}

// Store keeps claims in one namespace (the driver's).
type Store struct {
	// Client creates and deletes Leases.
	Client client.Client
	// Reader reads Leases for Get: the cache where a moment's lag is
	// harmless (the restore, which is woken by the Lease watch), the API
	// server where it is not (a BackupJob's last check before snapshotting).
	Reader client.Reader
	// Live reads back what Acquire made, from the API server; nil means
	// Reader is live already.
	Live client.Reader
	// Namespace is where the Leases live.
	Namespace string
}

// LeaseName is the name of the claim Lease for t: readable, and unique
// per target thanks to a hash of both parts.
func LeaseName(t Target) string {
	return "etcd-restore-" + t.Namespace + "-" + names.Hash(t.Namespace, t.Cluster)
}

// Get returns the holder of the claim on t, or nil when t is not claimed.
func (s Store) Get(ctx context.Context, t Target) (*Holder, error) {
	var lease coordinationv1.Lease
	err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: LeaseName(t)}, &lease)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read restore claim on %s: %w", t, err)
	}
	return holderOf(&lease), nil
}

func holderOf(lease *coordinationv1.Lease) *Holder {
	return &Holder{
		Namespace: lease.Labels[TargetNamespaceLabel],
		Name:      lease.Annotations[HolderNameAnnotation],
		UID:       types.UID(lease.Labels[backupsv1alpha1.RestoreJobUIDLabel]),
		LeaseUID:  lease.UID,
	}
}

// Acquire claims t for rj (rj is in t's namespace). It returns the holder
// after the call: rj itself when it now holds the claim (or already did),
// another RestoreJob otherwise.
func (s Store) Acquire(ctx context.Context, rj *backupsv1alpha1.RestoreJob, t Target, app string) (*Holder, error) {
	holder := rj.Namespace + "/" + rj.Name
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace,
			Name:      LeaseName(t),
			Labels: map[string]string{
				ComponentLabel:                       ComponentValue,
				TargetNamespaceLabel:                 t.Namespace,
				backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app),
				backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
			},
			Annotations: map[string]string{HolderNameAnnotation: rj.Name},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	err := s.Client.Create(ctx, lease)
	if err == nil {
		// The create is the test-and-set: it made our Lease, and its
		// answer is the stored object.
		return holderOf(lease), nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("claim %s: %w", t, err)
	}
	// Lost to an existing Lease (or ours, made by a try whose answer was
	// lost): only the stored object, read through the API server, says
	// whose.
	return s.LiveStore().Get(ctx, t)
}

// LiveStore is s reading everything from the API server.
func (s Store) LiveStore() Store {
	if s.Live != nil {
		s.Reader = s.Live
	}
	return s
}

// Release drops h's claim. It never deletes a claim taken since: the delete
// is conditioned on the Lease's UID.
func (s Store) Release(ctx context.Context, t Target, h *Holder) error {
	if h == nil {
		return nil
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: LeaseName(t),
		Labels: map[string]string{TargetNamespaceLabel: t.Namespace}}}
	err := s.Client.Delete(ctx, lease, client.Preconditions{UID: &h.LeaseUID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("release restore claim on %s: %w", t, err)
	}
	return nil
}
