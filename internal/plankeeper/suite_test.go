package plankeeper

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

// The suite runs on Cozystack's Plan CRD (testenv installs it): the Plans'
// spec has only applicationRef, backupClassName and schedule. Their
// BackupClass "etcd" binds Etcd applications to an Etcd strategy.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) {
		env = e
		class := &backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			}}},
		}
		if err := e.Client.Create(context.Background(), class); err != nil {
			panic(err)
		}
	}))
}

// testKeys sign the Backups these tests create, as the backup path would,
// and the Plans' records.
var testKeys = provenance.StaticKeys{ActiveID: "t", Keys: map[string][]byte{"t": []byte(strings.Repeat("t", 32))}}

// harness drives the reconciler directly against the real API server with
// a fake clock and a fake event sink.
type harness struct {
	r   *Reconciler
	clk *clocktesting.FakeClock
	rec *events.FakeRecorder
}

func newHarness(now time.Time) *harness {
	clk := clocktesting.NewFakeClock(now)
	rec := events.NewFakeRecorder(1000)
	return &harness{r: &Reconciler{Client: env.Client, APIReader: env.Client, Recorder: rec, Clock: clk, Keys: testKeys}, clk: clk, rec: rec}
}

func (h *harness) reconcile(p *backupsv1alpha1.Plan) (ctrl.Result, error) {
	return h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
}

// events returns the Events emitted since the last call.
func (h *harness) events() []string {
	return testenv.Drain(h.rec.Events)
}

func containing(evs []string, sub string) []string {
	var out []string
	for _, e := range evs {
		if strings.Contains(e, sub) {
			out = append(out, e)
		}
	}
	return out
}

func newNamespace(g Gomega) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "keeper-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// createPlan creates a Plan of the Etcd application "etcd" with the given
// schedule and annotations (the tenant's settings).
func createPlan(g Gomega, ns, name, cron string, annotations map[string]string) *backupsv1alpha1.Plan {
	p := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd",
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: cron},
		},
	}
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	return p
}

// keepLast is the annotation of a retention of n Backups.
func keepLast(n string) map[string]string {
	return map[string]string{planpolicy.RetentionKeepLast: n}
}

func getPlan(g Gomega, p *backupsv1alpha1.Plan) *backupsv1alpha1.Plan {
	var out backupsv1alpha1.Plan
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &out)).To(Succeed())
	return &out
}

// record is the driver's record on p, which must verify.
func record(g Gomega, p *backupsv1alpha1.Plan) planrecord.Record {
	rec, ignored, err := planrecord.Read(context.Background(), testKeys, getPlan(g, p))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ignored).To(BeEmpty())
	return rec
}

// annotate sets (or, with "", removes) annotations of p, as the tenant would.
func annotate(g Gomega, p *backupsv1alpha1.Plan, kv map[string]string) {
	cur := getPlan(g, p)
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	for k, v := range kv {
		if v == "" {
			delete(cur.Annotations, k)
		} else {
			cur.Annotations[k] = v
		}
	}
	g.Expect(env.Client.Update(context.Background(), cur)).To(Succeed())
}

// planBackup is a Backup of plan, as the backup path records it for a
// BackupJob whose spec.planRef names plan; sealed unless forged.
func planBackup(g Gomega, ns, name, plan string, takenAt time.Time, phase backupsv1alpha1.BackupPhase, forged bool) *backupsv1alpha1.Backup {
	rec := artifact.Record{SnapshotName: name + "-snap", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: "bkt", Endpoint: "https://s3.example.com", Key: ns + "/etcd/",
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{backupsv1alpha1.PlanNameLabel: plan}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: plan},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.NewTime(takenAt),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: phase},
	}
	if !forged {
		g.Expect(provenance.Seal(context.Background(), testKeys, b)).To(Succeed())
	}
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	return b
}

func createBackup(g Gomega, ns, name, plan string, takenAt time.Time, phase backupsv1alpha1.BackupPhase) {
	planBackup(g, ns, name, plan, takenAt, phase, false)
}

// backupNames are the Backups of ns not being deleted.
func backupNames(g Gomega, ns string) []string {
	var list backupsv1alpha1.BackupList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, b := range list.Items {
		if b.DeletionTimestamp == nil {
			out = append(out, b.Name)
		}
	}
	return out
}

func mustParse(t *testing.T, cron string) cronschedule.Schedule {
	t.Helper()
	s, err := cronschedule.Parse(cron, "")
	if err != nil {
		t.Fatalf("Parse(%q): %v", cron, err)
	}
	return s
}

// nthRun is the n-th run of s after t (n >= 1).
func nthRun(s cronschedule.Schedule, t time.Time, n int) time.Time {
	for range n {
		t = s.Next(t)
	}
	return t
}
