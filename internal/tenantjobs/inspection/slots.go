package inspection

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
)

// Inspection slots: an upgrade finds every existing Backup uninspected,
// so at most MaxJobs inspections run at once across the cluster, and at
// most MaxJobsPerNamespace of one namespace, so one tenant's Backups
// never hold every slot. Only the driver's own running inspection Jobs
// take a slot: a tenant can create Jobs with the inspection label, an
// owner reference to its Backups and a name of the driver's form (and
// suspend them), and those count for nothing.

// slotRecheck is how soon a Backup waiting for an inspection slot looks
// again.
const slotRecheck = 20 * time.Second

// waitForSlot says why a new inspection in namespace ns must wait, or ""
// when a slot is free.
func (r *Reconciler) waitForSlot(ctx context.Context, ns string) (string, error) {
	total, inNamespace, err := r.running(ctx, ns)
	if err != nil {
		return "", err
	}
	if limit := max(r.MaxJobs, 1); total >= limit {
		return fmt.Sprintf("%d inspections may run at once (--max-inspection-jobs)", limit), nil
	}
	if limit := r.MaxJobsPerNamespace; limit > 0 && inNamespace >= limit {
		return fmt.Sprintf("%d inspections of namespace %s run and at most %d of one namespace run at once (--max-inspection-jobs-per-namespace)",
			inNamespace, ns, limit), nil
	}
	return "", nil
}

// running counts the driver's own inspection Jobs that have not ended:
// across the cluster, and in namespace ns.
func (r *Reconciler) running(ctx context.Context, ns string) (total, inNamespace int, err error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.HasLabels{backupsv1alpha1.InspectionLabel}); err != nil {
		return 0, 0, fmt.Errorf("list inspection Jobs: %w", err)
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if o, _ := tenantjobs.OutcomeOf(j); o != tenantjobs.Running || j.DeletionTimestamp != nil {
			continue
		}
		mine, err := r.made(ctx, j)
		if err != nil {
			return 0, 0, err
		}
		if !mine {
			continue
		}
		total++
		if j.Namespace == ns {
			inNamespace++
		}
	}
	return total, inNamespace, nil
}

// made reports whether j is an inspection Job the driver made: the
// Backup its owner reference names exists with that UID, j has the
// keyed name of that Backup's inspection (which only the driver can
// compute), and j is exactly the Job the driver builds for it
// (tenantjobs.Mine).
func (r *Reconciler) made(ctx context.Context, j *batchv1.Job) (bool, error) {
	var owner *metav1.OwnerReference
	for i, ref := range j.OwnerReferences {
		if ref.Kind == "Backup" && ref.APIVersion == backupsv1alpha1.GroupVersion.String() {
			owner = &j.OwnerReferences[i]
			break
		}
	}
	if owner == nil {
		return false, nil
	}
	var b backupsv1alpha1.Backup
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: owner.Name}, &b); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read Backup %s/%s of inspection Job %s: %w", j.Namespace, owner.Name, j.Name, err)
	}
	if b.UID != owner.UID {
		return false, nil
	}
	name, err := r.jobName(ctx, &b)
	if err != nil {
		return false, err
	}
	if j.Name != name {
		return false, nil
	}
	policy, err := strategypolicy.Of(ctx, r.Client, b.Spec.StrategyRef.Name)
	if err != nil {
		return false, err
	}
	spec, err := r.spec(&b, name, policy)
	if err != nil {
		return false, nil
	}
	return tenantjobs.Mine(j, Build(spec)), nil
}
