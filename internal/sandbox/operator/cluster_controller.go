package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// defaultReplicas is the operator's default member count.
const defaultReplicas = 3

// ClusterReconciler plays the etcd-operator's EtcdCluster controller.
type ClusterReconciler struct {
	Client client.Client
	// APIReader reads Secrets live, as the kubelet would for a Pod.
	APIReader client.Reader
	Fleet     *Fleet
	// EtcdBinary is the etcd executable members run.
	EtcdBinary string
	// ProgressDeadline is how long a cluster may take to get its seed
	// running before it is BootstrapFailed (the operator's
	// progressDeadlineSeconds, default 600s).
	ProgressDeadline time.Duration
	// Now is the clock.
	Now func() time.Time

	// exits carries member process exits back into the work queue.
	exits chan event.TypedGenericEvent[*etcdv1alpha2.EtcdCluster]
}

// SetupWithManager registers the controller.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.exits = make(chan event.TypedGenericEvent[*etcdv1alpha2.EtcdCluster], 64)
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-operator-cluster").
		For(&etcdv1alpha2.EtcdCluster{}).
		WatchesRawSource(source.Channel(r.exits, &handler.TypedEnqueueRequestForObject[*etcdv1alpha2.EtcdCluster]{})).
		Complete(r)
}

// Reconcile takes one step towards spec.replicas healthy members.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c etcdv1alpha2.EtcdCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Fleet.teardown(req.NamespacedName)
			return ctrl.Result{}, r.deleteEndpoints(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		r.Fleet.teardown(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	rc := r.Fleet.get(req.NamespacedName)
	if rc != nil && rc.uid != c.UID {
		// A new incarnation under the same name: the old one's members
		// are gone with their owner.
		r.Fleet.teardown(req.NamespacedName)
		rc = nil
	}
	replicas := int32(defaultReplicas)
	if c.Spec.Replicas != nil {
		replicas = *c.Spec.Replicas
	}
	switch {
	case rc == nil:
		return r.startSeed(ctx, &c)
	case int32(len(rc.members)) < replicas:
		return r.addMember(ctx, &c, rc)
	default:
		return ctrl.Result{}, r.reportHealth(ctx, &c, rc, replicas)
	}
}

// startSeed restores (when asked) and starts the first member.
func (r *ClusterReconciler) startSeed(ctx context.Context, c *etcdv1alpha2.EtcdCluster) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable); cond != nil && cond.Reason == reasonBootstrapFailed {
		return ctrl.Result{}, nil // terminal: delete and re-create the cluster
	}
	key := client.ObjectKeyFromObject(c)
	rc := &runningCluster{uid: c.UID, dir: clusterDir(r.Fleet.Root, key, c.UID), token: c.Name + "-" + string(c.UID)}
	spec, err := r.memberSpec(rc, c.Name+"-0")
	if err != nil {
		return ctrl.Result{}, err
	}
	if b := c.Spec.Bootstrap; b != nil && b.Restore != nil && b.Restore.Source.S3 != nil {
		started := r.Now()
		err := seedRestore{reader: r.APIReader, ns: c.Namespace, src: b.Restore.Source.S3, dataDir: spec.DataDir,
			name: spec.Name, peerURL: spec.PeerURL, token: rc.token}.run(ctx)
		if err != nil {
			return r.seedFailed(ctx, c, fmt.Errorf("seed restore failed: %w", err))
		}
		log.Info("seed restored from S3", "key", b.Restore.Source.S3.Key, "took", r.Now().Sub(started).String())
	}
	spec.InitialCluster = spec.Name + "=" + spec.PeerURL
	m, err := r.startMember(ctx, c, spec)
	if err != nil {
		return r.seedFailed(ctx, c, err)
	}
	rc.members = []*etcdproc.Member{m}
	cli, err := clientFor(m.Spec.ClientURL)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		stopAll(rc.members)
		return ctrl.Result{}, fmt.Errorf("member list of seed: %w", err)
	}
	rc.clusterID = fmt.Sprintf("%x", list.Header.ClusterId)
	r.Fleet.put(key, rc)
	if err := r.publishEndpoints(ctx, c, rc); err != nil {
		return ctrl.Result{}, err
	}
	c.Status.ClusterID = rc.clusterID
	c.Status.ReadyMembers = 1
	r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, reasonClusterDiscovered, "seed member is serving")
	r.set(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reasonSpecChanged, "adding members")
	return ctrl.Result{RequeueAfter: time.Millisecond}, r.Client.Status().Update(ctx, c)
}

// seedFailed reports a seed that cannot start; past the progress deadline
// the cluster is BootstrapFailed for good.
func (r *ClusterReconciler) seedFailed(ctx context.Context, c *etcdv1alpha2.EtcdCluster, cause error) (ctrl.Result, error) {
	logf.FromContext(ctx).Info("seed member cannot start", "error", cause.Error())
	if r.Now().Sub(c.CreationTimestamp.Time) >= r.ProgressDeadline {
		msg := fmt.Sprintf("bootstrap did not finish within %s: %v", r.ProgressDeadline, cause)
		r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonBootstrapFailed, msg)
		r.set(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, reasonBootstrapFailed, msg)
		return ctrl.Result{}, r.Client.Status().Update(ctx, c)
	}
	r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonClusterUnreachable, cause.Error())
	r.set(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reasonWaitingForSeed, cause.Error())
	if err := r.Client.Status().Update(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	// The restore agent's Pod would be restarted with back-off.
	return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
}

// addMember grows the cluster by one: MemberAdd, then start it joining.
func (r *ClusterReconciler) addMember(ctx context.Context, c *etcdv1alpha2.EtcdCluster, rc *runningCluster) (ctrl.Result, error) {
	spec, err := r.memberSpec(rc, fmt.Sprintf("%s-%d", c.Name, len(rc.members)))
	if err != nil {
		return ctrl.Result{}, err
	}
	cli, err := clientFor(rc.endpoints()...)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer cli.Close()
	if _, err := cli.MemberAdd(ctx, []string{spec.PeerURL}); err != nil {
		return ctrl.Result{}, fmt.Errorf("member add %s: %w", spec.Name, err)
	}
	spec.InitialCluster = rc.initialCluster(&spec)
	spec.Existing = true
	m, err := r.startMember(ctx, c, spec)
	if err != nil {
		return ctrl.Result{}, err
	}
	rc.members = append(rc.members, m)
	if err := r.publishEndpoints(ctx, c, rc); err != nil {
		return ctrl.Result{}, err
	}
	c.Status.ReadyMembers = int32(len(rc.members))
	return ctrl.Result{RequeueAfter: time.Millisecond}, r.Client.Status().Update(ctx, c)
}

// reportHealth turns the members' liveness into the operator's conditions.
func (r *ClusterReconciler) reportHealth(ctx context.Context, c *etcdv1alpha2.EtcdCluster, rc *runningCluster, replicas int32) error {
	ready := int32(len(rc.endpoints()))
	quorum := int32(len(rc.members))/2 + 1
	c.Status.ReadyMembers = ready
	c.Status.ClusterID = rc.clusterID
	switch {
	case ready == int32(len(rc.members)) && ready >= replicas:
		r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, reasonQuorumHealthy, "all members are healthy")
		r.set(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionFalse, reasonQuorumHealthy, "all members are healthy")
		r.set(c, etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionFalse, reasonReconciled, "cluster matches its spec")
	case ready >= quorum:
		msg := fmt.Sprintf("%d of %d members are healthy", ready, len(rc.members))
		r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionTrue, reasonQuorumAvailable, msg)
		r.set(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionTrue, reasonMembersUnhealthy, msg)
	default:
		msg := fmt.Sprintf("only %d of %d members are healthy", ready, len(rc.members))
		r.set(c, etcdv1alpha2.ClusterConditionAvailable, metav1.ConditionFalse, reasonQuorumLost, msg)
		r.set(c, etcdv1alpha2.ClusterConditionDegraded, metav1.ConditionTrue, reasonQuorumLost, msg)
	}
	return r.Client.Status().Update(ctx, c)
}

func (r *ClusterReconciler) set(c *etcdv1alpha2.EtcdCluster, typ string, status metav1.ConditionStatus, reason, msg string) {
	c.Status.ObservedGeneration = c.Generation
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation,
	})
}

// endpointsConfigMap names the sandbox-only ConfigMap listing client URLs.
func endpointsConfigMap(cluster string) string { return cluster + "-sandbox-endpoints" }

// EndpointsKey is the ConfigMap data key holding comma-separated client URLs.
const EndpointsKey = "endpoints"

func (r *ClusterReconciler) publishEndpoints(ctx context.Context, c *etcdv1alpha2.EtcdCluster, rc *runningCluster) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: endpointsConfigMap(c.Name)}}
	_, err := ctrl.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{EndpointsKey: joinComma(rc.endpoints()), "clusterID": rc.clusterID}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish endpoints of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

func (r *ClusterReconciler) deleteEndpoints(ctx context.Context, key types.NamespacedName) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: endpointsConfigMap(key.Name)}}
	return client.IgnoreNotFound(r.Client.Delete(ctx, cm))
}
