package restore

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// world builds an observation of a restore in its destructive phase: claim
// held, capture taken, HelmRelease suspended, the old cluster still there.
func world() *observation {
	job := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rj", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(t0), Finalizers: []string{backupsv1alpha1.CleanupFinalizer}}}
	started := metav1.NewTime(t0)
	job.Status.StartedAt = &started
	job.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	b := ourBackup("ns", "b", "b-aaaaa")
	src, _ := artifact.Resolve(b)
	cluster := liveCluster("ns", "")
	replicas := int32(3)
	return &observation{
		now: t0.Add(time.Minute), job: job, backup: b, source: src, app: testApp,
		holder:  &claim.Holder{Name: "rj", UID: "uid-1"},
		capture: &capture{name: "cap", app: testApp, cluster: cluster, hrPrior: hrNotSuspended, source: sourceFrom(src, "b")},
		hr:      &helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{Suspend: true}},
		cluster: cluster, clusterTyped: &etcdv1alpha2.EtcdCluster{Spec: etcdv1alpha2.EtcdClusterSpec{Replicas: &replicas}},
	}
}

func ours(o *observation, key string, ready int32, available bool) {
	u := o.cluster.DeepCopy()
	u.SetAnnotations(map[string]string{backupsv1alpha1.RestoredByAnnotation: string(o.job.UID)})
	o.cluster = u
	o.clusterTyped.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.RestoreSource{
		S3: &etcdv1alpha2.S3Source{Bucket: testBucket, Endpoint: testEndpoint, Key: key}}}}
	o.clusterTyped.Status.ReadyMembers = ready
	if available {
		o.clusterTyped.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
	}
}

func TestDecide(t *testing.T) {
	const key = "tenant/etcd/b-aaaaa.db"
	for name, tc := range map[string]struct {
		mutate func(o *observation)
		want   state
		reason backupsv1alpha1.RestoreReason
	}{
		"foreign strategy, no finalizer: untouched": {func(o *observation) {
			o.job.Finalizers = nil
			o.backup.Spec.StrategyRef.Kind = "Velero"
		}, stateIgnore, ""},
		"Etcd strategy, no finalizer yet": {func(o *observation) { o.job.Finalizers = nil }, stateAddFinalizer, ""},
		"Backup missing past the deadline": {func(o *observation) {
			o.job.Finalizers, o.backup, o.job.Status = nil, nil, backupsv1alpha1.RestoreJobStatus{}
			o.now = t0.Add(time.Hour)
		}, stateFail, backupsv1alpha1.ReasonBackupNotFound},
		"queued behind another RestoreJob": {func(o *observation) {
			o.job.Status.StartedAt, o.capture = nil, nil
			o.holder = &claim.Holder{Name: "other", UID: "uid-2"}
		}, stateWaitClaim, backupsv1alpha1.ReasonWaitingForClaim},
		"HelmRelease resumed by someone mid-restore is suspended again": {func(o *observation) { o.hr.Spec.Suspend = false },
			stateSuspendHelmRelease, backupsv1alpha1.ReasonHelmReleaseSuspended},
		"old cluster present: delete it": {func(o *observation) {}, stateDeleteCluster, backupsv1alpha1.ReasonPurgingCluster},
		"cluster gone but PVCs remain: no shortcut": {func(o *observation) { o.cluster, o.clusterTyped, o.pvcs = nil, nil, 2 },
			stateWaitPurge, backupsv1alpha1.ReasonPurgingCluster},
		"cluster and PVCs gone: re-create": {func(o *observation) { o.cluster, o.clusterTyped = nil, nil },
			stateRecreate, backupsv1alpha1.ReasonClusterPurged},
		"a cluster someone else made after the purge": {func(o *observation) {
			o.job.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.RestoreConditionPurged, Status: metav1.ConditionTrue}}
		}, stateFail, backupsv1alpha1.ReasonClusterReplaced},
		"our cluster with another source": {func(o *observation) { ours(o, "other.db", 3, true) },
			stateFail, backupsv1alpha1.ReasonClusterReplaced},
		"Available with only the seed ready is not success": {func(o *observation) { ours(o, key, 1, true) },
			stateWaitHealthy, backupsv1alpha1.ReasonEtcdClusterBootstrapping},
		"Available and every member ready": {func(o *observation) { ours(o, key, 3, true) },
			stateSucceed, backupsv1alpha1.ReasonRestoreCompleted},
		"deadline passed while bootstrapping": {func(o *observation) {
			ours(o, key, 1, true)
			o.now = t0.Add(31 * time.Minute)
		}, stateFail, backupsv1alpha1.ReasonDeadlineExceeded},
		"restoreTimeoutSeconds overrides the default": {func(o *observation) {
			ours(o, key, 1, true)
			o.opts.RestoreTimeoutSeconds = 30
		}, stateFail, backupsv1alpha1.ReasonDeadlineExceeded},
		"claim taken over after the capture": {func(o *observation) { o.holder = &claim.Holder{Name: "other", UID: "uid-2"} },
			stateFail, backupsv1alpha1.ReasonClaimLost},
		"finished: the HelmRelease goes back first": {func(o *observation) {
			o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
		}, stateRestoreHelmRelease, ""},
		"finished, HelmRelease was suspended before: left alone, claim released": {func(o *observation) {
			o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
			o.capture.hrPrior = hrSuspended
		}, stateReleaseClaim, ""},
		"finished and cleaned up: a later suspension is not undone": {func(o *observation) {
			o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
			o.job.Finalizers, o.holder = nil, nil
		}, stateIgnore, ""},
		"deleted mid-restore": {func(o *observation) {
			now := metav1.NewTime(t0)
			o.job.DeletionTimestamp = &now
		}, stateFail, backupsv1alpha1.ReasonRestoreJobDeleted},
	} {
		t.Run(name, func(t *testing.T) {
			o := world()
			tc.mutate(o)
			d := decide(o, 30*time.Minute)
			if d.state != tc.want || d.reason != tc.reason {
				t.Fatalf("decide = %s/%s (%s), want %s/%s", d.state, d.reason, d.message, tc.want, tc.reason)
			}
		})
	}
}

// Failure messages after the capture say how to recover.
func TestRecoveryAdvice(t *testing.T) {
	o := world()
	o.safetyBackup = &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "rj-safety-1234"}}
	msg := recoveryAdvice(o)
	for _, want := range []string{"ConfigMap ns/cap", "rj-safety-1234", "NotSuspended"} {
		if !strings.Contains(msg, want) {
			t.Errorf("advice %q does not mention %q", msg, want)
		}
	}
	o.capture = nil
	if recoveryAdvice(o) != "Nothing was changed." {
		t.Errorf("before the capture nothing was changed, got %q", recoveryAdvice(o))
	}
}

// Names stay within the limits the operator and Kubernetes impose.
func TestChildNames(t *testing.T) {
	long := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Name: "a-very-long-restore-job-name-that-goes-on-and-on-and-on-for-ever", UID: "u"}}
	if n := safetyName(long); len(n) > 48 {
		t.Errorf("safety name %q is %d characters", n, len(n))
	}
	if n := captureName(long); len(n) > 63 {
		t.Errorf("capture name %q is %d characters", n, len(n))
	}
	other := long.DeepCopy()
	other.UID = "v"
	if safetyName(long) == safetyName(other) {
		t.Error("a re-created RestoreJob of the same name must not reuse the safety names")
	}
}

// The capture keeps unknown spec fields, labels and annotations, and drops
// server-set metadata and status.
func TestCapturedCluster(t *testing.T) {
	live := liveCluster("ns", "x")
	live.SetResourceVersion("42")
	live.SetUID("old")
	live.Object["status"] = map[string]any{"readyMembers": int64(3)}
	got := capturedCluster(live)
	if got.GetResourceVersion() != "" || got.GetUID() != "" {
		t.Error("server-set metadata was captured")
	}
	if _, ok := got.Object["status"]; ok {
		t.Error("status was captured")
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "podTemplate", "extra"); v != "x" {
		t.Error("unknown spec field lost")
	}
	if got.GetAnnotations()["meta.helm.sh/release-name"] != "etcd" || got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
		t.Error("labels or annotations lost")
	}
}
