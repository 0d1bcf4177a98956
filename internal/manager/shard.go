package manager

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
)

// shardedKinds are the kinds a shard caches only its own objects of: what
// tenants create (BackupJobs, Plans, RestoreJobs, Backups), what the
// driver creates in tenant namespaces (EtcdSnapshots, staging Jobs, and
// Backups and BackupJobs too), and the tenant's cluster: its EtcdCluster,
// HelmRelease and member PVCs (the admission policy labels them too). The
// tenant's application (served, on a real platform, by Cozystack's own API
// server, which the policy does not reach), cluster-scoped classes and
// strategies, and the claims and captures in the driver's namespace stay
// visible to every shard.
func shardedKinds() []client.Object {
	return append([]client.Object{
		&backupsv1alpha1.BackupJob{}, &backupsv1alpha1.Plan{}, &backupsv1alpha1.RestoreJob{},
		&backupsv1alpha1.Backup{}, &etcdv1alpha2.EtcdSnapshot{}, &batchv1.Job{},
	}, clusterKinds()...)
}

// clusterKinds are the sharded kinds that make up a tenant's cluster,
// which the platform (Flux, the etcd-operator, the StatefulSet controller)
// creates: a shard whose cache lacks one of them confirms the absence live
// (shard.Confirming), as the object may still carry another shard's label.
func clusterKinds() []client.Object {
	return []client.Object{&etcdv1alpha2.EtcdCluster{}, &helmv2.HelmRelease{}, &corev1.PersistentVolumeClaim{}}
}

// shardCaches narrows o's cache of every sharded kind to s's objects,
// keeping the selector each kind already has (both must match), and
// returns the resulting selector of each kind for the shard's Sweeper.
// Unsharded, o is left alone.
func shardCaches(o *cache.Options, s shard.Shard, scheme *runtime.Scheme) (map[schema.GroupVersionKind]shard.Selection, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !s.Enabled() {
		return nil, nil
	}
	if o.ByObject == nil {
		o.ByObject = map[client.Object]cache.ByObject{}
	}
	reqs, _ := s.Selector().Requirements()
	kinds := map[schema.GroupVersionKind]shard.Selection{}
	for _, kind := range shardedKinds() {
		gvk, err := apiutil.GVKForObject(kind, scheme)
		if err != nil {
			return nil, fmt.Errorf("shard caches: %w", err)
		}
		key, by := byObjectOf(o.ByObject, gvk, kind, scheme)
		sel := labels.NewSelector()
		if by.Label != nil {
			sel = by.Label.DeepCopySelector()
		}
		by.Label = sel.Add(reqs...)
		o.ByObject[key] = by
		kinds[gvk] = shard.Selection{Label: withHistory(by.Label), Field: by.Field}
	}
	return kinds, nil
}

// withHistory is sel without its exclusion of history EtcdSnapshots: the
// Sweeper moves every object of a namespace to its shard, history (which
// no cache holds) included, so labels keep naming the namespace's shard.
func withHistory(sel labels.Selector) labels.Selector {
	reqs, _ := sel.Requirements()
	out := labels.NewSelector()
	for _, r := range reqs {
		if r.Key() != backupsv1alpha1.SnapshotHistoryLabel {
			out = out.Add(r)
		}
	}
	return out
}

// byObjectOf finds the ByObject entry of gvk in m (its keys are objects,
// each a different pointer) or returns a new key for it.
func byObjectOf(m map[client.Object]cache.ByObject, gvk schema.GroupVersionKind, fresh client.Object, scheme *runtime.Scheme) (client.Object, cache.ByObject) {
	for key, by := range m {
		if k, err := apiutil.GVKForObject(key, scheme); err == nil && k == gvk {
			return key, by
		}
	}
	return fresh, cache.ByObject{}
}

// shard is the replica's shard.
func (o Options) shard() shard.Shard { return shard.Shard{Index: o.Shard, Count: o.Shards} }

// leaderElectionID is the Lease a shard's replicas compete for: each shard
// elects its own leader.
func (o Options) leaderElectionID() string {
	if !o.shard().Enabled() {
		return LeaderElectionID
	}
	return fmt.Sprintf("%s-shard-%d", LeaderElectionID, o.Shard)
}

// shardSweeper moves misplaced objects of the kinds in sharded to their
// shard (a no-op unsharded).
func (o Options) shardSweeper(mgr ctrl.Manager, sharded map[schema.GroupVersionKind]shard.Selection) *shard.Sweeper {
	return &shard.Sweeper{Client: o.client(mgr), Reader: mgr.GetAPIReader(), Shard: o.shard(),
		Kinds: sharded, Interval: o.ShardSweepInterval}
}
