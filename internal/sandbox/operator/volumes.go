package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// claimUIDFile marks which PersistentVolumeClaim (by UID) a volume folder
// belongs to, so that a claim deleted and re-created under the same name
// never sees its predecessor's data.
const claimUIDFile = ".sandbox-claim-uid"

// Volumes stands in for the storage behind the PersistentVolumeClaims that
// Pods mount (the staging Job's claim, a restore's source claim): one
// folder per claim, <Root>/<namespace>/<claim>/, created when first
// mounted and removed once the claim is gone. The claims themselves stay
// Pending (no provisioner); member data claims are the Fleet's.
type Volumes struct {
	// Root holds one folder per namespace, one per claim inside it.
	Root string
}

// Path is the folder that stands for the claim ns/claim.
func (v *Volumes) Path(ns, claim string) string {
	return filepath.Join(v.Root, ns, claim)
}

// Mount returns the folder of pvc, creating it empty when it does not exist
// or belongs to an earlier claim of the same name.
func (v *Volumes) Mount(pvc *corev1.PersistentVolumeClaim) (string, error) {
	dir := v.Path(pvc.Namespace, pvc.Name)
	if owner, err := os.ReadFile(filepath.Join(dir, claimUIDFile)); err == nil && types.UID(owner) == pvc.UID {
		return dir, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clear the volume of a former claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, claimUIDFile), []byte(pvc.UID), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// Resolve maps a path inside the claim pvc (a Pod's subPath, a restore's
// subPath) to the local file, refusing one that escapes the claim.
func (v *Volumes) Resolve(pvc *corev1.PersistentVolumeClaim, subPath string) (string, error) {
	dir, err := v.Mount(pvc)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, subPath)
	if p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return "", fmt.Errorf("subPath %q leaves the volume of claim %s/%s", subPath, pvc.Namespace, pvc.Name)
	}
	return p, nil
}

// volumeReclaimer removes a claim's folder once the claim is deleted, as
// the Delete reclaim policy of a dynamically provisioned volume does. The
// PVC-protection controller (kube-controller-manager) holds the claim while
// a Pod that is not terminal uses it.
type volumeReclaimer struct {
	client  client.Client
	volumes *Volumes
}

func (r *volumeReclaimer) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-volume-reclaimer").
		For(&corev1.PersistentVolumeClaim{}).
		Complete(r)
}

// Reconcile drops the folder of a claim that no longer exists, or whose
// folder belongs to an earlier claim of the same name.
func (r *volumeReclaimer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dir := r.volumes.Path(req.Namespace, req.Name)
	var pvc corev1.PersistentVolumeClaim
	err := r.client.Get(ctx, req.NamespacedName, &pvc)
	if err != nil && !isNotFound(err) {
		return ctrl.Result{}, err
	}
	if err == nil {
		return ctrl.Result{}, nil
	}
	if _, statErr := os.Stat(dir); statErr != nil {
		return ctrl.Result{}, nil
	}
	logf.FromContext(ctx).V(1).Info("claim deleted: removing its volume", "dir", dir)
	return ctrl.Result{}, os.RemoveAll(dir)
}
