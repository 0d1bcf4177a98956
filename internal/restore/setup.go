package restore

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
)

// Field indexes on RestoreJobs, to map an event to the jobs it concerns.
const (
	indexBackupRef = "spec.backupRef.name"
	indexUID       = "metadata.uid"
)

// MemberPVCLabels selects the member PVCs of the cluster a restore replaces;
// the manager restricts its PVC cache to them.
func MemberPVCLabels() map[string]string {
	return map[string]string{instanceLabel: clusterName}
}

// CaptureLabels select the capture ConfigMaps (in the driver's namespace).
func CaptureLabels() labels.Set {
	return labels.Set{claim.ComponentLabel: captureComponent}
}

// ConfigMapSelector selects what a restore keeps in the driver's
// namespace: its capture and its fence record (internal/cpfence); the
// manager restricts its ConfigMap cache to them.
func ConfigMapSelector() labels.Selector {
	kept, err := labels.NewRequirement(claim.ComponentLabel, selection.In, []string{captureComponent, cpfence.RecordComponent})
	if err != nil {
		panic(err) // constants
	}
	return labels.NewSelector().Add(*kept)
}

// ClusterName is the one EtcdCluster (and HelmRelease) name the driver
// reads; the manager restricts those caches to it, as RBAC restricts access.
const ClusterName = clusterName

// SetupWithManager wires the watches: everything a restore waits for wakes
// the RestoreJobs it concerns; nothing is polled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	idx := mgr.GetFieldIndexer()
	ctx := context.Background()
	if err := idx.IndexField(ctx, &backupsv1alpha1.RestoreJob{}, indexBackupRef, func(o client.Object) []string {
		return []string{o.(*backupsv1alpha1.RestoreJob).Spec.BackupRef.Name}
	}); err != nil {
		return fmt.Errorf("index RestoreJobs by Backup: %w", err)
	}
	if err := idx.IndexField(ctx, &backupsv1alpha1.RestoreJob{}, indexUID, func(o client.Object) []string {
		return []string{string(o.GetUID())}
	}); err != nil {
		return fmt.Errorf("index RestoreJobs by UID: %w", err)
	}
	r.setupReads(mgr)
	if r.sharing.Now == nil {
		r.sharing.Now = r.now
	}
	c := mgr.GetClient()
	inNamespace := handler.EnqueueRequestsFromMapFunc(r.activeJobs(c, nil))
	clusterOnly := predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetName() == clusterName })
	b := ctrl.NewControllerManagedBy(mgr).
		Named("etcd-restore").
		WithOptions(opts).
		For(&backupsv1alpha1.RestoreJob{}).
		Watches(&backupsv1alpha1.Backup{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfBackup(c))).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfClaim(c))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.jobOfCapture(c))).
		Watches(&etcdv1alpha2.EtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.jobsOfSnapshot(c))).
		Watches(&etcdv1alpha2.EtcdCluster{}, inNamespace, builder.WithPredicates(clusterOnly)).
		WatchesMetadata(&corev1.PersistentVolumeClaim{}, inNamespace).
		Watches(&helmv2.HelmRelease{}, inNamespace, builder.WithPredicates(clusterOnly)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(r.jobsLabelled(c, backupsv1alpha1.StagingLabel))).
		WatchesRawSource(source.Channel(r.wake, &handler.EnqueueRequestForObject{}))
	// Kamaji is optional: without its CRDs there is nothing to fence.
	planes, err := kamajiServes(mgr, "TenantControlPlane")
	if err != nil {
		return err
	}
	if planes {
		b = b.Watches(&kamajiv1alpha1.TenantControlPlane{}, r.fencedPlanes(c))
		if err := startDataStores(ctx, mgr); err != nil {
			return err
		}
	}
	ctl, err := b.Build(r)
	if err != nil {
		return err
	}
	if planes || r.Schema == nil {
		return nil
	}
	// Kamaji installed later: watch its control planes from then on.
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !r.awaitKamaji(ctx) {
			return nil
		}
		if err := ctl.Watch(source.Kind(mgr.GetCache(), client.Object(&kamajiv1alpha1.TenantControlPlane{}), r.fencedPlanes(c))); err != nil {
			return fmt.Errorf("watch Kamaji's TenantControlPlanes: %w", err)
		}
		return startDataStores(ctx, mgr)
	}))
}

// fencedPlanes: a control plane fenced by a RestoreJob wakes it.
func (r *Reconciler) fencedPlanes(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(r.jobsAnnotated(c, backupsv1alpha1.FencedByAnnotation))
}

// startDataStores starts the DataStores' informer with the caches, not at
// the first restore (which would wait for them to list). Without the kind
// (a partial install) the fence's read says so at that restore; the driver
// still starts.
func startDataStores(ctx context.Context, mgr ctrl.Manager) error {
	stores, err := kamajiServes(mgr, "DataStore")
	if err != nil || !stores {
		return err
	}
	if _, err := mgr.GetCache().GetInformer(ctx, &kamajiv1alpha1.DataStore{}, cache.BlockUntilSynced(false)); err != nil {
		return fmt.Errorf("start Kamaji's DataStore informer: %w", err)
	}
	return nil
}

// kamajiInstalled: Kamaji's CRDs are installed (as the Schema follows
// them), so its control planes are looked for. Without a Schema (tests)
// the lookup itself tells. A CRD the driver cannot read (and never could)
// is an error, never "not installed": a restore that took it for absent
// would purge without fencing the control planes.
func (r *Reconciler) kamajiInstalled(ctx context.Context) (bool, error) {
	if r.Schema == nil {
		return true, nil
	}
	v := kamajiv1alpha1.GroupVersion.Version
	for _, crd := range []string{servedschema.TenantControlPlaneCRD, servedschema.DataStoreCRD} {
		ok, err := r.Schema.InstalledKnown(ctx, crd, v)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// awaitKamaji returns true once Kamaji's CRDs are installed, false when
// ctx ends first. It follows the Schema's watches (and looks again every
// few minutes, should they be broken).
func (r *Reconciler) awaitKamaji(ctx context.Context) bool {
	for {
		changed := r.Schema.Changed()
		if ok, _ := r.kamajiInstalled(ctx); ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		case <-time.After(kamajiRecheck):
		}
	}
}

// setupReads makes the live-revision reads asynchronous: each runs on a
// goroutine of its own, and its end wakes the RestoreJob waiting for it.
func (r *Reconciler) setupReads(mgr ctrl.Manager) {
	r.wake = make(chan event.GenericEvent, 1024)
	r.reads = &liverevision.Reads[int64]{
		Log: mgr.GetLogger().WithName("live-revision"),
		Wake: func(job types.NamespacedName) {
			select {
			case r.wake <- event.GenericEvent{Object: &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}}}:
			default: // full: the job's revisionPoll looks again
			}
		},
	}
	if r.Revisions != nil {
		r.reads.Read = r.Revisions.Revision
	}
}

// kamajiRecheck is how often awaitKamaji looks again without a change.
const kamajiRecheck = 5 * time.Minute

// jobsLabelled: an object whose label key names a RestoreJob UID wakes it.
func (r *Reconciler) jobsLabelled(c client.Reader, key string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		uid := obj.GetLabels()[key]
		if uid == "" {
			return nil
		}
		return r.activeJobs(c, client.MatchingFields{indexUID: uid})(ctx, obj)
	}
}

// jobsAnnotated: a control plane fenced by a RestoreJob (anywhere in the
// cluster) wakes it.
func (r *Reconciler) jobsAnnotated(c client.Reader, key string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		uid := obj.GetAnnotations()[key]
		if uid == "" {
			return nil
		}
		var jobs backupsv1alpha1.RestoreJobList
		if err := c.List(ctx, &jobs, client.MatchingFields{indexUID: uid}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list RestoreJobs to wake", "uid", uid)
			return nil
		}
		var out []reconcile.Request
		for i := range jobs.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&jobs.Items[i])})
		}
		return out
	}
}

// jobsOfBackup: the jobs restoring a Backup, and the job a safety Backup
// belongs to.
func (r *Reconciler) jobsOfBackup(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := r.activeJobs(c, client.MatchingFields{indexBackupRef: obj.GetName()})(ctx, obj)
		if uid := obj.GetLabels()[backupsv1alpha1.RestoreJobUIDLabel]; uid != "" {
			reqs = append(reqs, r.activeJobs(c, client.MatchingFields{indexUID: uid})(ctx, obj)...)
		}
		return reqs
	}
}

// jobsOfSnapshot: a safety snapshot wakes its job; any other snapshot of
// the cluster wakes the namespace's jobs, which do not touch the cluster
// while one runs.
func (r *Reconciler) jobsOfSnapshot(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		if uid := obj.GetLabels()[backupsv1alpha1.RestoreJobUIDLabel]; uid != "" {
			return r.activeJobs(c, client.MatchingFields{indexUID: uid})(ctx, obj)
		}
		return r.activeJobs(c, nil)(ctx, obj)
	}
}

// jobsOfClaim: a claim (in the driver's namespace) wakes the jobs of the
// namespace whose cluster it claims: its holder and those queued behind it.
func (r *Reconciler) jobsOfClaim(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns, ok := obj.GetLabels()[claim.TargetNamespaceLabel]
		if !ok || obj.GetNamespace() != r.Namespace {
			return nil
		}
		return r.activeJobsIn(ctx, c, ns, nil)
	}
}

// jobOfCapture: a capture wakes its job.
func (r *Reconciler) jobOfCapture(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns, uid := obj.GetLabels()[backupsv1alpha1.CaptureForLabel], obj.GetLabels()[backupsv1alpha1.RestoreJobUIDLabel]
		if ns == "" || uid == "" || obj.GetNamespace() != r.Namespace {
			return nil
		}
		return r.activeJobsIn(ctx, c, ns, client.MatchingFields{indexUID: uid})
	}
}

// activeJobs maps an object to the RestoreJobs of its namespace that match
// sel (all when nil) and may still act or report.
func (r *Reconciler) activeJobs(c client.Reader, sel client.ListOption) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return r.activeJobsIn(ctx, c, obj.GetNamespace(), sel)
	}
}

func (r *Reconciler) activeJobsIn(ctx context.Context, c client.Reader, ns string, sel client.ListOption) []reconcile.Request {
	opts := []client.ListOption{client.InNamespace(ns)}
	if sel != nil {
		opts = append(opts, sel)
	}
	var jobs backupsv1alpha1.RestoreJobList
	if err := c.List(ctx, &jobs, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list RestoreJobs to wake", "namespace", ns)
		return nil
	}
	var out []reconcile.Request
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.Status.Phase.IsTerminal() && len(j.Finalizers) == 0 && !followsHelmRelease(j) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(j)})
	}
	return out
}

// followsHelmRelease: a finished job still reports on its resumed
// HelmRelease.
func followsHelmRelease(j *backupsv1alpha1.RestoreJob) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == backupsv1alpha1.RestoreConditionHelmReleaseReconciled {
			return c.Reason == string(backupsv1alpha1.ReasonHelmReleaseReconciling)
		}
	}
	return false
}

// kamajiServes reports whether the API server serves Kamaji's kind.
func kamajiServes(mgr ctrl.Manager, kind string) (bool, error) {
	gvk := kamajiv1alpha1.GroupVersion.WithKind(kind)
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("look up Kamaji's %s kind: %w", kind, err)
}
