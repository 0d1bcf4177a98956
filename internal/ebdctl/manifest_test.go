package ebdctl

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// smallManifest is a small manifest of one /registry keyspace.
func smallManifest(rev int64, resources map[string]int64, namespaces ...string) *driverv1alpha1.BackupManifest {
	ks := driverv1alpha1.KeyspaceManifest{Prefix: "/registry", Namespaces: int64(len(namespaces)), NamespaceNames: namespaces}
	for name, n := range resources {
		ks.Resources = append(ks.Resources, driverv1alpha1.ObjectCount{Name: name, Count: n})
		ks.Objects += n
	}
	for _, ns := range namespaces {
		ks.TopNamespaces = append(ks.TopNamespaces, driverv1alpha1.ObjectCount{Name: ns, Count: 2})
	}
	return &driverv1alpha1.BackupManifest{InspectedAt: metav1.NewTime(now.Add(-time.Hour)), Revision: rev, CompactedRevision: rev - 10,
		Keys: ks.Objects + 5, DBSizeBytes: 2 << 20, Keyspaces: []driverv1alpha1.KeyspaceManifest{ks}}
}

// payloadOf gives b the peer's payload when it has none, for the
// driver's records to sit beside.
func payloadOf(b *backupsv1alpha1.Backup) *backupsv1alpha1.Backup {
	if b.Status.UnderlyingResources == nil {
		b.Status.UnderlyingResources = &runtime.RawExtension{Raw: []byte(`{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1"}`)}
	}
	return b
}

func withManifest(b *backupsv1alpha1.Backup, m *driverv1alpha1.BackupManifest) *backupsv1alpha1.Backup {
	if err := artifact.SetManifest(payloadOf(b), m); err != nil {
		panic(err)
	}
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionInspected,
		Status: metav1.ConditionTrue, Reason: backupsv1alpha1.BackupReasonInspected, Message: "manifest verified"})
	return b
}

func TestShowPrintsTheManifest(t *testing.T) {
	g := NewWithT(t)
	b := withManifest(readyBackup("tenant-a", "b1", "etcd", 2*time.Hour),
		smallManifest(420, map[string]int64{"pods": 7, "configmaps": 3}, "default", "kube-system", "shop"))
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionContentDrop,
		Status: metav1.ConditionFalse, Reason: backupsv1alpha1.BackupReasonContentUnchanged, Message: "nothing dropped"})
	g.Expect(artifact.SetLastRehearsal(b, &driverv1alpha1.RehearsalRecord{RestoreJob: "drill-1", Succeeded: true,
		CompletedAt: metav1.NewTime(now.Add(-3 * time.Hour)), Message: "booted at revision 420"})).To(Succeed())
	b.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b2"}
	e, out, _ := fakeEnv(b)
	g.Expect(e.run("show", "b1", "-n", "tenant-a")).To(Succeed())
	text := out.String()
	for _, want := range []string{
		"Backup tenant-a/b1 of application etcd",
		"Inspected:    True (Inspected): manifest verified",
		"ContentDrop:  False (ContentKept): nothing dropped",
		"retention keeps this Backup because Backup b2 dropped content",
		"Rehearsal:    succeeded 3h ago (RestoreJob drill-1): booted at revision 420",
		"Revision:     420 (compacted at 410)",
		"Keys:         15",
		"Database:     2.0MiB (2097152 bytes)",
		"Keyspace /registry: 10 objects, 3 namespaces",
		"namespaces: default, kube-system, shop",
	} {
		g.Expect(text).To(ContainSubstring(want))
	}
	g.Expect(text).To(MatchRegexp(`(?m)^  pods\s+7$`))
	g.Expect(text).To(MatchRegexp(`(?m)^  shop\s+2$`))

	out.Reset()
	g.Expect(e.run("show", "b1", "-n", "tenant-a", "-o", "json")).To(Succeed())
	var res ShowResult
	g.Expect(json.Unmarshal(out.Bytes(), &res)).To(Succeed())
	g.Expect(res.Manifest).NotTo(BeNil())
	g.Expect(res.Manifest.Revision).To(Equal(int64(420)))
	g.Expect(res.Inspected.Status).To(Equal("True"))
	g.Expect(res.HeldForContentDrop).To(Equal("b2"))
	g.Expect(res.LastRehearsal.RestoreJob).To(Equal("drill-1"))
}

// A Backup the driver could not inspect says why and exits 1; a hostile
// message cannot drive the terminal.
func TestShowWithoutManifestSaysWhyAndFails(t *testing.T) {
	g := NewWithT(t)
	b := readyBackup("tenant-a", "b1", "etcd", time.Hour)
	b.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionFalse,
		Reason: backupsv1alpha1.BackupReasonInspectionFailed, Message: "snapshot does not open as bbolt\x1b[2J"}}
	e, out, _ := fakeEnv(b)
	err := e.run("show", "b1", "-n", "tenant-a")
	g.Expect(errors.Is(err, silentFailure)).To(BeTrue(), "%v", err)
	g.Expect(out.String()).To(ContainSubstring("No manifest: snapshot does not open as bbolt?[2J"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))

	out.Reset()
	err = e.run("show", "b1", "-n", "tenant-a", "-o", "yaml")
	g.Expect(errors.Is(err, silentFailure)).To(BeTrue())
	g.Expect(out.String()).To(ContainSubstring("reason: InspectionFailed"))
	g.Expect(out.String()).NotTo(ContainSubstring("manifest:"))

	g.Expect(e.run("show", "missing", "-n", "tenant-a")).To(MatchError(ContainSubstring("Backup tenant-a/missing")))
}

func TestDiffComparesResourcesAndNamespaces(t *testing.T) {
	g := NewWithT(t)
	a := withManifest(readyBackup("tenant-a", "monday", "etcd", 48*time.Hour),
		smallManifest(100, map[string]int64{"pods": 10, "secrets": 4, "configmaps": 3}, "default", "shop", "blog"))
	b := withManifest(readyBackup("tenant-a", "tuesday", "etcd", 24*time.Hour),
		smallManifest(180, map[string]int64{"pods": 2, "secrets": 4, "leases": 1}, "default", "api"))
	none := readyBackup("tenant-a", "uninspected", "etcd", time.Hour)
	e, out, _ := fakeEnv(a, b, none)

	g.Expect(e.run("diff", "monday", "tuesday", "-n", "tenant-a")).To(Succeed())
	text := out.String()
	g.Expect(text).To(ContainSubstring("Backup tenant-a/monday → tuesday: revision 100 → 180"))
	g.Expect(text).To(ContainSubstring("Keyspace /registry: objects 17 → 7 (-10), namespaces 3 → 2 (-1)"))
	g.Expect(text).To(MatchRegexp(`(?m)^  pods\s+10\s+2\s+-8$`))
	g.Expect(text).To(MatchRegexp(`(?m)^  configmaps\s+3\s+0\s+-3$`))
	g.Expect(text).To(MatchRegexp(`(?m)^  leases\s+0\s+1\s+\+1$`))
	g.Expect(text).NotTo(ContainSubstring("secrets"), "an unchanged count is not a change")
	g.Expect(text).To(ContainSubstring("namespaces only in monday: blog, shop"))
	g.Expect(text).To(ContainSubstring("namespaces only in tuesday: api"))
	// Largest change first.
	g.Expect(strings.Index(text, "pods")).To(BeNumerically("<", strings.Index(text, "configmaps")))

	out.Reset()
	g.Expect(e.run("diff", "monday", "tuesday", "-n", "tenant-a", "-o", "json")).To(Succeed())
	var res DiffResult
	g.Expect(json.Unmarshal(out.Bytes(), &res)).To(Succeed())
	g.Expect(res.Keyspaces).To(HaveLen(1))
	k := res.Keyspaces[0]
	g.Expect(k.Resources).To(HaveLen(3))
	g.Expect(k.Resources[0].Name).To(Equal("pods"))
	g.Expect(*k.Resources[0].Delta).To(Equal(int64(-8)))
	g.Expect(k.NamespacesOnlyInFrom).To(Equal([]string{"blog", "shop"}))
	g.Expect(k.NamespacesOnlyInTo).To(Equal([]string{"api"}))

	g.Expect(e.run("diff", "monday", "uninspected", "-n", "tenant-a")).To(MatchError(ContainSubstring("Backup tenant-a/uninspected has no manifest")))
}

// Lists cut to their bounds make a missing count unknown, not zero; too
// many namespaces to name make their difference unknown.
func TestDiffSaysWhatItCannotKnow(t *testing.T) {
	g := NewWithT(t)
	a := smallManifest(1, map[string]int64{"pods": 5, "widgets": 2}, "a")
	b := smallManifest(2, map[string]int64{"pods": 5})
	b.Truncated = true
	b.Keyspaces[0].Objects += 2 // the widgets it no longer lists
	b.Keyspaces[0].Namespaces = 40
	b.Keyspaces = append(b.Keyspaces, driverv1alpha1.KeyspaceManifest{Prefix: "/tenant_cp", Objects: 3,
		Resources: []driverv1alpha1.ObjectCount{{Name: "pods", Count: 3}}})
	res := diffManifests("ns", "a", "b", a, b)
	g.Expect(res.Keyspaces).To(HaveLen(2))
	reg := res.Keyspaces[0]
	g.Expect(reg.Prefix).To(Equal("/registry"))
	g.Expect(reg.Resources).To(HaveLen(1))
	g.Expect(reg.Resources[0].Name).To(Equal("widgets"))
	g.Expect(reg.Resources[0].To).To(BeNil())
	g.Expect(reg.Resources[0].Delta).To(BeNil())
	g.Expect(reg.NamespaceNamesUnknown).To(BeTrue())
	cp := res.Keyspaces[1]
	g.Expect(cp.InFrom).To(BeFalse())
	g.Expect(cp.InTo).To(BeTrue())
	g.Expect(*cp.Resources[0].Delta).To(Equal(int64(3)))

	var out bytes.Buffer
	g.Expect(printDiff(&out, res)).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`(?m)^  widgets\s+2\s+\?\s+\?$`))
	g.Expect(out.String()).To(ContainSubstring("namespaces: too many to name"))
	g.Expect(out.String()).To(ContainSubstring("Keyspace /tenant_cp: objects 0 → 3 (+3), namespaces 0 → 0 (0) (only in b)"))
}

func TestRestoreDryRunCreatesARehearsal(t *testing.T) {
	g := NewWithT(t)
	e, out, _ := fakeEnv(readyBackup("tenant-a", "good", "etcd", time.Hour))
	// The fake server has no driver: the wait gives up, the job stays.
	err := e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--dry-run", "--name", "r", "--timeout", "300ms", "--terminal", "no")
	g.Expect(err).To(MatchError(ContainSubstring("gave up waiting after 300ms")))
	g.Expect(out.String()).To(ContainSubstring("rehearsal restorejob tenant-a/r created: application etcd from Backup good"))
	c, _ := e.newClient()
	var job backupsv1alpha1.RestoreJob
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "tenant-a", Name: "r"}, &job)).To(Succeed())
	g.Expect(string(job.Spec.Options.Raw)).To(MatchJSON(`{"dryRun": true}`))
	g.Expect(restoreoptions.Asks(&job)).To(Equal(restoreoptions.DryRun))

	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--dry-run", "--safety-snapshot", "false")).
		To(MatchError(ContainSubstring("--safety-snapshot does not apply to --dry-run")))
}

func TestRehearsalResultPrintsTheReport(t *testing.T) {
	g := NewWithT(t)
	e, out, _ := fakeEnv()
	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "r"},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "monday"}},
		Status:     backupsv1alpha1.RestoreJobStatus{Phase: backupsv1alpha1.RestoreJobPhaseSucceeded, Message: "rehearsed"},
	}
	withRehearsal(g, job, &driverv1alpha1.RehearsalReport{RevisionBefore: 900, RevisionAfter: 420, KeysBefore: 80, KeysAfter: 95,
		Resources:           []driverv1alpha1.CountChange{{Name: "pods", Before: 3, After: 10}},
		NamespacesReturning: []string{"shop", "blog"}, NamespacesVanishing: []string{"scratch"}})
	g.Expect(e.rehearsalResult(job)).To(Succeed())
	text := out.String()
	g.Expect(text).To(ContainSubstring("Rehearsal tenant-a/r of Backup monday succeeded: rehearsed"))
	g.Expect(text).To(ContainSubstring("revision:  900 now → 420 after"))
	g.Expect(text).To(ContainSubstring("keys:      80 now → 95 after"))
	g.Expect(text).To(MatchRegexp(`(?m)^  pods\s+3\s+10\s+\+7$`))
	g.Expect(text).To(ContainSubstring("namespaces coming back: shop, blog"))
	g.Expect(text).To(ContainSubstring("namespaces going away: scratch"))
	g.Expect(text).To(ContainSubstring("Nothing live was changed."))

	out.Reset()
	job.Status.Phase, job.Status.Message = backupsv1alpha1.RestoreJobPhaseFailed, "staged file is corrupt"
	withRehearsal(g, job, nil)
	g.Expect(errors.Is(e.rehearsalResult(job), silentFailure)).To(BeTrue())
	g.Expect(out.String()).To(ContainSubstring("of Backup monday failed: staged file is corrupt"))
	g.Expect(out.String()).To(ContainSubstring("No rehearsal report."))
}

// withRehearsal writes report in the driver's record annotation on job,
// as the driver would (unsigned: ebdctl does not verify it).
func withRehearsal(g Gomega, job *backupsv1alpha1.RestoreJob, report *driverv1alpha1.RehearsalReport) {
	raw, err := json.Marshal(rehearsalrecord.Record{Report: report})
	g.Expect(err).NotTo(HaveOccurred())
	job.Annotations = map[string]string{rehearsalrecord.Annotation: string(raw)}
}

// status -o wide shows the newest rehearsal of the application, whether
// its Plan or one of its Backups recorded it.
func TestStatusWideShowsTheLastRehearsal(t *testing.T) {
	g := NewWithT(t)
	p := plan("tenant-a", "nightly", "etcd", "0 2 * * *", 7*24*time.Hour)
	withRecord(g, p, planrecord.Record{LastRehearsal: &planrecord.Rehearsal{RestoreJob: "drill", Backup: "b1", Succeeded: true, CompletedAt: metav1.NewTime(now.Add(-50 * time.Hour))}})
	b := readyBackup("tenant-a", "b1", "etcd", 10*time.Hour)
	g.Expect(artifact.SetLastRehearsal(payloadOf(b), &driverv1alpha1.RehearsalRecord{RestoreJob: "manual", Succeeded: false,
		CompletedAt: metav1.NewTime(now.Add(-5 * time.Hour))})).To(Succeed())
	other := plan("tenant-b", "nightly", "etcd", "0 2 * * *", 7*24*time.Hour)
	withRecord(g, other, planrecord.Record{LastRehearsal: &planrecord.Rehearsal{RestoreJob: "drill", Succeeded: true, CompletedAt: metav1.NewTime(now.Add(-50 * time.Hour))}})
	e, out, _ := fakeEnv(p, b, other, readyBackup("tenant-b", "b1", "etcd", 10*time.Hour), readyBackup("tenant-c", "b1", "etcd", 10*time.Hour))
	g.Expect(e.run("status", "-A", "-o", "wide", "--terminal", "no")).To(Succeed())
	lines := strings.Split(out.String(), "\n")
	g.Expect(lines[0]).To(ContainSubstring("GOOD-BACKUPS   REHEARSAL"))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^tenant-a .* 1\s+FAILED 5h\s+newest good`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^tenant-b .* 1\s+OK 2d2h\s+newest good`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^tenant-c .* 1\s+-\s+no Plan`))

	out.Reset()
	g.Expect(e.run("status", "-n", "tenant-b", "-o", "json")).To(Succeed())
	var rows RowList[StatusRow]
	g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed())
	g.Expect(rows.Items).To(HaveLen(1))
	g.Expect(rows.Items[0].LastRehearsal).NotTo(BeNil())
	g.Expect(rows.Items[0].LastRehearsal.Succeeded).To(BeTrue())
}

// withRecord puts rec on p as the driver's record (unsigned: status reads
// it for display only).
func withRecord(g Gomega, p *backupsv1alpha1.Plan, rec planrecord.Record) {
	raw, err := json.Marshal(rec)
	g.Expect(err).NotTo(HaveOccurred())
	p.Annotations = map[string]string{planrecord.Annotation: string(raw)}
}

// --latest passes over Backups whose inspection failed (never good) and
// those marked ContentDrop (restoring them restores the loss); status
// does not count a failed inspection as a good backup.
func TestLatestSkipsFailedInspectionAndContentDrop(t *testing.T) {
	g := NewWithT(t)
	failed := readyBackup("tenant-a", "failed-inspection", "etcd", time.Hour)
	failed.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionFalse, Reason: backupsv1alpha1.BackupReasonInspectionFailed}}
	dropped := readyBackup("tenant-a", "dropped", "etcd", 2*time.Hour)
	dropped.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionContentDrop, Status: metav1.ConditionTrue, Reason: backupsv1alpha1.BackupReasonContentDropped}}
	e, out, _ := fakeEnv(failed, dropped, readyBackup("tenant-a", "before-the-drop", "etcd", 3*time.Hour))
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--name", "r")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("from Backup before-the-drop"))

	out.Reset()
	g.Expect(e.run("status", "-n", "tenant-a", "-o", "json")).To(Succeed())
	var rows RowList[StatusRow]
	g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed())
	g.Expect(rows.Items[0].GoodBackups).To(Equal(2), "dropped is still a good backup of what was there; failed-inspection is not")
	g.Expect(rows.Items[0].LastBackup).To(Equal("dropped"))
}

// A Backup still being inspected is not one whose inspection failed: it
// is picked by --latest and counted by status (CI at 1a256ef: the
// sandbox's newest Backup was InspectionPending, and --latest found none).
func TestABackupBeingInspectedIsGood(t *testing.T) {
	g := NewWithT(t)
	pending := readyBackup("tenant-a", "just-taken", "etcd", time.Minute)
	pending.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionFalse, Reason: backupsv1alpha1.BackupReasonInspectionPending}}
	e, out, _ := fakeEnv(pending)
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--name", "r")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("from Backup just-taken"))
}
