// Package claim serialises destructive work on an etcd application. A
// RestoreJob claims the application by creating a coordination.k8s.io Lease
// with a name derived from the application; the API server's create is the
// atomic test-and-set, so at most one RestoreJob holds an application at a
// time, whatever the caches say. BackupJobs for a claimed application wait.
package claim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Labels on every claim Lease, so watchers can map a Lease to its application.
const (
	// ComponentLabel marks Leases that are restore claims.
	ComponentLabel = "app.kubernetes.io/component"
	// ComponentValue is ComponentLabel's value on claim Leases.
	ComponentValue = "etcd-restore-claim"
)

const namePrefix = "etcd-restore-"

// LeaseName is the name of the claim Lease for application app. Names that
// would exceed 63 characters are shortened with a hash so they stay unique.
func LeaseName(app string) string {
	name := namePrefix + app
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(app))
	return name[:63-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// Holder is the RestoreJob that holds a claim.
type Holder struct {
	Name string
	UID  types.UID
}

// Get returns the holder of the claim on app in namespace, or nil when the
// application is not claimed.
func Get(ctx context.Context, r client.Reader, namespace, app string) (*Holder, error) {
	var lease coordinationv1.Lease
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: LeaseName(app)}, &lease)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read restore claim on %s/%s: %w", namespace, app, err)
	}
	h := &Holder{}
	if lease.Spec.HolderIdentity != nil {
		h.Name = *lease.Spec.HolderIdentity
	}
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "RestoreJob" {
			h.UID = ref.UID
		}
	}
	return h, nil
}

// Acquire claims app for rj. It returns the holder after the call: rj itself
// when it now holds the claim (or already did), another RestoreJob otherwise.
func Acquire(ctx context.Context, c client.Client, rj *backupsv1alpha1.RestoreJob, app string) (*Holder, error) {
	holder := rj.Name
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rj.Namespace,
			Name:      LeaseName(app),
			Labels: map[string]string{
				ComponentLabel:                       ComponentValue,
				backupsv1alpha1.ApplicationNameLabel: app,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: backupsv1alpha1.GroupVersion.String(),
				Kind:       "RestoreJob",
				Name:       rj.Name,
				UID:        rj.UID,
			}},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	err := c.Create(ctx, lease)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("claim %s/%s: %w", rj.Namespace, app, err)
	}
	// Read back through the API server: the create either made our Lease
	// or lost to an existing one, and only the stored object says whose.
	return Get(ctx, c, rj.Namespace, app)
}

// Release drops rj's claim on app. It never deletes another job's claim: the
// delete is conditioned on the Lease's UID after checking its owner.
func Release(ctx context.Context, c client.Client, rj *backupsv1alpha1.RestoreJob, app string) error {
	var lease coordinationv1.Lease
	err := c.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: LeaseName(app)}, &lease)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read restore claim on %s/%s: %w", rj.Namespace, app, err)
	}
	if !ownedBy(&lease, rj) {
		return nil
	}
	err = c.Delete(ctx, &lease, client.Preconditions{UID: &lease.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("release restore claim on %s/%s: %w", rj.Namespace, app, err)
	}
	return nil
}

// HeldBy reports whether h is rj.
func (h *Holder) HeldBy(rj *backupsv1alpha1.RestoreJob) bool {
	return h != nil && h.Name == rj.Name && (h.UID == "" || h.UID == rj.UID)
}

func ownedBy(lease *coordinationv1.Lease, rj *backupsv1alpha1.RestoreJob) bool {
	for _, ref := range lease.OwnerReferences {
		if ref.Kind == "RestoreJob" && ref.UID == rj.UID {
			return true
		}
	}
	return false
}
