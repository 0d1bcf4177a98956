package restore

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/stagingjob"
)

// observePlanes finds the Kamaji control planes storing in the target
// etcd (and any this job fenced), and, once the outcome is decided, the
// Pods of those it fenced (read from the API server: Pods are not cached).
// No Kamaji installed means no control planes.
func (r *Reconciler) observePlanes(ctx context.Context, o *observation) error {
	if !controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) {
		return nil
	}
	planes, err := cpfence.Find(ctx, r.Reader, o.job.Namespace, o.job.UID)
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	o.planes = planes
	if outcomeOf(o.job) == nil {
		return nil
	}
	for i := range planes.Items {
		t := &planes.Items[i]
		if cpfence.FencedBy(t) != o.job.UID {
			continue
		}
		var pods corev1.PodList
		if err := r.LiveReader.List(ctx, &pods, client.InNamespace(t.Namespace), cpfence.PodLabels(t.Name)); err != nil {
			return fmt.Errorf("list the Pods of control plane %s: %w", cpfence.Key(t), err)
		}
		if o.planePods == nil {
			o.planePods = map[string][]corev1.Pod{}
		}
		o.planePods[cpfence.Key(t)] = pods.Items
	}
	return nil
}

// observeStaging reads the restore's staging Job and, when it failed, what
// its Pods said.
func (r *Reconciler) observeStaging(ctx context.Context, o *observation) error {
	j := &batchv1.Job{}
	found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: stagingjob.Name(o.job.UID)}, j)
	if err != nil || !found {
		return err
	}
	if j.Labels[backupsv1alpha1.StagingLabel] != string(o.job.UID) {
		o.stagingConflict = fmt.Sprintf("Job %s/%s exists and is not this RestoreJob's staging Job", j.Namespace, j.Name)
		return nil
	}
	o.staging = j
	if outcomeOf(o.job) == nil {
		// The claim is read live (the PVC cache holds member PVCs only):
		// a Job without its claim would never run.
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, pvc)
		switch {
		case err == nil:
			o.stagingClaim = pvc.Labels[backupsv1alpha1.StagingLabel] == string(o.job.UID)
			if !o.stagingClaim {
				o.stagingConflict = fmt.Sprintf("PersistentVolumeClaim %s/%s exists and is not this RestoreJob's staging claim", j.Namespace, j.Name)
			}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("read staging PersistentVolumeClaim %s/%s: %w", j.Namespace, j.Name, err)
		}
	}
	if out, _ := stagingjob.OutcomeOf(j); out != stagingjob.Refused && out != stagingjob.Failed {
		return nil
	}
	var pods corev1.PodList
	if err := r.LiveReader.List(ctx, &pods, client.InNamespace(j.Namespace),
		client.MatchingLabels{backupsv1alpha1.StagingLabel: string(o.job.UID)}); err != nil {
		return fmt.Errorf("list the Pods of staging Job %s: %w", j.Name, err)
	}
	for i := range pods.Items {
		if reason, msg := stagingjob.PodReport(&pods.Items[i]); msg != "" {
			o.stagingReport = msg
			if reason != "" {
				o.stagingReport = reason + ": " + msg
			}
		}
	}
	return nil
}
