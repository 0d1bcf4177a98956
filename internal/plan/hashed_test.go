package plan

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
)

// hashedThree is the first 03:MM UTC after t, MM being the minute H 3 * * *
// resolves to for key.
func hashedThree(t *testing.T, key string, after time.Time) (time.Time, int) {
	t.Helper()
	resolved, err := hashcron.Resolve("H 3 * * *", key)
	if err != nil {
		t.Fatal(err)
	}
	minute, err := strconv.Atoi(strings.Fields(resolved)[0])
	if err != nil {
		t.Fatal(err)
	}
	after = after.UTC()
	at := time.Date(after.Year(), after.Month(), after.Day(), 3, minute, 0, 0, time.UTC)
	if !at.After(after) {
		at = at.AddDate(0, 0, 1)
	}
	return at, minute
}

// A Plan written "H 3 * * *" is scheduled at the minute hashed from its
// namespace and name, says so, fires its BackupJob then, and keeps the
// minute when the controller restarts.
func TestHashedScheduleRunsAtTheHashedMinute(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	p := createPlan(g, ns, "nightly", "H 3 * * *", "", nil)
	due, minute := hashedThree(t, ns+"/nightly", p.CreationTimestamp.Time)
	now := p.CreationTimestamp.Add(time.Second)
	h := newHarness(now)

	res, err := h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(due.Sub(now)))
	g.Expect(record(g, p).NextScheduleTime.Time).To(BeTemporally("==", due))
	cond := meta.FindStatusCondition(getPlan(g, p).Status.Conditions, backupsv1alpha1.PlanConditionError)
	g.Expect(cond.Reason).To(Equal(backupsv1alpha1.PlanReasonScheduleValid))
	g.Expect(cond.Message).To(ContainSubstring(fmt.Sprintf(`"H 3 * * *" runs as "%d 3 * * *"`, minute)))
	g.Expect(ownJobs(g, p)).To(BeEmpty())

	// A minute early nothing starts; at the hashed minute the job does.
	h.clk.SetTime(due.Add(-time.Minute))
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ownJobs(g, p)).To(BeEmpty())
	h.clk.SetTime(due.Add(10 * time.Second))
	_, err = h.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	jobs := ownJobs(g, p)
	g.Expect(jobs).To(HaveLen(1))
	g.Expect(jobs[0].Name).To(Equal(cronschedule.RunName("nightly", due)))
	rec := record(g, p)
	g.Expect(rec.LastScheduleTime.Time).To(BeTemporally("==", due))
	g.Expect(rec.NextScheduleTime.Time).To(BeTemporally("==", due.AddDate(0, 0, 1)))

	// A restarted controller (a new reconciler) picks the same minute.
	restarted := newHarness(due.Add(time.Hour))
	_, err = restarted.reconcile(p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(record(g, p).NextScheduleTime.Time).To(BeTemporally("==", due.AddDate(0, 0, 1)))
	g.Expect(ownJobs(g, p)).To(HaveLen(1))
}
