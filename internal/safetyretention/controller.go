package safetyretention

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "safety-retention"

// Reconciler applies the retention to one namespace at a time (the request's
// name is ignored).
type Reconciler struct {
	Client client.Client
	// Keys verify the safety Backups.
	Keys provenance.Keys
	// Keep is how many safety Backups are kept per application; 0 means
	// DefaultKeep, a negative value disables the retention.
	Keep int
}

// +kubebuilder:rbac:groups=backups.cozystack.io,resources=backups,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=restorejobs,verbs=get;list;watch

// Reconcile deletes the safety Backups of req's namespace beyond the
// retention.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	keep := r.Keep
	if keep < 0 {
		return ctrl.Result{}, nil
	}
	if keep == 0 {
		keep = DefaultKeep
	}
	var backups backupsv1alpha1.BackupList
	if err := r.Client.List(ctx, &backups, client.InNamespace(req.Namespace), client.MatchingLabelsSelector{Selector: safetySelector()}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list safety Backups in %s: %w", req.Namespace, err)
	}
	protected, err := r.protected(ctx, req.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	var cands []Candidate
	byName := map[string]*backupsv1alpha1.Backup{}
	for i := range backups.Items {
		b := &backups.Items[i]
		if b.DeletionTimestamp != nil {
			continue
		}
		v, err := provenance.Verify(ctx, r.Keys, b)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !v.Verified {
			continue
		}
		if b.Labels[backupsv1alpha1.RestoreJobUIDLabel] != "" && protected["uid:"+b.Labels[backupsv1alpha1.RestoreJobUIDLabel]] {
			protected[b.Name] = true
		}
		cands = append(cands, Candidate{Name: b.Name, Application: v.Facts.Application, TakenAt: v.TakenAt()})
		byName[b.Name] = b
	}
	for _, name := range Select(cands, protected, keep) {
		b := byName[name]
		err := r.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID, ResourceVersion: &b.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("delete safety Backup %s/%s: %w", b.Namespace, name, err)
		}
		if err == nil {
			log.FromContext(ctx).Info("deleted a safety Backup beyond the retention", "backup", name, "keep", keep)
		}
	}
	return ctrl.Result{}, nil
}

// protected are the Backups that RestoreJobs of ns still pin name (by
// name), and those jobs' UIDs (as "uid:<uid>", for their own safety
// Backups): unfinished jobs, jobs being deleted, and failed ones that left
// the cluster deleted (RestoreJob.PinsBackups) until a person deletes them.
func (r *Reconciler) protected(ctx context.Context, ns string) (map[string]bool, error) {
	var jobs backupsv1alpha1.RestoreJobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list RestoreJobs in %s: %w", ns, err)
	}
	p := map[string]bool{}
	for _, rj := range jobs.Items {
		if !rj.PinsBackups() && rj.DeletionTimestamp == nil {
			continue
		}
		p[rj.Spec.BackupRef.Name] = true
		p["uid:"+string(rj.UID)] = true
	}
	return p, nil
}

func safetySelector() labels.Selector {
	req, _ := labels.NewRequirement(backupsv1alpha1.SafetyBackupLabel, selection.Exists, nil)
	return labels.NewSelector().Add(*req)
}

// SetupWithManager runs the retention on every change to a safety Backup
// and whenever a RestoreJob changes (one that ends releases what it held).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	isSafety := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[backupsv1alpha1.SafetyBackupLabel]
		return ok
	})
	namespaceOf := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: "-"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&backupsv1alpha1.Backup{}, namespaceOf, builder.WithPredicates(isSafety)).
		Watches(&backupsv1alpha1.RestoreJob{}, namespaceOf).
		Complete(r)
}
