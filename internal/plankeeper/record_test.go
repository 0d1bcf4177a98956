package plankeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
)

// What the rehearsal-overdue alert counts cannot be written by a tenant:
// a record on its Plan claiming a recent successful rehearsal (made up,
// edited from the driver's, or copied from another Plan of the tenant's
// that did rehearse) does not silence it, and removing or spoiling the
// record of a Plan that did rehearse does not fire it. The driver reads
// such a record as none, derives what it can from its own drills, and
// writes its record afresh.
func TestARecordForgedByTheTenantMovesNoAlert(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	window := 30 * time.Minute
	lazy := createPlan(g, ns, "lazy", "0 3 * * *", withDrill("0 0 1 1 *", window))
	busy := createPlan(g, ns, "busy", "0 3 * * *", withDrill("*/10 * * * *", 24*time.Hour))
	created := busy.CreationTimestamp.Time
	judgedBackup(g, ns, "good", "busy", created.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))

	// busy rehearses successfully; lazy never does.
	due := nthRun(mustParse(t, "*/10 * * * *"), created, 1)
	h := newHarness(due.Add(5 * time.Second))
	_, err := h.reconcile(busy)
	g.Expect(err).NotTo(HaveOccurred())
	drills := ownDrillJobs(g, busy)
	g.Expect(drills).To(HaveLen(1))
	endDrill(g, &drills[0], backupsv1alpha1.RestoreJobPhaseSucceeded, due.Add(time.Minute).Truncate(time.Second), "ok")
	// Past lazy's window.
	h.clk.SetTime(created.Add(window + time.Minute))
	for _, p := range []*backupsv1alpha1.Plan{busy, lazy} {
		_, err = h.reconcile(p)
		g.Expect(err).NotTo(HaveOccurred())
	}
	overdue := func(p *backupsv1alpha1.Plan) float64 {
		v, ok := series(g, "etcd_backup_driver_plan_rehearsal_overdue", ns, p.Name)
		g.Expect(ok).To(BeTrue())
		return v
	}
	g.Expect(overdue(lazy)).To(Equal(1.0))
	g.Expect(overdue(busy)).To(Equal(0.0))
	genuine := getPlan(g, busy).Annotations[planrecord.Annotation]
	g.Expect(record(g, busy).LastSuccessfulRehearsalTime.Time).To(BeTemporally("==", due))

	recent := h.clk.Now().UTC().Format(time.RFC3339)
	for name, forged := range map[string]string{
		"made up":                 fmt.Sprintf(`{"lastSuccessfulRehearsalTime":%q}`, recent),
		"copied from busy":        genuine,
		"the driver's, edited":    editRecord(g, genuine, recent),
		"made up, with a mark":    fmt.Sprintf(`{"lastSuccessfulRehearsalTime":%q,"signature":"k1.t.AAAA"}`, recent),
		"not a record":            "rehearsed yesterday",
		"over the size bound":     fmt.Sprintf(`{"lastSuccessfulRehearsalTime":%q, "signature":%q}`, recent, strings.Repeat("x", planrecord.MaxBytes)),
		"with an unknown field":   fmt.Sprintf(`{"lastSuccessfulRehearsalTime":%q,"trustMe":true}`, recent),
		"two records, one signed": genuine + genuine,
	} {
		annotate(g, lazy, map[string]string{planrecord.Annotation: forged})
		_, err = h.reconcile(lazy)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(overdue(lazy)).To(Equal(1.0), "%s silenced the alert", name)
		c := meta.FindStatusCondition(getPlan(g, lazy).Status.Conditions, backupsv1alpha1.PlanConditionRehearsalOverdue)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), name)
		g.Expect(record(g, lazy).LastSuccessfulRehearsalTime).To(BeNil(), "%s: the record was not rewritten", name)
		_, ok := series(g, "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds", ns, "lazy")
		g.Expect(ok).To(BeFalse(), name)
	}

	// Spoiling busy's record does not fire its alert: its own drill still
	// says when it last rehearsed.
	for name, spoiled := range map[string]string{
		"removed": "",
		"edited":  editRecord(g, genuine, "2000-01-01T00:00:00Z"),
	} {
		annotate(g, busy, map[string]string{planrecord.Annotation: spoiled})
		_, err = h.reconcile(busy)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(overdue(busy)).To(Equal(0.0), "%s fired the alert", name)
		g.Expect(record(g, busy).LastSuccessfulRehearsalTime.Time).To(BeTemporally("==", due), name)
	}
}

// editRecord changes the last successful rehearsal time in a record,
// keeping everything else (its signature too).
func editRecord(g Gomega, raw, at string) string {
	var rec map[string]any
	g.Expect(json.Unmarshal([]byte(raw), &rec)).To(Succeed())
	rec["lastSuccessfulRehearsalTime"] = at
	out, err := json.Marshal(rec)
	g.Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// A crash after the drill's RestoreJob was created and before the Plan's
// record was written does not start the drill a second time.
func TestACrashBeforeTheRecordDoesNotRepeatADrill(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "crashy", "0 3 * * *", withDrill("*/10 * * * *", 24*time.Hour))
	created := p.CreationTimestamp.Time
	judgedBackup(g, ns, "good", "crashy", created.Add(-time.Hour), cond(backupsv1alpha1.BackupConditionVerified, metav1.ConditionTrue))
	due := nthRun(mustParse(t, "*/10 * * * *"), created, 1)
	h := newHarness(due.Add(5 * time.Second))
	h.r.Client = failPlanWrites{Client: env.Client}
	_, err := h.reconcile(p)
	g.Expect(err).To(MatchError(ContainSubstring("crashed")))
	g.Expect(ownDrillJobs(g, p)).To(HaveLen(1))
	g.Expect(getPlan(g, p).Annotations).NotTo(HaveKey(planrecord.Annotation))

	h.r.Client = env.Client
	h.clk.Step(time.Minute)
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownDrillJobs(g, p)).To(HaveLen(1))
	g.Expect(record(g, p).LastDrillTime.Time).To(BeTemporally("==", due))
	g.Expect(containing(h.events(), backupsv1alpha1.PlanReasonRehearsalStarted)).To(HaveLen(1))
}

// failPlanWrites fails every patch of a Plan, as a driver that crashed
// right after acting.
type failPlanWrites struct{ client.Client }

func (c failPlanWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*backupsv1alpha1.Plan); ok {
		return errors.New("crashed before writing the Plan")
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// The driver writes its record and conditions only onto the Plan it read:
// when Cozystack's Plan controller (or anyone) wrote the Plan in between,
// the write fails with Conflict instead of putting back what the driver
// read (the Plan's conditions are one list, replaced whole by a patch),
// and the next reconcile starts from what is stored.
func TestAWriteDoesNotClobberAConcurrentWriter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	p := createPlan(g, ns, "shared", "0 3 * * *", nil)
	stale := getPlan(g, p)

	cozystack := getPlan(g, p)
	meta.SetStatusCondition(&cozystack.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.PlanConditionError, Status: metav1.ConditionTrue,
		Reason: "CronSpecIsInvalid", Message: "could not parse cron"})
	g.Expect(env.Client.Status().Update(ctx, cozystack)).To(Succeed())

	u := planrecord.Update{Set: []metav1.Condition{planrecord.Condition(stale, backupsv1alpha1.PlanConditionPolicyValid, metav1.ConditionTrue, backupsv1alpha1.PlanReasonPolicyValid, "valid")}}
	err := planrecord.Save(ctx, env.Client, testKeys, stale, u)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a write over a newer Plan: %v", err)
	g.Expect(meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)).NotTo(BeNil(), "Cozystack's condition was overwritten")

	// From what is stored, both conditions are kept.
	g.Expect(planrecord.Save(ctx, env.Client, testKeys, getPlan(g, p), u)).To(Succeed())
	conds := getPlan(g, p).Status.Conditions
	g.Expect(meta.FindStatusCondition(conds, backupsv1alpha1.PlanConditionError).Reason).To(Equal("CronSpecIsInvalid"))
	g.Expect(meta.IsStatusConditionTrue(conds, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
}
