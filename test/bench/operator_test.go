package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// defaultOperatorDelay is how long the played operator takes to store a
// snapshot or to bootstrap a restored cluster.
const defaultOperatorDelay = 2 * time.Second

// operator plays the etcd-operator and Flux for every namespace, driven by
// watch events: delay after it sees a new EtcdSnapshot it stores a real
// etcd-shaped object in S3 and reports it Complete; when an EtcdCluster
// goes it removes the members' PVCs (as owner references would); delay
// after a cluster with a restore bootstrap appears it reports every member
// ready; a HelmRelease not suspended is reported Ready at once; a
// restore's staging Job is reported Complete at once (the Job controller
// and the kubelet; no Pod runs here). It records
// when each of its own tasks started and ended, so that the figures can
// subtract the operator's time from the driver's.
type operator struct {
	c     client.Client
	s3    *minio.Client
	delay time.Duration

	mu    sync.Mutex
	tasks map[types.NamespacedName]*task
}

// task is one snapshot or bootstrap the operator carried out.
type task struct {
	// owner is the snapshot's controlling owner (kind/name); empty for
	// a bootstrap.
	owner      string
	start, end time.Time
}

func startOperator(ctx context.Context, cfg *rest.Config, s3 *minio.Client, delay time.Duration) (*operator, error) {
	c, err := client.New(cfg, client.Options{Scheme: driverscheme.New()})
	if err != nil {
		return nil, err
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: driverscheme.New()})
	if err != nil {
		return nil, err
	}
	op := &operator{c: c, s3: s3, delay: delay, tasks: map[types.NamespacedName]*task{}}
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandlerFuncs
	}{
		{&etcdv1alpha2.EtcdSnapshot{}, toolscache.ResourceEventHandlerFuncs{AddFunc: op.snapshotSeen}},
		{&etcdv1alpha2.EtcdCluster{}, toolscache.ResourceEventHandlerFuncs{AddFunc: op.clusterSeen, DeleteFunc: op.clusterGone}},
		{&helmv2.HelmRelease{}, toolscache.ResourceEventHandlerFuncs{AddFunc: op.releaseSeen,
			UpdateFunc: func(_, o any) { op.releaseSeen(o) }}},
		{&batchv1.Job{}, toolscache.ResourceEventHandlerFuncs{AddFunc: op.stagingSeen}},
	}
	for _, h := range handlers {
		inf, err := informers.GetInformer(ctx, h.obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("operator: caches did not sync")
	}
	return op, nil
}

// begin records the start of a task on key; false when it was begun before.
func (op *operator) begin(key types.NamespacedName, owner string) bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	if _, seen := op.tasks[key]; seen {
		return false
	}
	op.tasks[key] = &task{owner: owner, start: time.Now()}
	return true
}

func (op *operator) finish(key types.NamespacedName) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.tasks[key].end = time.Now()
}

// snapshotTask is the operator's finished task on the snapshot that owner
// (kind/name) owns in ns.
func (op *operator) snapshotTask(ns, owner string) (task, bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	for k, t := range op.tasks {
		if k.Namespace == ns && t.owner == owner && !t.end.IsZero() {
			return *t, true
		}
	}
	return task{}, false
}

// since sums the operator's time on tasks in ns that began after from.
func (op *operator) since(ns string, from time.Time) time.Duration {
	op.mu.Lock()
	defer op.mu.Unlock()
	var d time.Duration
	for k, t := range op.tasks {
		if k.Namespace == ns && !t.start.Before(from) && !t.end.IsZero() {
			d += t.end.Sub(t.start)
		}
	}
	return d
}

func (op *operator) snapshotSeen(o any) {
	s := o.(*etcdv1alpha2.EtcdSnapshot)
	if s.Status.Phase != "" || s.Spec.Destination.S3 == nil {
		return
	}
	owner := ""
	if ref := metav1.GetControllerOf(s); ref != nil {
		owner = ref.Kind + "/" + ref.Name
	}
	key := client.ObjectKeyFromObject(s)
	if !op.begin(key, owner) {
		return
	}
	dest := *s.Spec.Destination.S3
	time.AfterFunc(op.delay, func() {
		ctx := context.Background()
		objKey := artifact.ObjectKey(dest.Key, key.Name)
		data := testenv.Snapshot(1, key.String())
		if _, err := op.s3.PutObject(ctx, dest.Bucket, objKey, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			panic(fmt.Sprintf("operator: store %s: %v", objKey, err))
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			snap := &etcdv1alpha2.EtcdSnapshot{}
			if err := op.c.Get(ctx, key, snap); err != nil {
				return err
			}
			snap.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
			snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: artifact.URI(dest.Bucket, objKey),
				SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}
			meta.SetStatusCondition(&snap.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.SnapshotConditionReady,
				Status: metav1.ConditionTrue, Reason: "SnapshotStored", Message: "stored"})
			return op.c.Status().Update(ctx, snap)
		})
		if err != nil {
			panic(fmt.Sprintf("operator: complete %s: %v", key, err))
		}
		op.finish(key)
	})
}

func (op *operator) clusterSeen(o any) {
	c := o.(*etcdv1alpha2.EtcdCluster)
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return
	}
	key := types.NamespacedName{Namespace: c.Namespace, Name: "bootstrap-" + string(c.UID)}
	if !op.begin(key, "") {
		return
	}
	time.AfterFunc(op.delay, func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return testenv.MarkHealthy(context.Background(), op.c, client.ObjectKeyFromObject(c))
		})
		if err != nil {
			panic(fmt.Sprintf("operator: bootstrap %s/%s: %v", c.Namespace, c.Name, err))
		}
		op.finish(key)
	})
}

func (op *operator) clusterGone(o any) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	c, ok := o.(*etcdv1alpha2.EtcdCluster)
	if !ok {
		return
	}
	// The API server's PVC protection adds a finalizer that only the
	// controller manager (not run here) would remove.
	ctx := context.Background()
	var pvcs corev1.PersistentVolumeClaimList
	if err := op.c.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": c.Name}); err != nil {
		panic(fmt.Sprintf("operator: list the PVCs of %s/%s: %v", c.Namespace, c.Name, err))
	}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		if err := op.c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			panic(fmt.Sprintf("operator: release PVC %s/%s: %v", p.Namespace, p.Name, err))
		}
		if err := client.IgnoreNotFound(op.c.Delete(ctx, p)); err != nil {
			panic(fmt.Sprintf("operator: remove PVC %s/%s: %v", p.Namespace, p.Name, err))
		}
	}
}

func (op *operator) releaseSeen(o any) {
	hr := o.(*helmv2.HelmRelease)
	ready := meta.FindStatusCondition(hr.Status.Conditions, "Ready")
	if hr.Spec.Suspend || (ready != nil && ready.ObservedGeneration >= hr.Generation) {
		return
	}
	go func() {
		_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &helmv2.HelmRelease{}
			if err := op.c.Get(context.Background(), client.ObjectKeyFromObject(hr), cur); err != nil || cur.Spec.Suspend {
				return err
			}
			meta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
				Reason: "UpgradeSucceeded", Message: "release reconciled", ObservedGeneration: cur.Generation})
			return op.c.Status().Update(context.Background(), cur)
		})
	}()
}

// stagingSeen completes a restore's staging Job as the Job controller would
// once its Pod exited 0. The bench's bootstrap does not read what was
// staged, so nothing is copied.
func (op *operator) stagingSeen(o any) {
	j := o.(*batchv1.Job)
	if _, ok := j.Labels[backupsv1alpha1.StagingLabel]; !ok || len(j.Status.Conditions) > 0 {
		return
	}
	go func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &batchv1.Job{}
			if err := op.c.Get(context.Background(), client.ObjectKeyFromObject(j), cur); err != nil {
				return client.IgnoreNotFound(err)
			}
			now := metav1.Now()
			cur.Status.StartTime, cur.Status.CompletionTime, cur.Status.Succeeded = &now, &now, 1
			cur.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			}
			return op.c.Status().Update(context.Background(), cur)
		})
		if err != nil {
			panic(fmt.Sprintf("operator: complete staging Job %s/%s: %v", j.Namespace, j.Name, err))
		}
	}()
}
