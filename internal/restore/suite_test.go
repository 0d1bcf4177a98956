package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// k is the test's own uncached client: it plays the etcd-operator and Flux.
var k client.Client

// writes records every write the controller makes, per namespace, and
// injects faults into them.
var writes = &writeLog{byNS: map[string][]string{}}

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		k = env.Client
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink())))
		byObject := map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(MemberPVCLabels())},
			&coordinationv1.Lease{}:         {Label: labels.SelectorFromSet(labels.Set{claim.ComponentLabel: claim.ComponentValue})},
		}
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
			Scheme:  driverscheme.New(),
			Metrics: metricsserver.Options{BindAddress: "0"},
			Cache:   cache.Options{ByObject: byObject},
		})
		if err != nil {
			panic(err)
		}
		// The controller writes through an uncached client that records
		// (and can fail) every write; its decisions read live anyway.
		direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			panic(err)
		}
		r := &Reconciler{
			Client:   interceptor.NewClient(direct, writes.funcs()),
			Reader:   mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("etcd-restore"),
			Deadline: 30 * time.Minute,
		}
		if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
			panic(err)
		}
		// The BackupJob controller runs too, to show BackupJobs wait for a
		// restore's claim.
		bj := &backupjob.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("etcd-backup"), Deadline: time.Minute}
		if err := bj.SetupWithManager(mgr, 2); err != nil {
			panic(err)
		}
		go func() {
			if err := mgr.Start(context.Background()); err != nil {
				panic(err)
			}
		}()
	}))
}

// logSink shows the controller's log only when RESTORE_TEST_VERBOSE is set.
func logSink() io.Writer {
	if os.Getenv("RESTORE_TEST_VERBOSE") != "" {
		return os.Stderr
	}
	return io.Discard
}

// fault makes the write point named point fail once in namespace ns:
// before it reaches the API server, or after it was applied (a crash that
// lost the response).
type fault struct {
	ns, point string
	after     bool
	fired     bool
}

var errInjected = errors.New("injected fault")

type writeLog struct {
	mu     sync.Mutex
	byNS   map[string][]string
	faults map[string]*fault
}

func (w *writeLog) inject(f *fault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.faults == nil {
		w.faults = map[string]*fault{}
	}
	w.faults[f.ns] = f
}

func (w *writeLog) fired(ns string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.faults[ns] != nil && w.faults[ns].fired
}

func (w *writeLog) of(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byNS[ns]...)
}

// do runs one write through the fault injector and records it when applied.
func (w *writeLog) do(ns, point string, write func() error) error {
	w.mu.Lock()
	f := w.faults[ns]
	hit := f != nil && !f.fired && f.point == point
	if hit {
		f.fired = true
	}
	w.mu.Unlock()
	if hit && !f.after {
		return fmt.Errorf("%s: %w", point, errInjected)
	}
	err := write()
	if err == nil {
		w.mu.Lock()
		w.byNS[ns] = append(w.byNS[ns], point)
		w.mu.Unlock()
	}
	if hit {
		return fmt.Errorf("%s (applied): %w", point, errInjected)
	}
	return err
}

func kindOf(c client.WithWatch, obj runtime.Object) string {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return gvk.Kind
}

// point names a write the way the crash test enumerates them.
func point(verb, kind string, obj client.Object) string {
	switch {
	case kind == "RestoreJob" && verb == "patch":
		if len(obj.GetFinalizers()) > 0 {
			return "patch RestoreJob +finalizer"
		}
		return "patch RestoreJob -finalizer"
	case kind == "HelmRelease":
		return fmt.Sprintf("patch HelmRelease suspend=%t", obj.(*helmv2.HelmRelease).Spec.Suspend)
	case kind == "EtcdCluster" && verb == "create":
		if _, ok, _ := unstructured.NestedMap(obj.(*unstructured.Unstructured).Object, "spec", "bootstrap", "restore"); ok {
			return "create EtcdCluster with bootstrap"
		}
	}
	return verb + " " + kind
}

func (w *writeLog) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return w.do(obj.GetNamespace(), point("create", kindOf(c, obj), obj), func() error { return c.Create(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return w.do(obj.GetNamespace(), point("delete", kindOf(c, obj), obj), func() error { return c.Delete(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return w.do(obj.GetNamespace(), point("update", kindOf(c, obj), obj), func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return w.do(obj.GetNamespace(), point("patch", kindOf(c, obj), obj), func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			id := "status"
			if rj, ok := obj.(*backupsv1alpha1.RestoreJob); ok {
				id = "status " + readyReason(rj)
				if readyReason(rj) == "" {
					id = "status (no reason)"
				}
			}
			return w.do(obj.GetNamespace(), id, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	}
}

// ---- fixtures ---------------------------------------------------------------

const (
	testBucket   = "bkt"
	testEndpoint = "http://s3.test:9000"
	testPrefix   = "tenant/etcd/"
	testSecret   = "s3-creds"
	testApp      = "etcd"
)

var nsCounter int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("r%d-%d", time.Now().UnixNano()%100000, nsCounter)
	if err := k.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func strategyRef() backupsv1alpha1.TypedLocalObjectReference {
	g := strategyv1alpha1.GroupVersion.Group
	return backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"}
}

func appRef() backupsv1alpha1.TypedLocalObjectReference {
	g := backupsv1alpha1.DefaultApplicationAPIGroup
	return backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: "Etcd", Name: testApp}
}

// ourBackup is a Ready Backup in this driver's format, taken by snapshot
// snap, whose artifact URI names the exact object.
func ourBackup(ns, name, snap string) *backupsv1alpha1.Backup {
	fps := true
	rec := artifact.Record{SnapshotName: snap, Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: testBucket, Endpoint: testEndpoint, Key: testPrefix, ForcePathStyle: &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret},
	}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		panic(err)
	}
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{ApplicationRef: appRef(), StrategyRef: strategyRef(),
			TakenAt: metav1.Now(), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI(testBucket, artifact.ObjectKey(testPrefix, snap))}},
	}
}

// liveCluster is a chart-rendered EtcdCluster with Helm metadata and a spec
// field the typed mirror does not know.
func liveCluster(ns string, extra string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"version":  "3.6.11",
			"replicas": int64(3),
			"storage":  map[string]any{"size": "4Gi"},
			"podTemplate": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"tenant": "t1"}},
				"extra":    extra,
			},
		},
	}}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	u.SetNamespace(ns)
	u.SetName(clusterName)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": testApp})
	u.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "etcd", "meta.helm.sh/release-namespace": ns})
	return u
}

func helmRelease(ns string, suspended bool) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testApp},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}},
			Suspend: suspended,
		},
	}
}

func memberPVC(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{instanceLabel: clusterName}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

type appOpts struct {
	noHelmRelease bool
	hrSuspended   bool
	extra         string
	notAvailable  bool
}

// deployApp creates what the chart and the operator would have: a healthy
// three-member EtcdCluster, its PVCs and the HelmRelease.
func deployApp(t *testing.T, ns string, o appOpts) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := liveCluster(ns, o.extra)
	g.Expect(k.Create(ctx, c)).To(Succeed())
	if !o.notAvailable {
		setClusterHealthy(g, c)
	}
	for i := range 3 {
		g.Expect(k.Create(ctx, memberPVC(ns, fmt.Sprintf("data-etcd-%d", i)))).To(Succeed())
	}
	if !o.noHelmRelease {
		hr := helmRelease(ns, o.hrSuspended)
		g.Expect(k.Create(ctx, hr)).To(Succeed())
	}
}

func setClusterHealthy(g Gomega, u *unstructured.Unstructured) {
	g.Expect(markHealthy(context.Background(), client.ObjectKeyFromObject(u))).To(Succeed())
}

// markHealthy plays the operator reporting every member ready.
func markHealthy(ctx context.Context, key client.ObjectKey) error {
	c := &etcdv1alpha2.EtcdCluster{}
	if err := k.Get(ctx, key, c); err != nil {
		return err
	}
	replicas := int32(1)
	if c.Spec.Replicas != nil {
		replicas = *c.Spec.Replicas
	}
	c.Status.ReadyMembers = replicas
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1alpha2.ClusterConditionAvailable,
		Status: metav1.ConditionTrue, Reason: etcdv1alpha2.ReasonQuorumHealthy, Message: "all members healthy"})
	return k.Status().Update(ctx, c)
}

func newRestoreJob(ns, name, backup string, options string) *backupsv1alpha1.RestoreJob {
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}},
	}
	if options != "" {
		rj.Spec.Options = &runtime.RawExtension{Raw: []byte(options)}
	}
	return rj
}

// ---- the test's etcd-operator and Flux -----------------------------------

// operator plays the etcd-operator and helm-controller in one namespace:
// completes snapshots, removes the PVCs of a deleted cluster, brings a
// re-created cluster up, and marks resumed HelmReleases Ready.
type operator struct {
	ns string
	mu sync.Mutex
	// holdBootstrap keeps re-created clusters from becoming healthy.
	holdBootstrap bool
	// failSnapshots fails every EtcdSnapshot.
	failSnapshots bool
	// bootstrapAfter, when set, lets a re-created cluster become healthy
	// only once a RestoreJob of the namespace reports this Ready reason
	// (so every waiting state is seen, deterministically).
	bootstrapAfter backupsv1alpha1.RestoreReason
	// leaveSnapshot is a snapshot the operator does not complete.
	leaveSnapshot string
	stop          context.CancelFunc
}

func startOperator(t *testing.T, ns string) *operator {
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{ns: ns, stop: cancel}
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			op.step(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return op
}

func (op *operator) set(f func(op *operator)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

func (op *operator) step(ctx context.Context) {
	op.mu.Lock()
	hold, fail, after, leave := op.holdBootstrap, op.failSnapshots, op.bootstrapAfter, op.leaveSnapshot
	op.mu.Unlock()
	if after != "" && !hold {
		hold = !anyJobReports(ctx, op.ns, after)
	}
	var snaps etcdv1alpha2.EtcdSnapshotList
	if k.List(ctx, &snaps, client.InNamespace(op.ns)) == nil {
		for i := range snaps.Items {
			s := &snaps.Items[i]
			if s.Status.Phase != "" || s.Name == leave {
				continue
			}
			if fail {
				s.Status.Phase = etcdv1alpha2.SnapshotPhaseFailed
				s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "JobFailed",
					Message: "snapshot job failed", LastTransitionTime: metav1.Now()}}
			} else {
				key := artifact.ObjectKey(s.Spec.Destination.S3.Key, s.Name)
				s.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
				s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: artifact.URI(s.Spec.Destination.S3.Bucket, key),
					SizeBytes: 4096, Checksum: "sha256:" + strings.Repeat("ab", 32)}
			}
			_ = k.Status().Update(ctx, s)
		}
	}
	c := &etcdv1alpha2.EtcdCluster{}
	err := k.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: clusterName}, c)
	switch {
	case apierrors.IsNotFound(err):
		var pvcs corev1.PersistentVolumeClaimList
		if k.List(ctx, &pvcs, client.InNamespace(op.ns)) == nil {
			for i := range pvcs.Items {
				p := &pvcs.Items[i]
				if len(p.Finalizers) > 0 {
					p.Finalizers = nil
					_ = k.Update(ctx, p)
				}
				_ = k.Delete(ctx, p)
			}
		}
	case err == nil && c.Spec.Bootstrap != nil && !hold && !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable):
		_ = markHealthy(ctx, client.ObjectKey{Namespace: op.ns, Name: clusterName})
	}
	hr := &helmv2.HelmRelease{}
	if k.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: testApp}, hr) == nil && !hr.Spec.Suspend {
		ready := meta.FindStatusCondition(hr.Status.Conditions, "Ready")
		if ready == nil || ready.ObservedGeneration < hr.Generation {
			meta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
				Reason: "UpgradeSucceeded", Message: "release reconciled", ObservedGeneration: hr.Generation})
			_ = k.Status().Update(ctx, hr)
		}
	}
}

// ---- assertions -------------------------------------------------------------

func getJob(g Gomega, ns, name string) *backupsv1alpha1.RestoreJob {
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
	return rj
}

func waitPhase(t *testing.T, ns, name string, phase backupsv1alpha1.RestoreJobPhase) *backupsv1alpha1.RestoreJob {
	t.Helper()
	var rj *backupsv1alpha1.RestoreJob
	NewWithT(t).Eventually(func(g Gomega) {
		rj = getJob(g, ns, name)
		g.Expect(rj.Status.Phase).To(Equal(phase), "status: %+v", rj.Status)
		g.Expect(rj.Finalizers).To(BeEmpty())
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

func waitReason(t *testing.T, ns, name string, reason backupsv1alpha1.RestoreReason) *backupsv1alpha1.RestoreJob {
	t.Helper()
	var rj *backupsv1alpha1.RestoreJob
	NewWithT(t).Eventually(func(g Gomega) {
		rj = getJob(g, ns, name)
		g.Expect(readyReason(rj)).To(Equal(string(reason)), "status: %+v", rj.Status)
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

func condition(rj *backupsv1alpha1.RestoreJob, t string) *metav1.Condition {
	return meta.FindStatusCondition(rj.Status.Conditions, t)
}

func getCluster(g Gomega, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: clusterName}, u)).To(Succeed())
	return u
}

func getHR(g Gomega, ns string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: testApp}, hr)).To(Succeed())
	return hr
}

func claimHolder(g Gomega, ns string) *claim.Holder {
	h, err := claim.Get(context.Background(), k, ns, testApp)
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

func leaseCount(g Gomega, ns string) int {
	var l coordinationv1.LeaseList
	g.Expect(k.List(context.Background(), &l, client.InNamespace(ns))).To(Succeed())
	return len(l.Items)
}

func bootstrapKey(u *unstructured.Unstructured) string {
	key, _, _ := unstructured.NestedString(u.Object, "spec", "bootstrap", "restore", "source", "s3", "key")
	return key
}

func anyJobReports(ctx context.Context, ns string, reason backupsv1alpha1.RestoreReason) bool {
	var jobs backupsv1alpha1.RestoreJobList
	if k.List(ctx, &jobs, client.InNamespace(ns)) != nil {
		return false
	}
	for i := range jobs.Items {
		if readyReason(&jobs.Items[i]) == string(reason) {
			return true
		}
	}
	return false
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
