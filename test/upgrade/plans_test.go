package upgrade

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plankeeper"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// legacyPlan creates a Plan as the earlier release's users wrote them,
// with its settings in the spec (the earlier CRD stores them), and
// returns it typed (which does not see them).
func legacyPlan(g Gomega, ns, name string, spec map[string]any, annotations map[string]string) *backupsv1alpha1.Plan {
	base := map[string]any{
		"applicationRef":  map[string]any{"kind": "Etcd", "name": "etcd"},
		"backupClassName": "etcd",
	}
	for k, v := range spec {
		base[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": backupsv1alpha1.GroupVersion.String(), "kind": "Plan",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     base,
	}}
	u.SetAnnotations(annotations)
	// The dynamic client sends the object as it is (controller-runtime's
	// encodes a kind its scheme knows through the typed Plan, which
	// would drop the fields).
	plans := dynamic.NewForConfigOrDie(env.Config).Resource(backupsv1alpha1.GroupVersion.WithResource("plans")).Namespace(ns)
	created, err := plans.Create(context.Background(), u, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	stored, _, _ := unstructured.NestedMap(created.Object, "spec", "retention")
	g.Expect(stored).NotTo(BeEmpty(), "the earlier CRD stores spec.retention")
	return getPlan(g, ns, name)
}

func getPlan(g Gomega, ns, name string) *backupsv1alpha1.Plan {
	var p backupsv1alpha1.Plan
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p)).To(Succeed())
	return &p
}

// backup records a sealed Ready Backup of plan, as the backup path does.
func backup(g Gomega, ns, name, plan string, takenAt time.Time) {
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
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady},
	}
	g.Expect(provenance.Seal(context.Background(), testKeys, b)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
}

func backups(g Gomega, ns string) []string {
	var list backupsv1alpha1.BackupList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, b := range list.Items {
		out = append(out, b.Name)
	}
	return out
}

func newNamespace(g Gomega) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "upgrade-"}}
	g.Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// keeper is the plan policy controller, reconciling one Plan on demand.
type keeper struct {
	r   *plankeeper.Reconciler
	rec *events.FakeRecorder
}

func newKeeper(now time.Time) *keeper {
	rec := events.NewFakeRecorder(100)
	return &keeper{rec: rec, r: &plankeeper.Reconciler{Client: env.Client, APIReader: env.Client, Recorder: rec,
		Clock: clocktesting.NewFakeClock(now), Keys: testKeys}}
}

func (k *keeper) reconcile(g Gomega, p *backupsv1alpha1.Plan) {
	_, err := k.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p)})
	g.Expect(err).NotTo(HaveOccurred())
}

// A driver upgraded over a Plan written with the earlier CRD's fields
// reads them once, writes them where they live now (annotations, and the
// time zone as the cron's CRON_TZ= prefix), says so in one Event, and
// applies them: retention prunes as the Plan said.
func TestSettingsOfTheEarlierCRDAreMovedOnce(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := legacyPlan(g, ns, "nightly", map[string]any{
		"schedule":                   map[string]any{"cron": "H 3 * * *", "timeZone": "Europe/Berlin"},
		"retention":                  map[string]any{"keepLast": int64(2), "maxAge": "720h0m0s"},
		"drill":                      map[string]any{"cron": "0 4 * * 0", "window": "192h0m0s"},
		"suspend":                    true,
		"concurrencyPolicy":          "Allow",
		"startingDeadlineSeconds":    int64(600),
		"successfulJobsHistoryLimit": int64(5),
	}, nil)
	now := p.CreationTimestamp.Add(time.Minute)
	for i, name := range []string{"b1", "b2", "b3"} {
		backup(g, ns, name, "nightly", now.Add(-time.Duration(3-i)*time.Hour))
	}
	k := newKeeper(now)
	k.reconcile(g, p)

	p = getPlan(g, ns, "nightly")
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.RetentionKeepLast, "2"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.RetentionMaxAge, "720h0m0s"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.DrillSchedule, "0 4 * * 0"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.DrillWindow, "192h0m0s"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.Suspend, "true"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.ConcurrencyPolicy, "Allow"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.StartingDeadlineSeconds, "600"))
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.SuccessfulJobsHistoryLimit, "5"))
	g.Expect(p.Spec.Schedule.Cron).To(Equal("CRON_TZ=Europe/Berlin H 3 * * *"))
	evs := testenv.Drain(k.rec.Events)
	g.Expect(evs).To(ContainElement(And(ContainSubstring(backupsv1alpha1.PlanReasonSettingsMigrated),
		ContainSubstring("spec.retention.keepLast (2) to "+planpolicy.RetentionKeepLast),
		ContainSubstring("spec.schedule.timeZone (CRON_TZ=Europe/Berlin) to spec.schedule.cron"))))
	rec, ignored, err := planrecord.Read(context.Background(), testKeys, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ignored).To(BeEmpty())
	g.Expect(rec.SettingsRead).To(BeTrue())
	g.Expect(backups(g, ns)).To(ConsistOf("b2", "b3"), "the moved retention applies")
	g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())

	// Once: the old fields are not read again, so a later change of an
	// annotation is the tenant's and stands.
	annotate(g, p, planpolicy.RetentionKeepLast, "1")
	k.reconcile(g, p)
	g.Expect(testenv.Drain(k.rec.Events)).NotTo(ContainElement(ContainSubstring(backupsv1alpha1.PlanReasonSettingsMigrated)))
	g.Expect(backups(g, ns)).To(ConsistOf("b3"))
	p = getPlan(g, ns, "nightly")
	g.Expect(p.Annotations).To(HaveKeyWithValue(planpolicy.RetentionKeepLast, "1"))
	g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
}

// When an annotation already says something else than the earlier field,
// the driver refuses: it changes nothing, names both on the Plan's
// condition, and applies neither (no pruning from a setting it cannot
// tell the tenant meant), until the two agree or one goes.
func TestAConflictingSettingIsRefused(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := legacyPlan(g, ns, "nightly", map[string]any{
		"schedule":  map[string]any{"cron": "0 3 * * *"},
		"retention": map[string]any{"keepLast": int64(1)},
	}, map[string]string{planpolicy.RetentionKeepLast: "5", planpolicy.DrillSchedule: "0 4 * * 0"})
	now := p.CreationTimestamp.Add(time.Minute)
	for i, name := range []string{"b1", "b2", "b3"} {
		backup(g, ns, name, "nightly", now.Add(-time.Duration(3-i)*time.Hour))
	}
	k := newKeeper(now)
	for range 2 {
		k.reconcile(g, p)
	}
	after := getPlan(g, ns, "nightly")
	g.Expect(after.Annotations).To(HaveKeyWithValue(planpolicy.RetentionKeepLast, "5"))
	g.Expect(after.Spec).To(Equal(p.Spec))
	g.Expect(backups(g, ns)).To(ConsistOf("b1", "b2", "b3"))
	c := meta.FindStatusCondition(after.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.PlanReasonMigrationConflict))
	g.Expect(c.Message).To(HavePrefix(`spec.retention.keepLast is "1" but annotation ` + planpolicy.RetentionKeepLast + ` says "5"`))
	evs := testenv.Drain(k.rec.Events)
	g.Expect(evs).To(HaveLen(1), "one Warning, not one per reconcile: %v", evs)
	g.Expect(evs[0]).To(ContainSubstring("Warning " + backupsv1alpha1.PlanReasonMigrationConflict))
	rec, _ := planrecord.Peek(after)
	g.Expect(rec.SettingsRead).To(BeFalse())

	// The tenant settles it by removing the annotation: the earlier field
	// moves and applies.
	annotate(g, after, planpolicy.RetentionKeepLast, "")
	k.reconcile(g, after)
	after = getPlan(g, ns, "nightly")
	g.Expect(after.Annotations).To(HaveKeyWithValue(planpolicy.RetentionKeepLast, "1"))
	g.Expect(backups(g, ns)).To(ConsistOf("b3"))
	g.Expect(meta.IsStatusConditionTrue(after.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
	g.Expect(strings.Join(testenv.Drain(k.rec.Events), "\n")).To(ContainSubstring(backupsv1alpha1.PlanReasonSettingsMigrated))
}

// annotate sets (or, with "", removes) an annotation, as the tenant would.
func annotate(g Gomega, p *backupsv1alpha1.Plan, key, value string) {
	cur := getPlan(g, p.Namespace, p.Name)
	base := cur.DeepCopy()
	if value == "" {
		delete(cur.Annotations, key)
	} else {
		cur.Annotations[key] = value
	}
	g.Expect(env.Client.Patch(context.Background(), cur, client.MergeFrom(base))).To(Succeed())
}
