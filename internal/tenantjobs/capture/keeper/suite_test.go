package keeper

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

// The suite runs on Cozystack's Plan CRD; BackupClass "etcd" binds Etcd
// applications to the Etcd strategy "s3", whose StrategyPolicy lets
// tenants turn capture on with a lag bound of 60 s.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) {
		env = e
		ctx := context.Background()
		class := &backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			}}},
		}
		policy := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s3"},
			Spec: driverv1alpha1.StrategyPolicySpec{PointInTime: &driverv1alpha1.PointInTime{Enabled: true, MaxLagSeconds: ptr.To(int32(60))}}}
		for _, o := range []client.Object{class, policy} {
			if err := e.Client.Create(ctx, o); err != nil {
				panic(err)
			}
		}
	}))
}

var testKeys = provenance.StaticKeys{ActiveID: "t", Keys: map[string][]byte{"t": []byte(strings.Repeat("t", 32))}}

var anyEndpoint, _ = endpointpolicy.Parse([]string{"0.0.0.0/0", "::/0"})

const image = "registry.example/etcd-backup-driver:test"

var t0 = time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)

type harness struct {
	g   *WithT
	ctx context.Context
	ns  string
	r   *Reconciler
	clk *clocktesting.FakeClock
	ev  *events.FakeRecorder
}

func newHarness(t *testing.T) *harness {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capture-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	clk := clocktesting.NewFakeClock(t0.Add(time.Hour))
	ev := events.NewFakeRecorder(100)
	return &harness{g: g, ctx: ctx, ns: ns.Name, clk: clk, ev: ev, r: &Reconciler{
		Client: env.Client, APIReader: env.Client, Recorder: ev, Keys: testKeys, Policy: anyEndpoint, Image: image, Clock: clk,
	}}
}

// plan creates the Plan "daily" of the Etcd application "etcd", asking
// for capture.
func (h *harness) plan() *backupsv1alpha1.Plan {
	p := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "daily", Annotations: map[string]string{planpolicy.PointInTime: "true"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd", Schedule: backupsv1alpha1.PlanSchedule{Cron: "0 3 * * *"},
		},
	}
	h.g.Expect(env.Client.Create(h.ctx, p)).To(Succeed())
	return p
}

// backup creates a good Backup of plan "daily" at minute min whose
// signed manifest says revision rev.
func (h *harness) backup(name string, min int, rev int64) *backupsv1alpha1.Backup {
	return h.backupOf("daily", name, min, rev)
}

// backupOf is backup of the Plan named plan.
func (h *harness) backupOf(plan, name string, min int, rev int64) *backupsv1alpha1.Backup {
	rec := artifact.Record{SnapshotName: name, SnapshotUID: "uid-" + name, EtcdVersion: "3.6.11",
		DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://s3.example.com", Key: h.ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	h.g.Expect(err).NotTo(HaveOccurred())
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: map[string]string{backupsv1alpha1.PlanNameLabel: plan}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: plan},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: strategyv1alpha1.EtcdStrategyKind, Name: "s3"},
			TakenAt:        metav1.NewTime(t0.Add(time.Duration(min) * time.Minute)),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/" + h.ns + "/etcd/" + name + ".db", SizeBytes: 4 << 20,
				Checksum: "sha256:" + strings.Repeat("ab", 32)}},
	}
	h.g.Expect(provenance.Seal(h.ctx, testKeys, b)).To(Succeed())
	m := driverv1alpha1.BackupManifest{Revision: rev, Keys: 10, DBSizeBytes: 1 << 20, InspectedAt: metav1.NewTime(t0)}
	h.g.Expect(provenance.SealManifest(h.ctx, testKeys, b, &m)).To(Succeed())
	h.g.Expect(artifact.SetManifest(b, &m)).To(Succeed())
	h.g.Expect(env.Client.Create(h.ctx, b)).To(Succeed())
	return b
}

func (h *harness) reconcile(p *backupsv1alpha1.Plan) ctrl.Result {
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	h.g.Expect(err).NotTo(HaveOccurred())
	return res
}

// record is the Plan's CaptureProgress (it must exist).
func (h *harness) record(p *backupsv1alpha1.Plan) *driverv1alpha1.CaptureProgress {
	var cur backupsv1alpha1.Plan
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(p), &cur)).To(Succeed())
	rec, err := h.r.record(h.ctx, &cur)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(rec).NotTo(BeNil())
	return rec
}

func (h *harness) deployment(name string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &d)
	return &d, err
}

// report writes the record's status as the capture Pod does.
func (h *harness) report(rec *driverv1alpha1.CaptureProgress, newest int64, at time.Time, gap *driverv1alpha1.CaptureGap) {
	before := rec.DeepCopy()
	t := metav1.NewMicroTime(at)
	rec.Status.BaseRevision, rec.Status.Segments, rec.Status.NewestRevision = rec.Spec.BaseRevision, 3, newest
	rec.Status.NewestTime, rec.Status.UpdatedAt, rec.Status.Gap = &t, &t, gap
	h.g.Expect(env.Client.Status().Patch(h.ctx, rec, client.MergeFrom(before))).To(Succeed())
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.ev.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func arg(d *appsv1.Deployment, flag string) string {
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			return v
		}
	}
	return ""
}
