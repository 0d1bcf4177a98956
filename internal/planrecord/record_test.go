package planrecord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

var keys = provenance.StaticKeys{ActiveID: "k", Keys: map[string][]byte{"k": []byte(strings.Repeat("k", 32))}}

func planNamed(ns, name, uid string) *backupsv1alpha1.Plan {
	return &backupsv1alpha1.Plan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + uid)}}
}

func sample() Record {
	at := metav1.NewTime(time.Date(2026, 5, 4, 3, 10, 0, 0, time.UTC))
	return Record{LastScheduleTime: &at, LastSuccessfulBackup: "b1", LastSuccessfulRehearsalTime: &at,
		LastRehearsal: &Rehearsal{RestoreJob: "d", Backup: "b1", Succeeded: true, ScheduledAt: at, CompletedAt: at, Message: strings.Repeat("m", 5000)}}
}

// The driver believes a record only as it wrote it, on the Plan it wrote
// it for; anything else reads as no record, with the reason.
func TestReadBelievesOnlyTheDriversOwnRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := planNamed("tenant", "nightly", "1")
	raw, err := Encode(ctx, keys, p, sample())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(raw)).To(BeNumerically("<=", MaxBytes))

	read := func(plan *backupsv1alpha1.Plan, value string) (Record, string) {
		plan = plan.DeepCopy()
		plan.Annotations = map[string]string{Annotation: value}
		rec, ignored, err := Read(ctx, keys, plan)
		g.Expect(err).NotTo(HaveOccurred())
		return rec, ignored
	}
	rec, ignored := read(p, raw)
	g.Expect(ignored).To(BeEmpty())
	g.Expect(rec.LastSuccessfulBackup).To(Equal("b1"))
	g.Expect(rec.LastRehearsal.Message).To(HaveLen(MaxMessage), "the message is cut to its bound")
	g.Expect(rec.Signature).To(BeEmpty())

	edited := strings.Replace(raw, `"lastSuccessfulRehearsalTime":"2026-05-04T03:10:00Z"`, `"lastSuccessfulRehearsalTime":"2099-01-01T00:00:00Z"`, 1)
	g.Expect(edited).NotTo(Equal(raw))
	for name, tc := range map[string]struct {
		plan  *backupsv1alpha1.Plan
		value string
		why   string
	}{
		"edited":                    {p, edited, "signature"},
		"copied to another Plan":    {planNamed("tenant", "other", "2"), raw, "signature"},
		"on a re-created Plan":      {planNamed("tenant", "nightly", "3"), raw, "signature"},
		"unsigned":                  {p, `{"lastSuccessfulRehearsalTime":"2099-01-01T00:00:00Z"}`, "signature"},
		"with a field of its own":   {p, strings.Replace(raw, "{", `{"extra":1,`, 1), "unknown field"},
		"with data after it":        {p, raw + ` {}`, "data after"},
		"not JSON":                  {p, "nightly", "does not parse"},
		"over the bound":            {p, raw[:len(raw)-1] + strings.Repeat(" ", MaxBytes) + "}", "bytes"},
		"signed with a foreign key": {p, foreignlySigned(t, p), "signature"},
	} {
		rec, ignored := read(tc.plan, tc.value)
		g.Expect(rec).To(Equal(Record{}), name)
		g.Expect(ignored).To(ContainSubstring(tc.why), name)
	}

	// No record is not an error.
	rec, ignored, err = Read(ctx, keys, p)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ignored).To(BeEmpty())
	g.Expect(rec).To(Equal(Record{}))
}

func foreignlySigned(t *testing.T, p *backupsv1alpha1.Plan) string {
	other := provenance.StaticKeys{ActiveID: "k", Keys: map[string][]byte{"k": []byte(strings.Repeat("x", 32))}}
	raw, err := Encode(context.Background(), other, p, sample())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Peek reads a record for display without verifying it.
func TestPeek(t *testing.T) {
	g := NewWithT(t)
	p := planNamed("tenant", "nightly", "1")
	raw, _ := json.Marshal(Record{LastSuccessfulBackup: "b9"})
	p.Annotations = map[string]string{Annotation: string(raw)}
	rec, ok := Peek(p)
	g.Expect(ok).To(BeTrue())
	g.Expect(rec.LastSuccessfulBackup).To(Equal("b9"))
	p.Annotations[Annotation] = "{"
	_, ok = Peek(p)
	g.Expect(ok).To(BeFalse())
}

// The driver's own writes (its record, conditions, Cozystack's status
// writes) wake neither Plan controller; the tenant's settings and a new
// spec do.
func TestChangesPassesOnlyWhatCanChangeADecision(t *testing.T) {
	g := NewWithT(t)
	old := planNamed("tenant", "nightly", "1")
	old.Generation = 1
	old.Annotations = map[string]string{Annotation: "a", "etcd-backup-driver.cozystack.io/retention-keep-last": "3"}
	pass := func(mutate func(p *backupsv1alpha1.Plan)) bool {
		n := old.DeepCopy()
		mutate(n)
		return Changes().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n})
	}
	g.Expect(pass(func(p *backupsv1alpha1.Plan) { p.Annotations[Annotation] = "b" })).To(BeFalse(), "the driver's record")
	g.Expect(pass(func(p *backupsv1alpha1.Plan) {
		p.Status.Conditions = []metav1.Condition{{Type: "Error", Status: metav1.ConditionFalse}}
		p.ResourceVersion = "2"
	})).To(BeFalse(), "a status write")
	g.Expect(pass(func(p *backupsv1alpha1.Plan) {
		p.Annotations["etcd-backup-driver.cozystack.io/retention-keep-last"] = "4"
	})).To(BeTrue())
	g.Expect(pass(func(p *backupsv1alpha1.Plan) {
		delete(p.Annotations, "etcd-backup-driver.cozystack.io/retention-keep-last")
	})).To(BeTrue())
	g.Expect(pass(func(p *backupsv1alpha1.Plan) { p.Generation = 2 })).To(BeTrue())
	now := metav1.Now()
	g.Expect(pass(func(p *backupsv1alpha1.Plan) { p.DeletionTimestamp = &now })).To(BeTrue())
}
