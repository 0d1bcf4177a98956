package ebdctl

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/hashcron"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

var now = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func readyBackup(ns, name, app string, ago time.Duration) *backupsv1alpha1.Backup {
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: app},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.NewTime(now.Add(-ago)),
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:    backupsv1alpha1.BackupPhaseReady,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://b/" + ns + "/" + name, SizeBytes: 3 << 20, Checksum: "sha256:00"},
		},
	}
}

func withVerified(b *backupsv1alpha1.Backup, status metav1.ConditionStatus, reason string) *backupsv1alpha1.Backup {
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionVerified, Status: status, Reason: reason, Message: "checked"})
	return b
}

func plan(ns, name, app, cron string, age time.Duration) *backupsv1alpha1.Plan {
	return &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: app},
			BackupClassName: "etcd-default",
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: cron},
		},
	}
}

func TestStatusJudgesEachApplication(t *testing.T) {
	week := 7 * 24 * time.Hour
	suspended := plan("t-susp", "p", "etcd", "@daily", week)
	suspended.Annotations = map[string]string{planpolicy.Suspend: "true"}
	plans := []backupsv1alpha1.Plan{
		*plan("t-ok", "nightly", "etcd", "0 2 * * *", week),
		*plan("t-stale", "nightly", "etcd", "0 2 * * *", week),
		*plan("t-missing", "nightly", "etcd", "0 2 * * *", week),
		*plan("t-new", "nightly", "etcd", "0 2 * * *", time.Hour),
		*suspended,
		*plan("t-bad", "p", "etcd", "every day", week),
		// Two Plans: the hourly one sets the expectation.
		*plan("t-two", "daily", "etcd", "@daily", week),
		*plan("t-two", "hourly", "etcd", "@hourly", week),
	}
	backups := []backupsv1alpha1.Backup{
		*readyBackup("t-ok", "b1", "etcd", 30*time.Hour),
		*readyBackup("t-ok", "b2", "etcd", 10*time.Hour),
		*readyBackup("t-stale", "b1", "etcd", 37*time.Hour),
		// Newer but marked unverified by the driver: not good.
		*withVerified(readyBackup("t-stale", "forged", "etcd", time.Hour), metav1.ConditionFalse, "Unverified"),
		*readyBackup("t-noplan", "b", "etcd", time.Hour),
		*readyBackup("t-two", "b", "etcd", 2*time.Hour),
	}
	apps := []appsv1alpha1.Etcd{{ObjectMeta: metav1.ObjectMeta{Namespace: "t-bare", Name: "etcd"}}}
	rows := statusRows(apps, plans, backups, now, 1.5)
	got := map[string]StatusRow{}
	for _, r := range rows {
		got[r.Namespace] = r
	}
	g := NewWithT(t)
	g.Expect(rows).To(HaveLen(9))
	want := map[string]string{
		"t-ok": StateOK, "t-stale": StateStale, "t-missing": StateMissing, "t-new": StateWaiting,
		"t-susp": StateSuspended, "t-bad": StateInvalidPlan, "t-noplan": StateNoPlan, "t-bare": StateNoPlan, "t-two": StateStale,
	}
	for ns, state := range want {
		g.Expect(got[ns].State).To(Equal(state), "%s: %s", ns, got[ns].Message)
	}
	g.Expect(got["t-ok"].LastBackup).To(Equal("b2"))
	g.Expect(got["t-ok"].IntervalSeconds).To(Equal(int64(86400)))
	g.Expect(got["t-stale"].LastBackup).To(Equal("b1"), "an unverified Backup is not the last good one")
	g.Expect(got["t-stale"].Message).To(ContainSubstring("over 36h"))
	g.Expect(got["t-two"].Plans).To(Equal([]string{"hourly", "daily"}))
	g.Expect(got["t-bare"].Message).To(ContainSubstring("no good backup"))
}

// fakeEnv runs commands against a fake API server holding objs.
func fakeEnv(objs ...client.Object) (*env, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	c := fake.NewClientBuilder().WithScheme(driverscheme.New()).WithObjects(objs...).Build()
	e := &env{name: "ebdctl", streams: Streams{Out: &out, ErrOut: &errOut}, now: func() time.Time { return now }}
	e.newClient = func() (client.WithWatch, error) { return c, nil }
	return e, &out, &errOut
}

// run executes args on e like Main does.
func (e *env) run(args ...string) error {
	e.kube = newConfigFlags()
	root := e.rootCommand()
	root.SetArgs(args)
	return root.Execute()
}

func TestListShowsVerifiedAndDeletionPolicy(t *testing.T) {
	g := NewWithT(t)
	deleting := readyBackup("tenant-a", "older", "etcd", 48*time.Hour)
	deleting.Spec.DriverMetadata = map[string]string{artifact.MetaDeletionPolicy: "Delete"}
	e, out, _ := fakeEnv(
		withVerified(readyBackup("tenant-a", "newer", "etcd", time.Hour), metav1.ConditionTrue, "ProvenanceVerified"),
		deleting,
		withVerified(readyBackup("tenant-a", "forged", "etcd", 2*time.Hour), metav1.ConditionFalse, "Unverified"),
		readyBackup("tenant-b", "elsewhere", "etcd", time.Hour),
	)
	g.Expect(e.run("list", "-n", "tenant-a", "--terminal", "no")).To(Succeed())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(4))
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"APPLICATION", "BACKUP", "PHASE", "AGE", "SIZE", "VERIFIED", "DELETION-POLICY"}))
	g.Expect(strings.Fields(lines[1])).To(Equal([]string{"etcd", "newer", "Ready", "60m", "3.0MiB", "True", "Retain"}))
	g.Expect(strings.Fields(lines[2])).To(Equal([]string{"etcd", "forged", "Ready", "120m", "3.0MiB", "False", "Retain"}))
	g.Expect(strings.Fields(lines[3])).To(Equal([]string{"etcd", "older", "Ready", "2d", "3.0MiB", "-", "Delete"}))

	out.Reset()
	g.Expect(e.run("list", "-A", "-o", "json")).To(Succeed())
	var rows RowList[BackupRow]
	g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed())
	g.Expect(rows.Items).To(HaveLen(4))
	g.Expect(rows.Items[0].Verified).To(Equal(&Verified{Status: "True", Reason: "ProvenanceVerified", Message: "checked"}))
	g.Expect(rows.Items[3].Namespace).To(Equal("tenant-b"))

	out.Reset()
	g.Expect(e.run("list", "-A", "-o", "wide", "--terminal", "yes")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("NAMESPACE"))
	g.Expect(out.String()).To(ContainSubstring(colourRed+"False"+colourReset), "an unverified Backup is red")
	g.Expect(out.String()).To(ContainSubstring("s3://b/tenant-a/newer"))

	g.Expect(e.run("list", "-o", "xml")).To(MatchError(ContainSubstring("-o must be json, yaml or wide")))
}

func TestStatusTableIsRedWhenStale(t *testing.T) {
	g := NewWithT(t)
	e, out, _ := fakeEnv(
		plan("tenant-a", "nightly", "etcd", "@daily", 30*24*time.Hour), readyBackup("tenant-a", "b", "etcd", 40*time.Hour),
		plan("tenant-b", "nightly", "etcd", "@daily", 30*24*time.Hour), readyBackup("tenant-b", "b", "etcd", 4*time.Hour),
	)
	g.Expect(e.run("status", "-A", "--terminal", "yes")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(colourRed + "STALE" + colourReset))
	g.Expect(out.String()).To(ContainSubstring(colourGreen + "OK" + colourReset))

	out.Reset()
	g.Expect(e.run("status", "-A", "-o", "yaml", "--stale-factor", "2")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("state: OK"))
	g.Expect(out.String()).NotTo(ContainSubstring("STALE"), "40h is within two daily intervals")
}

func TestBackupPicksTheClass(t *testing.T) {
	g := NewWithT(t)
	etcdClass := &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-only"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
		}}},
	}
	e, out, _ := fakeEnv(etcdClass)
	g.Expect(e.run("backup", "etcd", "-n", "tenant-a", "--name", "now")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("backupjob tenant-a/now created (application etcd, class etcd-only)"))

	e, out, _ = fakeEnv(etcdClass, plan("tenant-a", "nightly", "etcd", "@daily", time.Hour))
	g.Expect(e.run("backup", "etcd", "-n", "tenant-a", "--name", "now")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("class etcd-default"), "the Plan's class wins")

	e, _, _ = fakeEnv()
	g.Expect(e.run("backup", "etcd", "-n", "tenant-a")).To(MatchError(ContainSubstring("no BackupClass binds Etcd applications; pass --class")))
}

func TestRestoreLatestSkipsUnverifiedAndSafetyBackups(t *testing.T) {
	g := NewWithT(t)
	safety := readyBackup("tenant-a", "safety", "etcd", time.Minute)
	safety.Labels = map[string]string{backupsv1alpha1.SafetyBackupLabel: "earlier-restore"}
	e, out, _ := fakeEnv(
		readyBackup("tenant-a", "good", "etcd", 3*time.Hour),
		readyBackup("tenant-a", "older", "etcd", 30*time.Hour),
		withVerified(readyBackup("tenant-a", "forged", "etcd", time.Hour), metav1.ConditionFalse, "Unverified"),
		safety,
		readyBackup("tenant-a", "other-app", "other", time.Minute),
	)
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--name", "r")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("restorejob tenant-a/r created: application etcd from Backup good"))

	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--from", "other-app")).To(MatchError(ContainSubstring("not of the Etcd application etcd")))
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a")).To(MatchError(ContainSubstring("exactly one of --from BACKUP and --latest")))
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--latest", "--from", "good")).To(HaveOccurred())
}

func TestStatusAllNamespacesSaysWhichStrategiesShareAKey(t *testing.T) {
	g := NewWithT(t)
	strategy := func(name string, status metav1.ConditionStatus, msg string) *strategyv1alpha1.Etcd {
		return &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: strategyv1alpha1.EtcdStatus{
			Conditions: []metav1.Condition{{Type: strategyv1alpha1.EtcdConditionSharedCredentials, Status: status, Reason: "R", Message: msg}}}}
	}
	shared := "37 namespaces share one S3 access key (tenant-a, tenant-b, tenant-c, …) — move to brokered keys (docs/security.md)"
	e, out, errOut := fakeEnv(
		plan("tenant-a", "nightly", "etcd", "@daily", 30*24*time.Hour), readyBackup("tenant-a", "b", "etcd", 4*time.Hour),
		strategy("etcd", metav1.ConditionTrue, shared),
		strategy("isolated", metav1.ConditionFalse, "no two namespaces known to back up with this strategy share an S3 access key"),
	)
	g.Expect(e.run("status", "-A", "--terminal", "no")).To(Succeed())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(3))
	g.Expect(lines[2]).To(Equal("strategy etcd: " + shared))

	out.Reset()
	g.Expect(e.run("status", "-n", "tenant-a", "--terminal", "no")).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("strategy"), "one namespace's view says nothing of strategies")

	out.Reset()
	g.Expect(e.run("status", "-A", "-o", "json")).To(Succeed())
	var rows RowList[StatusRow]
	g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed(), "structured output stays parseable")
	g.Expect(errOut.String()).To(ContainSubstring("strategy etcd: 37 namespaces share one S3 access key"))
	g.Expect(errOut.String()).NotTo(ContainSubstring("isolated"))
}

// A Plan with H terms shows what they resolve to and when it runs next:
// the time the driver's scheduler recorded on the Plan, else the schedule's
// next time computed as the driver does (Cozystack's Plan controller
// records none).
func TestStatusShowsTheHashedScheduleAndNextRun(t *testing.T) {
	g := NewWithT(t)
	resolved, err := hashcron.Resolve("H 3 * * *", "tenant-a/nightly")
	g.Expect(err).NotTo(HaveOccurred())
	minute, err := strconv.Atoi(strings.Fields(resolved)[0])
	g.Expect(err).NotTo(HaveOccurred())
	// now is 12:00, so the next 03:MM is tomorrow's.
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 3, minute, 0, 0, time.UTC)
	fromStatus := plan("tenant-b", "nightly", "etcd", "H 3 * * *", time.Hour)
	withRecord(g, fromStatus, planrecord.Record{NextScheduleTime: ptr(metav1.NewTime(now.Add(90 * time.Minute)))})

	rows := statusRows(nil, []backupsv1alpha1.Plan{*plan("tenant-a", "nightly", "etcd", "H 3 * * *", time.Hour), *fromStatus}, nil, now, 1.5)
	g.Expect(rows).To(HaveLen(2))
	g.Expect(rows[0].Schedule).To(Equal("H 3 * * * = " + resolved))
	g.Expect(rows[0].State).To(Equal(StateWaiting))
	g.Expect(rows[0].NextRun).NotTo(BeNil())
	g.Expect(*rows[0].NextRun).To(BeTemporally("==", next))
	g.Expect(*rows[1].NextRun).To(BeTemporally("==", now.Add(90*time.Minute)))

	e, out, _ := fakeEnv(plan("tenant-a", "nightly", "etcd", "H 3 * * *", time.Hour))
	g.Expect(e.run("status", "-n", "tenant-a", "--terminal", "no")).To(Succeed())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(strings.Fields(lines[0])).To(Equal([]string{"APPLICATION", "STATE", "LAST-BACKUP", "AGE", "INTERVAL", "NEXT-RUN", "PLAN"}))
	g.Expect(strings.Fields(lines[1])[5]).To(Equal(duration.HumanDuration(next.Sub(now))))
}
