package inspection

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
)

// runningInspectionJobs counts the Jobs labelled as inspections that have
// not ended, whoever made them (other tests leave some running).
func runningInspectionJobs(h *harness) int {
	var jobs batchv1.JobList
	h.g.Expect(env.Client.List(h.ctx, &jobs, client.HasLabels{backupsv1alpha1.InspectionLabel})).To(Succeed())
	n := 0
	for i := range jobs.Items {
		if o, _ := tenantjobs.OutcomeOf(&jobs.Items[i]); o == tenantjobs.Running && jobs.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// A tenant cannot take the platform's inspection slots: eight suspended
// Jobs in its namespace with the driver's exact labels, owner reference
// (its own Backups) and Pod template, under names of the driver's form
// (a MAC of the Backup's UID, under a key of the tenant's), do not keep
// another tenant's Backup from being inspected.
func TestLookAlikeJobsTakeNoInspectionSlot(t *testing.T) {
	tenant := newHarness(t)
	g := tenant.g
	slots := runningInspectionJobs(tenant) + 8
	policy, err := strategypolicy.Of(tenant.ctx, env.Client, "etcd-s3")
	g.Expect(err).NotTo(HaveOccurred())
	for i := range 8 {
		b := tenant.backup(fmt.Sprintf("old-%d", i), i)
		name := tenantjobs.KeyedName("etcd-inspect-", []byte("the tenant's own key, not the driver's"), "etcd-backup-driver inspection job", b.UID)
		s, err := tenant.r.spec(b, name, policy)
		g.Expect(err).NotTo(HaveOccurred())
		lookAlike := Build(s)
		lookAlike.Spec.Suspend = ptr(true)
		g.Expect(env.Client.Create(tenant.ctx, lookAlike)).To(Succeed())
	}

	other := newHarness(t)
	other.r.MaxJobs = slots
	b := other.backup("nightly", 0)
	other.reconcile(b)
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job etcd-inspect-"))
	other.job(b)
}

// One tenant's Backups take at most --max-inspection-jobs-per-namespace
// of the slots; the others wait for one of theirs to end, while another
// tenant's Backup is inspected at once.
func TestANamespaceTakesAtMostItsShareOfInspectionSlots(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.r.MaxJobs, h.r.MaxJobsPerNamespace = runningInspectionJobs(h)+10, 2
	b1, b2, b3 := h.backup("first", 0), h.backup("second", 10), h.backup("third", 20)
	h.reconcile(b1)
	h.reconcile(b2)
	j1 := h.job(b1)
	h.job(b2)
	res, err := h.r.Reconcile(h.ctx, reconcileRequest(b3))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b3), b3)).To(Succeed())
	g.Expect(condition(b3, backupsv1alpha1.BackupConditionInspected)).To(Equal(
		"False InspectionPending: waiting for a slot: 2 inspections of namespace " + h.ns + " run and at most 2 of one namespace run at once (--max-inspection-jobs-per-namespace)"))
	name, _ := h.r.jobName(h.ctx, b3)
	g.Expect(apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &batchv1.Job{}))).To(BeTrue())

	other := newHarness(t)
	other.r.MaxJobs, other.r.MaxJobsPerNamespace = h.r.MaxJobs, 2
	b := other.backup("nightly", 0)
	other.reconcile(b)
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job "))

	h.finish(j1, inspected(manifest(1, "default")), nil)
	h.reconcile(b3)
	g.Expect(condition(b3, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job "))
	h.job(b3)
}

// A tenant that suspends the driver's own inspection Jobs of its Backups
// (exactly the driver's, so they pass tenantjobs.Mine; a suspended Job's
// deadline stops) holds no slot: the driver never suspends a Job, so a
// suspended one has ended (tenantjobs.OutcomeOf), and another tenant's
// Backup is inspected at once.
func TestSuspendedDriverJobsTakeNoInspectionSlot(t *testing.T) {
	tenant := newHarness(t)
	g := tenant.g
	before := runningInspectionJobs(tenant)
	tenant.r.MaxJobs, tenant.r.MaxJobsPerNamespace = before+10, 0
	for i := range 2 {
		b := tenant.backup(fmt.Sprintf("held-%d", i), i)
		tenant.reconcile(b)
		j := tenant.job(b)
		j.Spec.Suspend = ptr(true)
		g.Expect(env.Client.Update(tenant.ctx, j)).To(Succeed())
	}

	other := newHarness(t)
	other.r.MaxJobs, other.r.MaxJobsPerNamespace = before+2, 0
	b := other.backup("nightly", 0)
	other.reconcile(b)
	g.Expect(condition(b, backupsv1alpha1.BackupConditionInspected)).To(HavePrefix("False InspectionPending: inspecting the snapshot in Job etcd-inspect-"))
	other.job(b)
}
