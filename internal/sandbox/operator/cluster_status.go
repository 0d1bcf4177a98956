package operator

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
)

// latchInitialSpec is the operator's first reconcile of a cluster: a
// cluster token, the spec latched into status.observed, and the progress
// deadline, in one status write.
func (r *clusterReconciler) latchInitialSpec(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	base := c.DeepCopy()
	if c.Status.ClusterToken == "" {
		c.Status.ClusterToken = c.Name + "-" + string(c.UID)
	}
	if c.Status.Observed == nil {
		r.latch(c)
		setCondition(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reasonInitialSnapshot,
			"snapshotted initial spec into status.observed")
	}
	return r.patchStatus(ctx, c, base)
}

// adoptSpec latches the current spec as the new target.
func (r *clusterReconciler) adoptSpec(ctx context.Context, c *etcdv1alpha2.EtcdCluster, reason, msg string) error {
	base := c.DeepCopy()
	r.latch(c)
	setCondition(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reason, msg)
	return r.patchStatus(ctx, c, base)
}

func (r *clusterReconciler) latch(c *etcdv1alpha2.EtcdCluster) {
	c.Status.Observed = &etcdv1alpha2.ObservedClusterSpec{Replicas: desiredReplicas(c), Version: c.Spec.Version, Storage: storageOf(c)}
	secs := etcdv1alpha2.DefaultProgressDeadlineSeconds
	if c.Spec.ProgressDeadlineSeconds != nil {
		secs = *c.Spec.ProgressDeadlineSeconds
	}
	deadline := metav1.NewTime(r.now().Add(time.Duration(secs) * time.Second))
	c.Status.ProgressDeadline = &deadline
}

// deadlinePassed: the operator gives up on the latched target at
// status.progressDeadline (and a user may set it in the past to abort).
func (r *clusterReconciler) deadlinePassed(c *etcdv1alpha2.EtcdCluster) bool {
	d := c.Status.ProgressDeadline
	return d != nil && !r.now().Before(d.Time)
}

// untilDeadline re-queues at the progress deadline, the one thing no watch
// announces.
func (r *clusterReconciler) untilDeadline(c *etcdv1alpha2.EtcdCluster) ctrl.Result {
	d := c.Status.ProgressDeadline
	if d == nil {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(d.Sub(r.now()), time.Millisecond)}
}

// deadlineExceeded is the operator's terminal path: a cluster that never
// formed is BootstrapFailed for good (delete and re-create it); a formed
// one is DeadlineExceeded until its spec changes, which retries.
func (r *clusterReconciler) deadlineExceeded(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	switch {
	case c.Status.ClusterID == "":
		return r.setConditions(ctx, c,
			cond(etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, etcdv1alpha2.ReasonBootstrapFailed,
				"bootstrap deadline exceeded; delete the cluster and recreate to recover"),
			cond(etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, etcdv1alpha2.ReasonBootstrapFailed,
				fmt.Sprintf("could not bootstrap %d-member cluster within deadline", c.Status.Observed.Replicas)))
	case specMatchesObserved(c):
		return r.setConditions(ctx, c,
			cond(etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, etcdv1alpha2.ReasonDeadlineExceeded,
				"deadline exceeded; edit spec to retry, or delete the cluster"),
			cond(etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, etcdv1alpha2.ReasonDeadlineExceeded,
				fmt.Sprintf("could not reach %d members within deadline", c.Status.Observed.Replicas)))
	default:
		return r.adoptSpec(ctx, c, reasonRetryAfterDeadline, "adopting updated spec after previous deadline")
	}
}

// reportStatus recounts ready members and sets Available/Degraded from
// them; once the target is reached it clears the deadline and reports
// Progressing=False/Reconciled. Like the operator, it runs only when every
// member of the target exists, which is why readyMembers is still 0 when a
// multi-member cluster is first discovered.
func (r *clusterReconciler) reportStatus(ctx context.Context, c *etcdv1alpha2.EtcdCluster, running []etcdmember.EtcdMember) (ctrl.Result, error) {
	base := c.DeepCopy()
	desired := c.Status.Observed.Replicas
	ready := int32(0)
	for _, m := range running {
		if memberReady(&m) {
			ready++
		}
	}
	c.Status.ReadyMembers = ready
	switch {
	case desired == 0:
		msg := "cluster is paused (spec.replicas=0); no data has been written (cluster never bootstrapped)"
		setCondition(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonPaused, msg)
		setCondition(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionFalse, reasonPaused, "")
		setCondition(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, reasonPaused, "")
		c.Status.ProgressDeadline = nil
	case ready == desired:
		setCondition(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, etcdv1alpha2.ReasonQuorumHealthy, "All members are ready")
		setCondition(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionFalse, etcdv1alpha2.ReasonQuorumHealthy, "")
	case ready > desired/2:
		msg := fmt.Sprintf("%d/%d members ready", ready, desired)
		setCondition(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, etcdv1alpha2.ReasonQuorumAvailable, msg)
		setCondition(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionTrue, reasonMembersUnhealthy, msg)
	default:
		setCondition(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonQuorumLost,
			fmt.Sprintf("%d/%d members ready, quorum lost", ready, desired))
		setCondition(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionTrue, reasonQuorumLost, "")
	}
	if desired > 0 && reconciliationComplete(c, running) {
		setCondition(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, reasonReconciled, "actual state matches status.observed")
		c.Status.ProgressDeadline = nil
	}
	if err := r.patchStatus(ctx, c, base); err != nil {
		return ctrl.Result{}, err
	}
	if desired > 0 {
		if err := r.publishEndpoints(ctx, c); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.untilDeadline(c), nil
}

// setConditions writes conditions, skipping a write that changes nothing.
func (r *clusterReconciler) setConditions(ctx context.Context, c *etcdv1alpha2.EtcdCluster, conds ...metav1.Condition) error {
	base := c.DeepCopy()
	for _, cd := range conds {
		setCondition(c, cd.Type, cd.Status, cd.Reason, cd.Message)
	}
	return r.patchStatus(ctx, c, base)
}

// patchStatus merge-patches the status when it changed. A merge patch
// leaves the upstream status fields this mirror does not know alone.
func (r *clusterReconciler) patchStatus(ctx context.Context, c, base *etcdv1alpha2.EtcdCluster) error {
	if equality.Semantic.DeepEqual(base.Status, c.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, c, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("status of EtcdCluster %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// setCondition stamps the generation, as the operator does on every
// condition, and keeps lastTransitionTime when the status does not change.
func setCondition(c *etcdv1alpha2.EtcdCluster, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation,
	})
}

func desiredReplicas(c *etcdv1alpha2.EtcdCluster) int32 {
	if c.Spec.Replicas != nil {
		return *c.Spec.Replicas
	}
	return defaultReplicas
}

func storageOf(c *etcdv1alpha2.EtcdCluster) etcdv1alpha2.StorageSpec {
	if c.Spec.Storage != nil {
		return *c.Spec.Storage.DeepCopy()
	}
	size := resource.MustParse("1Gi") // the CRD's default
	return etcdv1alpha2.StorageSpec{Size: &size}
}

// specMatchesObserved compares what the stand-in acts on: member count,
// version and volume size.
func specMatchesObserved(c *etcdv1alpha2.EtcdCluster) bool {
	o := c.Status.Observed
	if o == nil {
		return false
	}
	spec, latched := storageOf(c), o.Storage
	sameSize := (spec.Size == nil) == (latched.Size == nil) && (spec.Size == nil || spec.Size.Cmp(*latched.Size) == 0)
	return o.Replicas == desiredReplicas(c) && o.Version == c.Spec.Version && sameSize
}

// reconciliationComplete: every member of the target exists and is ready,
// and a cluster with members has its ID.
func reconciliationComplete(c *etcdv1alpha2.EtcdCluster, running []etcdmember.EtcdMember) bool {
	o := c.Status.Observed
	if o == nil || int32(len(running)) != o.Replicas {
		return false
	}
	if o.Replicas > 0 && c.Status.ClusterID == "" {
		return false
	}
	return allReady(running)
}
