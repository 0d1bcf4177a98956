package plan

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// harness drives the Plan reconciler directly against the real API server
// with a fake clock and a fake event sink.
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
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plan-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func createPlan(g Gomega, ns, name, cron, tz string, mutate func(*backupsv1alpha1.Plan)) *backupsv1alpha1.Plan {
	p := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd",
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: cron, TimeZone: tz},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	return p
}

func getPlan(g Gomega, p *backupsv1alpha1.Plan) *backupsv1alpha1.Plan {
	var out backupsv1alpha1.Plan
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &out)).To(Succeed())
	return &out
}

func ownJobs(g Gomega, p *backupsv1alpha1.Plan) []backupsv1alpha1.BackupJob {
	var list backupsv1alpha1.BackupJobList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(p.Namespace),
		client.MatchingLabels{backupsv1alpha1.PlanNameLabel: p.Name})).To(Succeed())
	return list.Items
}

func setJobPhase(g Gomega, j *backupsv1alpha1.BackupJob, phase backupsv1alpha1.BackupJobPhase) {
	ctx := context.Background()
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
	j.Status.Phase = phase
	g.Expect(env.Client.Status().Update(ctx, j)).To(Succeed())
}

// nthRun is the n-th run of s after t (n >= 1).
func nthRun(s Schedule, t time.Time, n int) time.Time {
	for range n {
		t = s.Next(t)
	}
	return t
}
