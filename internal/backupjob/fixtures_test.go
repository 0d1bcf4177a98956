package backupjob_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// world is one test's tenant: a namespace with an Etcd application and its
// EtcdCluster, plus a cluster-scoped strategy and BackupClass of its own.
type world struct {
	t        testing.TB
	g        *WithT
	ctx      context.Context
	ns       string
	class    string
	strategy string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	suffix := rand.String(6)
	w := &world{t: t, g: g, ctx: ctx, ns: "tenant-" + suffix, class: "class-" + suffix, strategy: "strategy-" + suffix}
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}})).To(Succeed())
	return w
}

// startDriver runs the driver's real manager wiring until the test ends.
func (w *world) startDriver(mutate func(*manager.Options)) {
	w.t.Helper()
	w.startDriverCtx(context.Background(), mutate)
}

// startDriverCtx runs the driver until parent is cancelled or the test ends.
func (w *world) startDriverCtx(parent context.Context, mutate func(*manager.Options)) {
	w.t.Helper()
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.AllowedEndpointCIDRs = testenv.LoopbackCIDRs
	if mutate != nil {
		mutate(&o)
	}
	mgr, err := manager.New(env.Config, o)
	w.g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(parent)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	w.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("manager: %v", err)
		}
	})
}

func (w *world) create(objs ...client.Object) {
	w.t.Helper()
	for _, o := range objs {
		w.g.Expect(env.Client.Create(w.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

func (w *world) s3Template() strategyv1alpha1.EtcdS3Template {
	fps := true
	return strategyv1alpha1.EtcdS3Template{
		Bucket:               "etcd-backups",
		Endpoint:             "http://127.0.0.1:9000",
		Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
		Region:               "{{ .Parameters.region }}",
		ForcePathStyle:       &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "s3-creds"},
	}
}

func (w *world) strategyObj(s3 strategyv1alpha1.EtcdS3Template) *strategyv1alpha1.Etcd {
	return &strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: w.strategy},
		Spec: strategyv1alpha1.EtcdSpec{
			Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &s3}},
		},
	}
}

// policyObj is the strategy's StrategyPolicy: deletion policy Delete, plain
// http allowed (the tests' S3 is on loopback http).
func (w *world) policyObj() *driverv1alpha1.StrategyPolicy {
	return &driverv1alpha1.StrategyPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: w.strategy},
		Spec:       driverv1alpha1.StrategyPolicySpec{DeletionPolicy: driverv1alpha1.DeletionPolicyDelete, AllowHTTPEndpoint: true},
	}
}

func (w *world) classObj(group, kind string) *backupsv1alpha1.BackupClass {
	return &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: w.class},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: kind, Name: w.strategy},
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			Parameters:  map[string]string{"region": "eu-west-1"},
		}}},
	}
}

func (w *world) app() *appsv1alpha1.Etcd {
	return &appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "etcd"}}
}

// cluster creates the application's EtcdCluster, Available or not.
func (w *world) cluster(available bool) {
	w.t.Helper()
	replicas := int32(3)
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "etcd"},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas},
	}
	w.create(c)
	status := metav1.ConditionFalse
	if available {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: "Available", Status: status, Reason: "QuorumHealthy", Message: "test"})
	w.g.Expect(env.Client.Status().Update(w.ctx, c)).To(Succeed())
}

// everything creates a complete, valid setup for the Etcd strategy.
func (w *world) everything() {
	w.create(w.strategyObj(w.s3Template()), w.policyObj(), w.classObj(strategyv1alpha1.GroupVersion.Group, "Etcd"), w.app())
	w.cluster(true)
}

func (w *world) job(name string) *backupsv1alpha1.BackupJob {
	return &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: w.class,
		},
	}
}

func (w *world) get(obj client.Object) client.Object {
	w.t.Helper()
	w.g.Expect(env.Client.Get(w.ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj
}

// snapshotsOf lists the EtcdSnapshots labelled as made by job.
func (w *world) snapshotsOf(job *backupsv1alpha1.BackupJob) []etcdv1alpha2.EtcdSnapshot {
	var list etcdv1alpha2.EtcdSnapshotList
	w.g.Expect(env.Client.List(w.ctx, &list, client.InNamespace(w.ns),
		client.MatchingLabels{backupsv1alpha1.OwningJobUIDLabel: string(job.UID)})).To(Succeed())
	return list.Items
}

// awaitSnapshot waits for job's single EtcdSnapshot.
func (w *world) awaitSnapshot(job *backupsv1alpha1.BackupJob) *etcdv1alpha2.EtcdSnapshot {
	w.t.Helper()
	w.get(job)
	var snap etcdv1alpha2.EtcdSnapshot
	w.g.Eventually(func() int { return len(w.snapshotsOf(job)) }).WithTimeout(30*time.Second).Should(Equal(1),
		func() string {
			return fmt.Sprintf("BackupJob status: %+v", w.get(job).(*backupsv1alpha1.BackupJob).Status)
		})
	snap = w.snapshotsOf(job)[0]
	return &snap
}

// operatorFinishes plays the etcd-operator: the snapshot reaches phase.
func (w *world) operatorFinishes(snap *etcdv1alpha2.EtcdSnapshot, phase etcdv1alpha2.SnapshotPhase) {
	w.t.Helper()
	w.get(snap)
	snap.Status.Phase = phase
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "JobFailed", Message: "snapshot job failed: connection refused"}
	if phase == etcdv1alpha2.SnapshotPhaseComplete {
		cond = metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "SnapshotStored", Message: "stored"}
		key := fmt.Sprintf("%s/etcd/%s.db", w.ns, snap.Name)
		snap.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: "s3://etcd-backups/" + key, SizeBytes: 12345, Checksum: "sha256:" + fmt.Sprintf("%064d", 7)}
	}
	meta.SetStatusCondition(&snap.Status.Conditions, cond)
	w.g.Expect(env.Client.Status().Update(w.ctx, snap)).To(Succeed())
}

// awaitPhase waits for job to reach phase and returns it.
func (w *world) awaitPhase(job *backupsv1alpha1.BackupJob, phase backupsv1alpha1.BackupJobPhase, timeout time.Duration) *backupsv1alpha1.BackupJob {
	w.t.Helper()
	w.g.Eventually(func() backupsv1alpha1.BackupJobPhase {
		w.get(job)
		return job.Status.Phase
	}).WithTimeout(timeout).Should(Equal(phase), func() string { return fmt.Sprintf("status: %+v", job.Status) })
	return job
}

// awaitReason waits until job's Ready condition has reason.
func (w *world) awaitReason(job *backupsv1alpha1.BackupJob, reason string) *metav1.Condition {
	w.t.Helper()
	var cond *metav1.Condition
	w.g.Eventually(func() string {
		w.get(job)
		cond = meta.FindStatusCondition(job.Status.Conditions, "Ready")
		if cond == nil {
			return ""
		}
		return cond.Reason
	}).WithTimeout(30*time.Second).Should(Equal(reason), func() string { return fmt.Sprintf("status: %+v", job.Status) })
	return cond
}

// eventReasons lists the reasons of Events about obj.
func (w *world) eventReasons(obj client.Object) []string {
	var list eventsv1.EventList
	w.g.Expect(env.Client.List(w.ctx, &list, client.InNamespace(w.ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.UID == obj.GetUID() {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
