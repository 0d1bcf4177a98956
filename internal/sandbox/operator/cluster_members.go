package operator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// peerURLAnnotation records the loopback peer URL the stand-in gave a
// member (a real member's peer URL is its DNS name; ours is a port).
const peerURLAnnotation = "sandbox.etcd-operator.cozystack.io/peer-url"

// learnerRetry is how soon a learner that has not caught up is promoted
// again; etcd, not the API server, knows when it can be.
const learnerRetry = 100 * time.Millisecond

// bootstrap creates the seed: the one member that founds the cluster alone
// (--initial-cluster of itself, state new) and, when the cluster restores,
// the only one that carries spec.bootstrap.restore.
func (r *clusterReconciler) bootstrap(ctx context.Context, c *etcdv1alpha2.EtcdCluster) (ctrl.Result, error) {
	if r.faults.claimBootstrapFailure(clusterKey(c), c.UID) {
		logf.FromContext(ctx).Info("injecting a bootstrap failure (Faults.FailBootstrap)")
	}
	peer, err := etcdproc.FreeURL()
	if err != nil {
		return ctrl.Result{}, err
	}
	m := r.newMember(c, peer)
	m.Spec.Bootstrap = true
	m.Spec.InitialCluster = m.Name + "=" + peer
	if b := c.Spec.Bootstrap; b != nil && b.Restore != nil {
		m.Spec.Restore = b.Restore.DeepCopy()
	}
	if err := r.client.Create(ctx, m); err != nil {
		return ctrl.Result{}, fmt.Errorf("create seed member of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return r.untilDeadline(c), nil
}

// discover latches the cluster ID once the seed answers MemberList with
// itself alone: Available=True/ClusterDiscovered, before any other member
// exists and with readyMembers still 0.
func (r *clusterReconciler) discover(ctx context.Context, c *etcdv1alpha2.EtcdCluster, seed *etcdmember.EtcdMember) (ctrl.Result, error) {
	if !memberReady(seed) {
		msg := fmt.Sprintf("seed member %q is not serving yet", seed.Name)
		if cd := meta.FindStatusCondition(seed.Status.Conditions, etcdmember.ConditionReady); cd != nil && cd.Message != "" {
			msg += ": " + cd.Message
		}
		return r.untilDeadline(c), r.setConditions(ctx, c, cond(etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reasonWaitingForSeed, msg))
	}
	cli, err := r.etcdClient(c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer cli.Close()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := cli.MemberList(lctx)
	if err != nil {
		return ctrl.Result{}, r.setConditions(ctx, c, cond(etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonClusterUnreachable, "MemberList failed: "+err.Error()))
	}
	if len(list.Members) != 1 {
		return ctrl.Result{RequeueAfter: learnerRetry}, nil
	}
	base := c.DeepCopy()
	c.Status.ClusterID = fmt.Sprintf("%016x", list.Header.ClusterId)
	setCondition(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, etcdv1alpha2.ReasonClusterDiscovered,
		fmt.Sprintf("etcd cluster %s discovered", c.Status.ClusterID))
	if err := r.patchStatus(ctx, c, base); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{Requeue: true}, r.publishEndpoints(ctx, c)
}

// scaleUp registers one more member with etcd as a learner and then creates
// its EtcdMember, whose controller starts it joining.
func (r *clusterReconciler) scaleUp(ctx context.Context, c *etcdv1alpha2.EtcdCluster, running []etcdmember.EtcdMember) (ctrl.Result, error) {
	cli, err := r.etcdClient(c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer cli.Close()
	if err := r.removeStrayLearners(ctx, cli, running); err != nil {
		return ctrl.Result{}, err
	}
	peer, err := etcdproc.FreeURL()
	if err != nil {
		return ctrl.Result{}, err
	}
	m := r.newMember(c, peer)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	added, err := cli.MemberAddAsLearner(actx, []string{peer})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("add member %s as learner: %w", m.Name, err)
	}
	var parts []string
	for _, em := range added.Members {
		name := em.Name
		if em.ID == added.Member.ID {
			name = m.Name
		}
		if name != "" && len(em.PeerURLs) > 0 {
			parts = append(parts, name+"="+em.PeerURLs[0])
		}
	}
	sort.Strings(parts)
	m.Spec.InitialCluster = strings.Join(parts, ",")
	r.faults.claimJoinFailure(clusterKey(c), client.ObjectKeyFromObject(m))
	if err := r.client.Create(ctx, m); err != nil {
		// The learner is removed as a stray on the next scale-up.
		return ctrl.Result{}, fmt.Errorf("create member %s: %w", m.Name, err)
	}
	return r.untilDeadline(c), nil
}

// removeStrayLearners removes learners no EtcdMember stands for (a member
// whose creation failed after it was registered), which would otherwise
// never be promoted.
func (r *clusterReconciler) removeStrayLearners(ctx context.Context, cli *clientv3.Client, running []etcdmember.EtcdMember) error {
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	known := map[string]bool{}
	for _, m := range running {
		known[m.Annotations[peerURLAnnotation]] = true
	}
	for _, em := range list.Members {
		if em.IsLearner && len(em.PeerURLs) > 0 && !known[em.PeerURLs[0]] {
			if _, err := cli.MemberRemove(ctx, em.ID); err != nil {
				return fmt.Errorf("remove stray learner %x: %w", em.ID, err)
			}
		}
	}
	return nil
}

// promoteLearners promotes a learner that has caught up; acted is true
// when there was one (promoted or not yet promotable).
func (r *clusterReconciler) promoteLearners(ctx context.Context, c *etcdv1alpha2.EtcdCluster, running []etcdmember.EtcdMember) (ctrl.Result, bool, error) {
	cli, err := r.etcdClient(c)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return ctrl.Result{}, false, fmt.Errorf("member list: %w", err)
	}
	for _, em := range list.Members {
		if !em.IsLearner {
			continue
		}
		if _, err := cli.MemberPromote(ctx, em.ID); err != nil {
			logf.FromContext(ctx).V(1).Info("learner not promotable yet", "id", fmt.Sprintf("%016x", em.ID), "error", err.Error())
			return ctrl.Result{RequeueAfter: learnerRetry}, true, nil
		}
		for i := range running {
			if len(em.PeerURLs) > 0 && running[i].Annotations[peerURLAnnotation] == em.PeerURLs[0] {
				if err := r.markVoter(ctx, &running[i]); err != nil {
					return ctrl.Result{}, true, err
				}
			}
		}
		return ctrl.Result{Requeue: true}, true, nil
	}
	return ctrl.Result{}, false, nil
}

func (r *clusterReconciler) markVoter(ctx context.Context, m *etcdmember.EtcdMember) error {
	base := m.DeepCopy()
	m.Status.IsVoter = true
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, m, client.MergeFrom(base)))
}

// scaleDown deletes the newest member that is not the seed; its finalizer
// removes it from etcd.
func (r *clusterReconciler) scaleDown(ctx context.Context, c *etcdv1alpha2.EtcdCluster, running []etcdmember.EtcdMember) (ctrl.Result, error) {
	candidates := slices.DeleteFunc(slices.Clone(running), func(m etcdmember.EtcdMember) bool { return m.Spec.Bootstrap })
	if len(candidates) == 0 {
		return r.untilDeadline(c), nil
	}
	slices.SortFunc(candidates, func(a, b etcdmember.EtcdMember) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
	victim := candidates[0]
	if err := r.client.Delete(ctx, &victim); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("delete member %s: %w", victim.Name, err)
	}
	return r.untilDeadline(c), nil
}

// newMember is an EtcdMember of c with the operator's labels (and the
// cluster's additionalMetadata, the operator's keys winning), owned by c.
// Names are <cluster>-<random>, as the operator's generateName gives them.
func (r *clusterReconciler) newMember(c *etcdv1alpha2.EtcdCluster, peerURL string) *etcdmember.EtcdMember {
	name := c.Name + "-" + rand.String(5)
	labels, annotations := withAdditionalMetadata(memberLabels(c.Name, name), c.Spec.AdditionalMetadata)
	annotations[peerURLAnnotation] = peerURL
	m := &etcdmember.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: labels, Annotations: annotations},
		Spec: etcdmember.Spec{
			ClusterName:  c.Name,
			Version:      c.Status.Observed.Version,
			Storage:      c.Status.Observed.Storage,
			Options:      c.Spec.Options.DeepCopy(),
			ClusterToken: c.Status.ClusterToken,
		},
	}
	// The cluster is in r.client's scheme, so this cannot fail.
	_ = controllerutil.SetControllerReference(c, m, r.client.Scheme())
	return m
}

// etcdClient reaches this incarnation's live members.
func (r *clusterReconciler) etcdClient(c *etcdv1alpha2.EtcdCluster) (*clientv3.Client, error) {
	eps := r.fleet.endpointsOf(c.UID)
	if len(eps) == 0 {
		return nil, fmt.Errorf("no member of %s/%s is running", c.Namespace, c.Name)
	}
	return etcdproc.Client(eps...)
}

// memberLabels are the operator's labels on a member and its PVC.
func memberLabels(cluster, member string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "etcd",
		etcdmember.InstanceLabel:       cluster,
		"app.kubernetes.io/managed-by": "etcd-operator",
		etcdmember.ClusterLabel:        cluster,
		etcdmember.ComponentLabel:      member,
	}
}

// withAdditionalMetadata merges a cluster's additionalMetadata under the
// operator's own labels, which win on collision.
func withAdditionalMetadata(own map[string]string, extra *etcdv1alpha2.AdditionalMetadata) (map[string]string, map[string]string) {
	labels, annotations := map[string]string{}, map[string]string{}
	if extra != nil {
		for k, v := range extra.Labels {
			labels[k] = v
		}
		for k, v := range extra.Annotations {
			annotations[k] = v
		}
	}
	for k, v := range own {
		labels[k] = v
	}
	return labels, annotations
}

func activeMembers(all []etcdmember.EtcdMember) []etcdmember.EtcdMember {
	var active []etcdmember.EtcdMember
	for _, m := range all {
		if m.DeletionTimestamp.IsZero() {
			active = append(active, m)
		}
	}
	return active
}

func seedOf(members []etcdmember.EtcdMember) *etcdmember.EtcdMember {
	for i := range members {
		if members[i].Spec.Bootstrap {
			return &members[i]
		}
	}
	return nil
}

func memberReady(m *etcdmember.EtcdMember) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, etcdmember.ConditionReady)
}

func allReady(members []etcdmember.EtcdMember) bool {
	for i := range members {
		if !memberReady(&members[i]) {
			return false
		}
	}
	return true
}

func joinComma(s []string) string { return strings.Join(s, ",") }

// isNotFound keeps callers short.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
