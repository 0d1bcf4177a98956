package keeper

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// baseGone stops the capture of a Plan left without a base: the Backup
// its chain follows was deleted (its chain is deleted with it,
// internal/backupdeletion) or is no longer good, and no other base
// replaces it. Left running, the capture would go on writing into the
// prefix of a chain nobody can restore from and nobody will delete. The
// record stays and says so, without a window (nothing is recoverable),
// and the lag goes on counting; the Plan's next
// good, inspected Backup starts the capture again (ensure makes the
// Deployment and its grant anew).
func (r *Reconciler) baseGone(ctx context.Context, p *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress, sp strategypolicy.Policy) error {
	if err := r.removeWorkload(ctx, rec); err != nil {
		return err
	}
	log.FromContext(ctx).Info("the chain's base Backup is gone and no other remains; capture stopped", "record", rec.Name, "base", rec.Spec.BaseBackup)
	lags.set(p.Namespace, p.Name, reference(rec.Status.Window, rec), sp.PointInTime.MaxLag)
	msg := fmt.Sprintf("Backup %s, the base of the chain, is gone or no longer good, and the Plan has no other good, inspected Backup: "+
		"the capture is stopped until the next one", rec.Spec.BaseBackup)
	// Nothing is recoverable without a base: no window is shown.
	before := rec.DeepCopy()
	rec.Status.Window = nil
	return r.setCondition(ctx, p, rec, before, metav1.ConditionFalse, driverv1alpha1.CaptureReasonBaseGone, msg)
}
