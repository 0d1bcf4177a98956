package restore

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
)

// The Kamaji control planes storing in the etcd are fenced (read-only)
// before the safety snapshot, so it holds their last write and nothing is
// written after it; their kube-apiservers are restarted once the restored
// (or rolled-back) cluster is healthy, and the fence is lifted on every
// way out. The control planes fenced are written down in a record in the
// driver's namespace before the fence, and the fence on each
// TenantControlPlane (internal/cpfence), so a restarted driver finds them,
// the hand-back lifts exactly those, and a deleted RestoreJob lifts them
// in its hand-back.

// restartPoll is how often a restart is looked at: Pods are not watched.
const restartPoll = 3 * time.Second

// decideFence returns done when every control plane storing in the etcd is
// fenced by this job and Kamaji enforces it, or when there is nothing to
// fence; otherwise the step (fence, or wait for Kamaji).
func decideFence(o *observation) (decision, bool) {
	if !o.opts.Fences() || len(o.planes.Items) == 0 {
		return decision{}, true
	}
	for i := range o.planes.Items {
		t := &o.planes.Items[i]
		if cpfence.FencedBy(t) != o.job.UID || !cpfence.Fenced(t) {
			return decision{state: stateFence, reason: backupsv1alpha1.ReasonFencingControlPlanes, message: fmt.Sprintf(
				"making the Kamaji control planes %s read-only (spec.writePermissions) before the live cluster is snapshot and replaced",
				strings.Join(o.planes.Names(), ", "))}, false
		}
	}
	var waiting []string
	for i := range o.planes.Items {
		if t := &o.planes.Items[i]; !cpfence.Acknowledged(t) {
			waiting = append(waiting, fmt.Sprintf("%s (%s)", cpfence.Key(t), versionStatus(t)))
		}
	}
	if len(waiting) > 0 {
		return decision{state: stateWaitFence, reason: backupsv1alpha1.ReasonFencingControlPlanes, message: fmt.Sprintf(
			"waiting for Kamaji to report control planes %s WriteLimited before anything is touched", strings.Join(waiting, ", "))}, false
	}
	return decision{}, true
}

func versionStatus(t *kamajiv1alpha1.TenantControlPlane) string {
	if s := t.Status.KubernetesResources.Version.Status; s != "" {
		return s
	}
	return "no status yet"
}

// fencedByUs are the control planes this job fenced (by its record).
func fencedByUs(o *observation) []*kamajiv1alpha1.TenantControlPlane {
	return o.planes.FencedBy(o.job.UID)
}

// decidePlanesBack is the hand-back of the control planes: restart them on
// a healthy cluster this job re-created, then lift the fence. ok is false
// when there is nothing left to do.
func decidePlanesBack(o *observation) (decision, bool) {
	fenced := fencedByUs(o)
	if len(fenced) == 0 {
		return decision{}, false
	}
	if restartDue(o) {
		var waiting []string
		for _, t := range fenced {
			switch cpfence.RestartProgress(t, o.planePods[cpfence.Key(t)], o.now) {
			case cpfence.NotRestarted:
				return decision{state: stateRestartControlPlanes}, true
			case cpfence.Restarting:
				waiting = append(waiting, cpfence.Key(t))
			}
		}
		if len(waiting) > 0 {
			return decision{state: stateWaitRestart, deadline: o.now.Add(restartPoll)}, true
		}
	}
	return decision{state: stateLiftFence}, true
}

// restartDue: the kube-apiservers are restarted when the cluster under them
// was replaced and is healthy again (restored or rolled back).
func restartDue(o *observation) bool {
	return committed(o) && o.cluster != nil && recreatedBy(o) && (healthy(o.cluster) || sealed(o))
}

// setPlaneMilestones writes ControlPlanesFenced and ControlPlanesRestarted
// from what is observed.
func setPlaneMilestones(st *backupsv1alpha1.RestoreJobStatus, o *observation, heldByUs bool) {
	cur := meta.FindStatusCondition(st.Conditions, backupsv1alpha1.RestoreConditionControlPlanesFenced)
	fenced := fencedByUs(o)
	switch {
	case len(fenced) > 0 && allAcknowledged(fenced):
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesFenced, metav1.ConditionTrue, backupsv1alpha1.ReasonControlPlanesFenced,
			fmt.Sprintf("control planes %s are read-only (Kamaji writePermissions) until the restore ends; their prior permissions are kept in annotation %s",
				keys(fenced), backupsv1alpha1.PriorWritePermissionsAnnotation))
	case len(fenced) == 0 && cur != nil && cur.Status == metav1.ConditionTrue && decidedOutcome(o):
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesFenced, metav1.ConditionFalse, backupsv1alpha1.ReasonFenceLifted,
			"the fence is lifted: the control planes have the write permissions they had before the restore")
	case cur == nil && heldByUs && !o.opts.Fences():
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesFenced, metav1.ConditionFalse, backupsv1alpha1.ReasonFenceDisabled,
			"spec.options.fenceControlPlanes is false: Kamaji control planes storing in this etcd keep serving and writing during the restore")
	case cur == nil && heldByUs && len(o.planes.Items) == 0:
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesFenced, metav1.ConditionFalse, backupsv1alpha1.ReasonNoControlPlanes,
			fmt.Sprintf("no Kamaji DataStore pointing at %s is used by a TenantControlPlane: nothing to fence or restart", cpfence.Endpoint(o.job.Namespace)))
	}
	var done, waiting, late []string
	for _, t := range fenced {
		switch cpfence.RestartProgress(t, o.planePods[cpfence.Key(t)], o.now) {
		case cpfence.Restarted:
			done = append(done, cpfence.Key(t))
		case cpfence.Restarting:
			waiting = append(waiting, cpfence.Key(t))
		case cpfence.RestartTimedOut:
			late = append(late, cpfence.Key(t))
		}
	}
	switch {
	case len(late) > 0:
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesRestarted, metav1.ConditionFalse, backupsv1alpha1.ReasonControlPlanesNotRestarted,
			fmt.Sprintf("Kamaji did not bring control planes %s back within %s; their kube-apiservers may still serve caches from before the restore: delete their Pods (labels %s=<name>, %s=%s)",
				strings.Join(late, ", "), cpfence.RestartTimeout, kamajiv1alpha1.NameLabel, kamajiv1alpha1.ComponentLabel, kamajiv1alpha1.ComponentDeployment))
	case len(waiting) > 0:
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesRestarted, metav1.ConditionFalse, backupsv1alpha1.ReasonRestartingControlPlanes,
			"restarting the kube-apiservers of "+strings.Join(waiting, ", ")+" on the restored etcd")
	case len(done) > 0:
		setCondition(st, backupsv1alpha1.RestoreConditionControlPlanesRestarted, metav1.ConditionTrue, backupsv1alpha1.ReasonControlPlanesRestarted,
			"the kube-apiservers of "+strings.Join(done, ", ")+" were restarted on the restored etcd and are Ready")
	}
}

func allAcknowledged(ts []*kamajiv1alpha1.TenantControlPlane) bool {
	for _, t := range ts {
		if !cpfence.Acknowledged(t) {
			return false
		}
	}
	return true
}

func keys(ts []*kamajiv1alpha1.TenantControlPlane) string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, cpfence.Key(t))
	}
	return strings.Join(out, ", ")
}

// fence makes every control plane storing in the etcd read-only, each
// written down in the job's record first.
func (r *Reconciler) fence(ctx context.Context, o *observation) error {
	return cpfence.FenceAll(ctx, r.Client, r.Namespace, o.job, o.planes)
}

// restartPlanes restarts the kube-apiservers of the fenced control planes
// not restarted yet.
func (r *Reconciler) restartPlanes(ctx context.Context, o *observation) error {
	for _, t := range fencedByUs(o) {
		pods := o.planePods[cpfence.Key(t)]
		if cpfence.RestartProgress(t, pods, o.now) != cpfence.NotRestarted {
			continue
		}
		if err := cpfence.Restart(ctx, r.Client, t, pods, o.now); err != nil {
			return err
		}
		r.event(o, backupsv1alpha1.ReasonRestartingControlPlanes, fmt.Sprintf(
			"restarting the kube-apiserver of control plane %s (%d Pod(s)) on the restored etcd", cpfence.Key(t), len(pods)), false)
	}
	return nil
}

// liftFence gives every control plane this job fenced its prior
// permissions back.
func (r *Reconciler) liftFence(ctx context.Context, o *observation) error {
	for _, t := range fencedByUs(o) {
		if err := cpfence.Lift(ctx, r.Client, t, o.job.UID); err != nil {
			return err
		}
		r.event(o, backupsv1alpha1.ReasonFenceLifted, "control plane "+cpfence.Key(t)+" has its write permissions back", false)
	}
	return nil
}

// observePlanes finds the Kamaji control planes storing in the target
// etcd (and any this job fenced), and, once the outcome is decided, the
// Pods of those it fenced (read from the API server: Pods are not cached).
// No Kamaji installed means no control planes, known from the CRDs the
// Schema follows without a request (the client would ask the API
// server's discovery again at each lookup of a kind it does not know).
func (r *Reconciler) observePlanes(ctx context.Context, o *observation) error {
	if !controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) {
		return nil
	}
	if installed, err := r.kamajiInstalled(ctx); err != nil || !installed {
		if err != nil {
			return fmt.Errorf("tell whether Kamaji is installed (its control planes are fenced before a purge): %w", err)
		}
		return nil
	}
	rec, err := cpfence.ReadRecord(ctx, r.Reader, r.Namespace, o.job)
	if err != nil {
		return err
	}
	planes, err := cpfence.Find(ctx, r.Reader, &r.sharing, r.LiveReader, o.job.Namespace, o.job.UID, rec)
	if meta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	o.planes = planes
	if !decidedOutcome(o) {
		return nil
	}
	for _, t := range planes.FencedBy(o.job.UID) {
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
