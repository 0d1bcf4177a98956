package ebdctl

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// nightly is a good Backup of etcd taken ago, its manifest at revision.
func nightly(name string, ago time.Duration, revision int64) *backupsv1alpha1.Backup {
	return withManifest(readyBackup("tenant-a", name, "etcd", ago), smallManifest(revision, map[string]int64{"pods": 3}, "default"))
}

// restoreJobOf is the RestoreJob the plugin created under name, and its
// options as the driver parses them.
func restoreJobOf(g Gomega, e *env, name string) (*backupsv1alpha1.RestoreJob, restoreoptions.Options) {
	c, _ := e.newClient()
	var job backupsv1alpha1.RestoreJob
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "tenant-a", Name: name}, &job)).To(Succeed())
	o, err := restoreoptions.Parse(job.Spec.Options)
	g.Expect(err).NotTo(HaveOccurred())
	return &job, o
}

// restore --to asks the driver for the point (spec.options.pointInTime,
// the time or revision as given) and names the newest good Backup at or
// before it; --dry-run rehearses the same point.
func TestRestoreToAPointNamesTheNewestBackupAtOrBeforeIt(t *testing.T) {
	g := NewWithT(t)
	monday, tuesday, wednesday := nightly("monday", 50*time.Hour, 100), nightly("tuesday", 26*time.Hour, 200), nightly("wednesday", 2*time.Hour, 300)
	safety := nightly("safety", 3*time.Hour, 290)
	safety.Labels = map[string]string{backupsv1alpha1.SafetyBackupLabel: "some-restore"}
	e, out, _ := fakeEnv(monday, tuesday, wednesday, safety, readyBackup("tenant-a", "no-manifest", "etcd", 4*time.Hour))
	point := now.Add(-5 * time.Hour).Format(time.RFC3339)

	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--to", point, "--name", "by-time")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("restorejob tenant-a/by-time created: application etcd to " + point + " from Backup tuesday"))
	job, o := restoreJobOf(g, e, "by-time")
	g.Expect(job.Spec.BackupRef.Name).To(Equal("tuesday"))
	g.Expect(string(job.Spec.Options.Raw)).To(MatchJSON(`{"pointInTime": "` + point + `"}`))
	target, ok := o.Point()
	g.Expect(ok).To(BeTrue())
	g.Expect(target.Time.Equal(now.Add(-5 * time.Hour))).To(BeTrue())

	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--to", "150", "--name", "by-revision", "--safety-snapshot", "false")).To(Succeed())
	job, o = restoreJobOf(g, e, "by-revision")
	g.Expect(job.Spec.BackupRef.Name).To(Equal("monday"))
	target, _ = o.Point()
	g.Expect(target).To(Equal(changelog.Target{Revision: 150}))
	g.Expect(o.TakesSafetySnapshot()).To(BeFalse())

	// A Backup named with --from at or before the point is kept.
	g.Expect(e.run("restore", "etcd", "-n", "tenant-a", "--to", point, "--from", "monday", "--name", "from-monday")).To(Succeed())
	job, _ = restoreJobOf(g, e, "from-monday")
	g.Expect(job.Spec.BackupRef.Name).To(Equal("monday"))

	// The fake server has no driver: the dry run's wait gives up.
	out.Reset()
	err := e.run("restore", "etcd", "-n", "tenant-a", "--to", "250", "--dry-run", "--name", "rehearse", "--timeout", "300ms", "--terminal", "no")
	g.Expect(err).To(MatchError(ContainSubstring("gave up waiting after 300ms")))
	g.Expect(out.String()).To(ContainSubstring("rehearsal restorejob tenant-a/rehearse created: application etcd to revision 250 from Backup tuesday"))
	job, o = restoreJobOf(g, e, "rehearse")
	g.Expect(string(job.Spec.Options.Raw)).To(MatchJSON(`{"dryRun": true, "pointInTime": "250"}`))
	g.Expect(restoreoptions.Asks(job)).To(Equal(restoreoptions.DryRun))
}

// What restore --to refuses, creating nothing: a point before every
// Backup, a point in the future, a Backup named with --from that is after
// the point, --latest, and a point that is neither a time nor a revision.
func TestRestoreToRefusesWhatCannotBeRestored(t *testing.T) {
	g := NewWithT(t)
	e, _, _ := fakeEnv(nightly("monday", 50*time.Hour, 100), nightly("wednesday", 2*time.Hour, 300))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", now.Add(-60 * time.Hour).Format(time.RFC3339)}, "no good Backup at or before " + now.Add(-60*time.Hour).Format(time.RFC3339)},
		{[]string{"--to", "99"}, "no good Backup at or before revision 99"},
		{[]string{"--to", now.Add(time.Hour).Format(time.RFC3339)}, "is in the future"},
		{[]string{"--to", now.Add(-5 * time.Hour).Format(time.RFC3339), "--from", "wednesday"}, "Backup tenant-a/wednesday was taken after"},
		{[]string{"--to", "250", "--from", "wednesday"}, "Backup tenant-a/wednesday was taken after"},
		{[]string{"--to", "250", "--latest"}, "--latest does not go with --to"},
		{[]string{"--to", "yesterday"}, "--to: spec.options.pointInTime \"yesterday\" is neither a revision nor an RFC 3339 time"},
		{[]string{"--to", "250", "--dry-run", "--safety-snapshot", "false"}, "--safety-snapshot does not apply to --dry-run"},
	} {
		err := e.run(append([]string{"restore", "etcd", "-n", "tenant-a", "--name", "refused"}, tc.args...)...)
		g.Expect(err).To(MatchError(ContainSubstring(tc.want)), strings.Join(tc.args, " "))
	}
	c, _ := e.newClient()
	var jobs backupsv1alpha1.RestoreJobList
	g.Expect(c.List(context.Background(), &jobs)).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
}

// Where a RestoreJob is printed, its point is too, sanitised as all a
// tenant writes: the dry run's result, a restore's result, and a
// Backup's last rehearsal in show.
func TestThePointIsShownWhereARestoreJobIs(t *testing.T) {
	g := NewWithT(t)
	e, out, _ := fakeEnv()
	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "r"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "monday"},
			Options: (restoreoptions.Options{DryRun: true, PointInTime: "2026-12-06T17:00:00Z"}).Raw()},
		Status: backupsv1alpha1.RestoreJobStatus{Phase: backupsv1alpha1.RestoreJobPhaseSucceeded, Message: "rehearsed"},
	}
	withRehearsal(g, job, &driverv1alpha1.RehearsalReport{RevisionAfter: 420, KeysAfter: 95, NamespacesReturning: []string{"shop"}})
	g.Expect(e.rehearsalResult(job)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("Rehearsal tenant-a/r of Backup monday to 2026-12-06T17:00:00Z succeeded: rehearsed"))
	g.Expect(out.String()).To(ContainSubstring("A restore to 2026-12-06T17:00:00Z would change:"))

	out.Reset()
	restore := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "back"},
		Spec:   backupsv1alpha1.RestoreJobSpec{Options: (restoreoptions.Options{PointInTime: "4711"}).Raw()},
		Status: backupsv1alpha1.RestoreJobStatus{Phase: backupsv1alpha1.RestoreJobPhaseSucceeded, Message: "restored"}}
	g.Expect(e.restoreResult(restore, "etcd", "")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("RestoreJob tenant-a/back to revision 4711 succeeded: restored"))

	b := readyBackup("tenant-a", "b1", "etcd", 2*time.Hour)
	g.Expect(artifact.SetLastRehearsal(payloadOf(b), &driverv1alpha1.RehearsalRecord{RestoreJob: "r", Succeeded: true,
		PointInTime: "2026-12-06T17:00:00Z" + escapes, CompletedAt: metav1.NewTime(now.Add(-time.Hour))})).To(Succeed())
	e, out, _ = fakeEnv(b)
	_ = e.run("show", "b1", "-n", "tenant-a")
	g.Expect(out.String()).To(ContainSubstring("Rehearsal:    succeeded 60m ago (RestoreJob r, to 2026-12-06T17:00:00Z?[2J?]0;owned?)"))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b"))
}
