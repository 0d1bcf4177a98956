package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
)

// defaultReplicas is the operator's (and its CRD's) default member count.
const defaultReplicas = 3

// clusterReconciler plays the operator's EtcdCluster controller: it latches
// the spec into status.observed with a progress deadline, bootstraps a seed
// member, discovers the cluster ID, adds the other members one at a time as
// learners and promotes them, and reports readiness. Member processes and
// volumes are the member controller's.
type clusterReconciler struct {
	client client.Client
	// reader lists members live: a stale cache must never make the
	// controller create a second seed or an extra member.
	reader client.Reader
	fleet  *Fleet
	faults *Faults
	now    func() time.Time
}

func (r *clusterReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-operator-cluster").
		For(&etcdv1alpha2.EtcdCluster{}).
		Owns(&etcdmember.EtcdMember{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile takes one step towards status.observed: the order of the
// operator's own controller (controllers/etcdcluster_controller.go).
func (r *clusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c etcdv1alpha2.EtcdCluster
	if err := r.client.Get(ctx, req.NamespacedName, &c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		// Members, their PVCs and the endpoints ConfigMap go with their
		// owner: the garbage collector's job, not ours.
		return ctrl.Result{}, nil
	}
	if c.Status.ClusterToken == "" || c.Status.Observed == nil {
		return ctrl.Result{}, r.latchInitialSpec(ctx, &c)
	}
	all, err := r.members(ctx, &c)
	if err != nil {
		return ctrl.Result{}, err
	}
	running := activeMembers(all)
	complete := reconciliationComplete(&c, running)
	if !complete && r.deadlinePassed(&c) {
		return ctrl.Result{}, r.deadlineExceeded(ctx, &c)
	}
	if complete && !specMatchesObserved(&c) {
		return ctrl.Result{}, r.adoptSpec(ctx, &c, reasonSpecChanged, "adopting new spec after previous target reached")
	}

	desired := c.Status.Observed.Replicas
	if c.Status.ClusterID == "" {
		seed := seedOf(running)
		switch {
		case desired == 0:
			// Paused from the start: never bootstrapped, no member, no
			// PVC, until a non-zero spec is adopted.
			return r.reportStatus(ctx, &c, running)
		case seed == nil:
			return r.bootstrap(ctx, &c)
		default:
			return r.discover(ctx, &c, seed)
		}
	}
	if len(running) != len(all) {
		// One membership change at a time: the deleted member's events
		// bring us back once it is gone.
		return r.untilDeadline(&c), nil
	}
	switch {
	case desired == 0:
		return r.untilDeadline(&c), r.setConditions(ctx, &c, cond(etcdv1alpha2.ClusterConditionProgressing, metav1.ConditionTrue, reasonSpecChanged,
			"pausing a formed cluster (spec.replicas=0 after bootstrap) is not reproduced by the sandbox's stand-in operator"))
	case int32(len(running)) < desired:
		if !allReady(running) {
			return r.untilDeadline(&c), nil
		}
		if res, acted, err := r.promoteLearners(ctx, &c, running); acted || err != nil {
			return res, err
		}
		return r.scaleUp(ctx, &c, running)
	case int32(len(running)) > desired:
		return r.scaleDown(ctx, &c, running)
	}
	// Every member of the target exists. The last one joined as a
	// learner; the operator promotes it before recounting readiness.
	if res, acted, err := r.promoteLearners(ctx, &c, running); acted || err != nil {
		return res, err
	}
	return r.reportStatus(ctx, &c, running)
}

// members lists the members this incarnation of the cluster controls.
// Members of an earlier incarnation under the same name are not ours, even
// before the garbage collector has marked them deleted.
func (r *clusterReconciler) members(ctx context.Context, c *etcdv1alpha2.EtcdCluster) ([]etcdmember.EtcdMember, error) {
	var list etcdmember.EtcdMemberList
	if err := r.reader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{etcdmember.ClusterLabel: c.Name}); err != nil {
		return nil, fmt.Errorf("list members of %s/%s: %w", c.Namespace, c.Name, err)
	}
	var ours []etcdmember.EtcdMember
	for _, m := range list.Items {
		if metav1.IsControlledBy(&m, c) {
			ours = append(ours, m)
		}
	}
	return ours, nil
}

// publishEndpoints keeps the sandbox-only ConfigMap <cluster>-sandbox-endpoints
// listing the members' client URLs (cmd/sandbox kv and the example scripts
// read it; a real cluster has the <cluster>-client Service instead). It is
// owned by the cluster, so it goes with it.
func (r *clusterReconciler) publishEndpoints(ctx context.Context, c *etcdv1alpha2.EtcdCluster) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: EndpointsConfigMap(c.Name)}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.client, cm, func() error {
		cm.Data = map[string]string{EndpointsKey: joinComma(r.fleet.endpointsOf(c.UID)), "clusterID": c.Status.ClusterID}
		return controllerutil.SetControllerReference(c, cm, r.client.Scheme())
	})
	if err != nil {
		return fmt.Errorf("publish endpoints of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// EndpointsConfigMap names the sandbox-only ConfigMap listing a cluster's
// member client URLs.
func EndpointsConfigMap(cluster string) string { return cluster + "-sandbox-endpoints" }

// EndpointsKey is the ConfigMap data key holding comma-separated client URLs.
const EndpointsKey = "endpoints"

func clusterKey(c *etcdv1alpha2.EtcdCluster) types.NamespacedName {
	return types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
}
