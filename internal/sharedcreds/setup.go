package sharedcreds

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// indexStrategy indexes Backups by the name of the Etcd strategy they name.
const indexStrategy = "sharedcreds.strategyRef.etcd"

// SetupWithManager registers the controller: it reconciles Etcd strategies
// when one is created, changes its spec or is deleted, when the Tracker is
// told of a new namespace or Secret name, and every resync interval.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ResyncInterval <= 0 {
		r.ResyncInterval = DefaultResyncInterval
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &backupsv1alpha1.Backup{}, indexStrategy, strategyOf); err != nil {
		return fmt.Errorf("index Backups by Etcd strategy: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("sharedcreds").
		// Our own status writes change no generation: do not wake on them.
		For(&strategyv1alpha1.Etcd{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.Tracker.wakeCh, &handler.TypedEnqueueRequestForObject[*strategyv1alpha1.Etcd]{})).
		Complete(r)
}

// strategyOf is the index function: the Etcd strategy a Backup names.
func strategyOf(o client.Object) []string {
	ref := o.(*backupsv1alpha1.Backup).Spec.StrategyRef
	if !strategyv1alpha1.IsEtcd(ref) {
		return nil
	}
	return []string{ref.Name}
}

// discover returns the namespaces holding Backups of strategy, each with the
// credentials Secret its newest such Backup recorded. It reads the cache
// without copying the Backups.
func (r *Reconciler) discover(ctx context.Context, strategy string) (map[string]string, error) {
	var list backupsv1alpha1.BackupList
	if err := r.List(ctx, &list, client.MatchingFields{indexStrategy: strategy}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Backups of Etcd strategy %s: %w", strategy, err)
	}
	found := map[string]string{}
	newest := map[string]*backupsv1alpha1.Backup{}
	for i := range list.Items {
		b := &list.Items[i]
		src, err := artifact.Resolve(b)
		if err != nil || src.SecretName == "" {
			continue
		}
		if n := newest[b.Namespace]; n == nil || n.CreationTimestamp.Before(&b.CreationTimestamp) {
			newest[b.Namespace], found[b.Namespace] = b, src.SecretName
		}
	}
	return found, nil
}
