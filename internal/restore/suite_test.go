package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// k is the test's own uncached client: it plays the etcd-operator and Flux.
var k client.Client

// s3srv is a real S3 server (the sandbox's) that snapshots go to; s3c is
// the test's client of it.
var (
	s3srv *s3server.Server
	s3c   *minio.Client
)

// testKeys are the provenance keys of the driver under test.
var testKeys = provenance.StaticKeys{ActiveID: "t1", Keys: map[string][]byte{"t1": []byte(strings.Repeat("k", 32))}}

var s3Creds = s3server.Credentials{AccessKeyID: "restore-test", SecretAccessKey: "restore-test-secret"}

// clockSkew moves the restore controller's clock forward (tests of bounds
// measured in tens of minutes); tests that set it reset it.
var clockSkew atomic.Int64

// sharingSkew moves forward only the clock of the controller's memory of
// which namespaces share an etcd (cpfence.Sharing), so a test sees a
// label change without waiting out its minute.
var sharingSkew atomic.Int64

// testReconciler is the restore controller under test (tests that play a
// driver upgrade make it forget what it made).
var testReconciler *Reconciler

// writes records every write the controller makes, per namespace, and
// injects faults into them.
var writes = &writeLog{byNS: map[string][]string{}}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "restore-s3-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if s3srv, err = s3server.Start(dir, s3Creds, testBucket); err != nil {
		panic(err)
	}
	testEndpoint = s3srv.URL
	if s3c, err = testenv.S3Client(s3srv.URL, s3Creds.AccessKeyID, s3Creds.SecretAccessKey); err != nil {
		panic(err)
	}
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		k = env.Client
		createStrategy(env.Client)
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink())))
		own := map[string]cache.Config{testenv.DriverNamespace: {}}
		byObject := map[client.Object]cache.ByObject{
			&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(MemberPVCLabels())},
			&coordinationv1.Lease{}: {Namespaces: own,
				Label: labels.SelectorFromSet(labels.Set{claim.ComponentLabel: claim.ComponentValue})},
			&corev1.ConfigMap{}: {Namespaces: own, Label: ConfigMapSelector()},
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
		policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
		if err != nil {
			panic(err)
		}
		writer := interceptor.NewClient(direct, writes.funcs())
		claims := claim.Store{Client: writer, Reader: mgr.GetClient(), Live: countingReader{mgr.GetAPIReader()}, Namespace: testenv.DriverNamespace}
		testClaims = claim.Store{Client: k, Reader: k, Namespace: testenv.DriverNamespace}
		r := &Reconciler{
			Client: writer,
			// Decisions read the cache, as in the driver's manager.
			Reader:     &flakyReader{Reader: mgr.GetClient()},
			LiveReader: countingReader{mgr.GetAPIReader()},
			Recorder:   mgr.GetEventRecorder("etcd-restore"),
			Deadline:   30 * time.Minute,
			Namespace:  testenv.DriverNamespace,
			Claims:     claims,
			Keys:       testKeys,
			Policy:     policy,

			StagingImage: "etcd-backup-driver:test",
			Revisions:    testRevisions,
			Now:          func() time.Time { return time.Now().Add(time.Duration(clockSkew.Load())) },
		}
		r.sharing.Now = func() time.Time { return time.Now().Add(time.Duration(sharingSkew.Load())) }
		if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
			panic(err)
		}
		testReconciler = r
		// The BackupJob controller runs too, to show BackupJobs wait for a
		// restore's claim.
		bj := &backupjob.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("etcd-backup"), Deadline: time.Minute,
			Keys: testKeys, Policy: policy, Claims: claims.LiveStore()}
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
	// skip lets that many writes at point pass before the fault fires.
	skip  int
	fired bool
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

// nsOf is the tenant namespace a write concerns: the object's own, or for
// claims and captures in the driver's namespace, the one they are for.
func nsOf(obj client.Object) string {
	if obj.GetNamespace() == testenv.DriverNamespace {
		for _, l := range []string{claim.TargetNamespaceLabel, backupsv1alpha1.CaptureForLabel} {
			if v := obj.GetLabels()[l]; v != "" {
				return v
			}
		}
	}
	return obj.GetNamespace()
}

// do runs one write through the fault injector and records it when applied.
func (w *writeLog) do(ns, point string, write func() error) error {
	w.mu.Lock()
	f := w.faults[ns]
	hit := f != nil && !f.fired && f.point == point
	if hit && f.skip > 0 {
		f.skip--
		hit = false
	}
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

// strict makes the API server check every write against the served
// (upstream) schemas with strict field validation: a field they do not
// know is an error, not a silent prune.
const strict = client.FieldValidation(metav1.FieldValidationStrict)

func (w *writeLog) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return w.do(nsOf(obj), point("create", kindOf(c, obj), obj), func() error { return c.Create(ctx, obj, append(opts, strict)...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return w.do(nsOf(obj), point("delete", kindOf(c, obj), obj), func() error { return c.Delete(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return w.do(nsOf(obj), point("update", kindOf(c, obj), obj), func() error { return c.Update(ctx, obj, append(opts, strict)...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return w.do(nsOf(obj), point("patch", kindOf(c, obj), obj), func() error { return c.Patch(ctx, obj, p, append(opts, strict)...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			id := "status"
			if rj, ok := obj.(*backupsv1alpha1.RestoreJob); ok {
				id = statusPoint(rj)
			}
			return w.do(obj.GetNamespace(), id, func() error { return c.SubResource(sub).Patch(ctx, obj, p, append(opts, strict)...) })
		},
	}
}

// statusPoint names a RestoreJob status write by the Ready reason it
// carries; the artifact check's own write is told apart by its condition.
func statusPoint(rj *backupsv1alpha1.RestoreJob) string {
	reason := readyReason(rj)
	switch {
	case reason == "":
		return "status (no reason)"
	case reason == string(backupsv1alpha1.ReasonVerifyingArtifact) &&
		meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionArtifactVerified) != nil:
		return "status ArtifactChecked"
	case rj.Status.Phase.IsTerminal():
		return "status " + string(rj.Status.Phase)
	}
	return "status " + reason
}

// flakyReader fails the next reads of Backups in chosen namespaces with a
// server timeout, as an API server under load would.
type flakyReader struct {
	client.Reader
}

var backupReadFailures = struct {
	sync.Mutex
	left, failed map[string]int
}{left: map[string]int{}, failed: map[string]int{}}

func failBackupReads(ns string, n int) {
	backupReadFailures.Lock()
	defer backupReadFailures.Unlock()
	backupReadFailures.left[ns] = n
}

func failedBackupReads(ns string) int {
	backupReadFailures.Lock()
	defer backupReadFailures.Unlock()
	return backupReadFailures.failed[ns]
}

func (f *flakyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*backupsv1alpha1.Backup); ok {
		backupReadFailures.Lock()
		fail := backupReadFailures.left[key.Namespace] > 0
		if fail {
			backupReadFailures.left[key.Namespace]--
			backupReadFailures.failed[key.Namespace]++
		}
		backupReadFailures.Unlock()
		if fail {
			return apierrors.NewServerTimeout(backupsv1alpha1.GroupVersion.WithResource("backups").GroupResource(), "get", 1)
		}
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}
