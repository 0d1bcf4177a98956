package rehearsalrecord

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

var keys = provenance.StaticKeys{ActiveID: "k", Keys: map[string][]byte{"k": []byte(strings.Repeat("k", 32))}}

func dryRunNamed(ns, name, uid string) *backupsv1alpha1.RestoreJob {
	return &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + uid)}}
}

func sample() Record {
	return Record{RevisionBefore: 1500, KeysBefore: 70, Report: &driverv1alpha1.RehearsalReport{RevisionBefore: 1500, RevisionAfter: 11500,
		KeysBefore: 70, KeysAfter: 90, NamespacesReturning: []string{"b", "c"},
		Resources: []driverv1alpha1.CountChange{{Name: "pods", Before: 5, After: 9}}}}
}

// The driver believes a record only as it wrote it, on the RestoreJob it
// wrote it for; anything else reads as no record, with the reason.
func TestReadBelievesOnlyTheDriversOwnRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rj := dryRunNamed("tenant", "rehearse", "1")
	raw, err := Encode(ctx, keys, rj, sample())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(raw)).To(BeNumerically("<=", MaxBytes))

	read := func(on *backupsv1alpha1.RestoreJob, value string) (Record, bool, string) {
		on = on.DeepCopy()
		on.Annotations = map[string]string{Annotation: value}
		rec, ok, ignored, err := Read(ctx, keys, on)
		g.Expect(err).NotTo(HaveOccurred())
		return rec, ok, ignored
	}
	rec, ok, ignored := read(rj, raw)
	g.Expect(ok).To(BeTrue(), ignored)
	g.Expect(rec.RevisionBefore).To(Equal(int64(1500)))
	g.Expect(rec.Report.NamespacesReturning).To(Equal([]string{"b", "c"}))
	g.Expect(rec.Signature).To(BeEmpty())

	// A tenant lowers the floor the Job is built from.
	edited := strings.Replace(raw, `"revisionBefore":1500,"keysBefore"`, `"revisionBefore":15,"keysBefore"`, 1)
	g.Expect(edited).NotTo(Equal(raw))
	other := provenance.StaticKeys{ActiveID: "k", Keys: map[string][]byte{"k": []byte(strings.Repeat("x", 32))}}
	foreign, err := Encode(ctx, other, rj, sample())
	g.Expect(err).NotTo(HaveOccurred())
	for name, tc := range map[string]struct {
		on    *backupsv1alpha1.RestoreJob
		value string
		why   string
	}{
		"edited":                       {rj, edited, "signature"},
		"copied to another RestoreJob": {dryRunNamed("tenant", "other", "2"), raw, "signature"},
		"on a re-created RestoreJob":   {dryRunNamed("tenant", "rehearse", "3"), raw, "signature"},
		"unsigned":                     {rj, `{"revisionBefore":15}`, "signature"},
		"with a field of its own":      {rj, strings.Replace(raw, "{", `{"extra":1,`, 1), "unknown field"},
		"with data after it":           {rj, raw + ` {}`, "data after"},
		"not JSON":                     {rj, "rehearse", "does not parse"},
		"over the bound":               {rj, raw[:len(raw)-1] + strings.Repeat(" ", MaxBytes) + "}", "bytes"},
		"signed with a foreign key":    {rj, foreign, "signature"},
	} {
		rec, ok, ignored := read(tc.on, tc.value)
		g.Expect(ok).To(BeFalse(), name)
		g.Expect(rec).To(Equal(Record{}), name)
		g.Expect(ignored).To(ContainSubstring(tc.why), name)
	}

	// No record is not an error, and nothing to explain.
	_, ok, ignored, err = Read(ctx, keys, rj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	g.Expect(ignored).To(BeEmpty())
}

// A report too long for the annotation has its lists cut, and says so.
func TestEncodeCutsAReportToTheBound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rj := dryRunNamed("tenant", "rehearse", "1")
	rec := sample()
	for i := range 200 {
		name := fmt.Sprintf("%s-%03d", strings.Repeat("n", 59), i)
		rec.Report.NamespacesReturning = append(rec.Report.NamespacesReturning, name)
		rec.Report.Resources = append(rec.Report.Resources, driverv1alpha1.CountChange{Name: name, Before: 1, After: 2})
	}
	rec.LiveUnread = strings.Repeat("u", 5000)
	raw, err := Encode(ctx, keys, rj, rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(raw)).To(BeNumerically("<=", MaxBytes))
	rj.Annotations = map[string]string{Annotation: raw}
	got, ok, ignored, err := Read(ctx, keys, rj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue(), ignored)
	g.Expect(got.Report.Truncated).To(BeTrue())
	g.Expect(len(got.LiveUnread)).To(BeNumerically("<=", MaxLiveUnread))
	g.Expect(len(rec.Report.Resources)).To(Equal(201), "the caller's report is left whole")
}

// Peek reads a record for display without verifying it.
func TestPeek(t *testing.T) {
	g := NewWithT(t)
	rj := dryRunNamed("tenant", "rehearse", "1")
	rj.Annotations = map[string]string{Annotation: `{"revisionBefore":9,"report":{"revisionAfter":42,"keysAfter":7}}`}
	rec, ok := Peek(rj)
	g.Expect(ok).To(BeTrue())
	g.Expect(rec.Report.RevisionAfter).To(Equal(int64(42)))
	rj.Annotations[Annotation] = "{"
	_, ok = Peek(rj)
	g.Expect(ok).To(BeFalse())
}
