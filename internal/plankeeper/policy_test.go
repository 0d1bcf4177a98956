package plankeeper

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
)

// The platform's bounds apply: a Plan asking to keep more than the
// maximum keeps the maximum, and one that asks nothing gets the default;
// the condition says so.
func TestRetentionWithinThePlatformsBounds(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	greedy := createPlan(g, ns, "greedy", "@yearly", keepLast("50"))
	quiet := createPlan(g, ns, "quiet", "@yearly", nil)
	now := getPlan(g, greedy).CreationTimestamp.Add(time.Minute)
	for i := 1; i <= 4; i++ {
		for _, plan := range []string{"greedy", "quiet"} {
			createBackup(g, ns, plan+"-"+string(rune('0'+i)), plan, now.Add(-time.Duration(i)*time.Hour), backupsv1alpha1.BackupPhaseReady)
		}
	}
	h := newHarness(now)
	// The StrategyPolicy of the Plans' Etcd strategy ("s3"): the
	// admin's bounds.
	policy(t, g, driverv1alpha1.Retention{DefaultKeepLast: ptr.To[int32](2), MaxKeepLast: ptr.To[int32](3)})
	for _, p := range []*backupsv1alpha1.Plan{greedy, quiet} {
		_, err := h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(backupNames(g, ns)).To(ConsistOf("greedy-1", "greedy-2", "greedy-3", "quiet-1", "quiet-2"))

	c := meta.FindStatusCondition(getPlan(g, greedy).Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.PlanReasonPolicyBounded))
	g.Expect(c.Message).To(Equal("retention-keep-last 50 is above the platform's maximum of 3: 3 applies"))
	c = meta.FindStatusCondition(getPlan(g, quiet).Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
	g.Expect(c.Message).To(ContainSubstring("the platform's default of 2 applies"))
	g.Expect(containing(h.events(), "Warning")).To(BeEmpty())
}

// An annotation that does not parse prunes nothing (not even by the
// platform's default), says which annotation on the Plan's condition, and
// warns once per change; fixed, it applies.
func TestBadRetentionPrunesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "typo", "@yearly", map[string]string{planpolicy.RetentionKeepLast: "2 backups", planpolicy.RetentionMaxAge: "a month"})
	now := getPlan(g, p).CreationTimestamp.Add(time.Minute)
	for i, name := range []string{"b1", "b2", "b3", "b4"} {
		createBackup(g, ns, name, "typo", now.Add(-time.Duration(40*(i+1))*24*time.Hour), backupsv1alpha1.BackupPhaseReady)
	}
	h := newHarness(now)
	policy(t, g, driverv1alpha1.Retention{DefaultKeepLast: ptr.To[int32](1), DefaultMaxAge: &metav1.Duration{Duration: 10000 * time.Hour}})
	for range 2 {
		_, err := h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(backupNames(g, ns)).To(ConsistOf("b1", "b2", "b3", "b4"))
	c := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal("InvalidRetentionKeepLast"))
	g.Expect(c.Message).To(ContainSubstring(`annotation etcd-backup-driver.cozystack.io/retention-keep-last is "2 backups", which is not an integer of at least 1; it is not applied`))
	g.Expect(c.Message).To(ContainSubstring(`annotation etcd-backup-driver.cozystack.io/retention-max-age is "a month"`))
	g.Expect(containing(h.events(), "InvalidRetentionKeepLast")).To(HaveLen(1), "one Warning per change, not per reconcile")

	annotate(g, p, map[string]string{planpolicy.RetentionKeepLast: "2", planpolicy.RetentionMaxAge: ""})
	_, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(backupNames(g, ns)).To(ConsistOf("b1", "b2"))
	c = meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(backupsv1alpha1.PlanReasonPolicyBounded), "the platform's default max age applies")
	g.Expect(containing(h.events(), "Warning")).To(BeEmpty())
}

// A Plan whose BackupClass binds its application to another kind of
// strategy (or names a class that does not exist) is not the driver's:
// its Backups are not pruned, no drill runs, nothing is written to it.
func TestAPlanOfAnotherStrategyIsLeftAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	class := &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "velero-"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Velero", Name: "v"},
		}}},
	}
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	for i, className := range []string{class.Name, "missing"} {
		name := []string{"velero", "classless"}[i]
		ann := keepLast("1")
		ann[planpolicy.DrillSchedule] = "* * * * *"
		p := createPlan(g, ns, name, "@yearly", ann)
		cur := getPlan(g, p)
		cur.Spec.BackupClassName = className
		g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		before := getPlan(g, p)
		now := before.CreationTimestamp.Add(2 * time.Minute)
		createBackup(g, ns, name+"-1", name, now.Add(-2*time.Hour), backupsv1alpha1.BackupPhaseReady)
		createBackup(g, ns, name+"-2", name, now.Add(-time.Hour), backupsv1alpha1.BackupPhaseReady)
		h := newHarness(now)
		res, err := h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.RequeueAfter).To(BeZero())
		g.Expect(backupNames(g, ns)).To(ContainElements(name+"-1", name+"-2"))
		g.Expect(getPlan(g, p).ResourceVersion).To(Equal(before.ResourceVersion), "the Plan was written to")
		g.Expect(h.events()).To(BeEmpty())
	}
}

// policy gives the suite's Etcd strategy ("s3") a StrategyPolicy with the
// admin's retention defaults and bounds ret, for the test's length.
func policy(t *testing.T, g *WithT, ret driverv1alpha1.Retention) {
	sp := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s3"},
		Spec: driverv1alpha1.StrategyPolicySpec{Retention: &ret}}
	g.Expect(env.Client.Create(context.Background(), sp)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), sp) })
}
