package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
)

// foreignBackup is a Ready Backup of the Etcd application etcd made by a
// strategy the driver does not serve: the driver leaves it and RestoreJobs
// naming it alone, so the test plays the driver's part and writes what the
// driver's inspection and rehearsal would.
func foreignBackup(ns, name string, taken time.Time, m *driverv1alpha1.BackupManifest) *backupsv1alpha1.Backup {
	group := "example.com"
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Other", Name: "other"},
			TakenAt:        metav1.NewTime(taken),
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:               backupsv1alpha1.BackupPhaseReady,
			Artifact:            &backupsv1alpha1.BackupArtifact{URI: "s3://elsewhere/" + name, SizeBytes: 1 << 20},
			UnderlyingResources: &runtime.RawExtension{Raw: []byte(`{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1"}`)},
		},
	}
	if err := artifact.SetManifest(b, m); err != nil {
		panic(err)
	}
	return b
}

func registryManifest(rev int64, resources []driverv1alpha1.ObjectCount, namespaces ...string) *driverv1alpha1.BackupManifest {
	ks := driverv1alpha1.KeyspaceManifest{Prefix: "/registry", Namespaces: int64(len(namespaces)), NamespaceNames: namespaces, Resources: resources}
	for _, r := range resources {
		ks.Objects += r.Count
	}
	return &driverv1alpha1.BackupManifest{InspectedAt: metav1.Now(), Revision: rev, Keys: ks.Objects + 3, DBSizeBytes: 1 << 20,
		Keyspaces: []driverv1alpha1.KeyspaceManifest{ks}}
}

// show, diff and restore --dry-run against the sandbox's API server, with
// manifests and the rehearsal report written as the driver would.
func TestManifestCommandsAgainstTheSandbox(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "manifests-" + rand.String(5)
	g.Expect(sb.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	taken := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	before := foreignBackup(ns, "before", taken, registryManifest(500, []driverv1alpha1.ObjectCount{
		{Name: "configmaps", Count: 12}, {Name: "pods", Count: 9}, {Name: "namespaces", Count: 4}}, "default", "kube-system", "shop", "blog"))
	after := foreignBackup(ns, "after", taken.Add(time.Hour), registryManifest(650, []driverv1alpha1.ObjectCount{
		{Name: "configmaps", Count: 5}, {Name: "pods", Count: 9}, {Name: "namespaces", Count: 3}}, "default", "kube-system", "api"))
	uninspected := foreignBackup(ns, "uninspected", taken, nil)
	for _, b := range []*backupsv1alpha1.Backup{before, after, uninspected} {
		status := b.Status
		g.Expect(sb.Client.Create(ctx, b)).To(Succeed())
		// Backups have no status subresource: status is written with
		// the object.
		b.Status = status
		b.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionInspected, Status: metav1.ConditionTrue,
			Reason: backupsv1alpha1.BackupReasonInspected, Message: "manifest verified", LastTransitionTime: metav1.Now()}}
		if artifact.Manifest(b) == nil {
			b.Status.Conditions[0].Status, b.Status.Conditions[0].Reason, b.Status.Conditions[0].Message =
				metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionFailed, "the snapshot does not open as an etcd database"
		}
		g.Expect(sb.Client.Update(ctx, b)).To(Succeed())
	}

	t.Run("show", func(t *testing.T) {
		g := NewWithT(t)
		code, out, errOut := ebdctlRun("show", "before", "-n", ns)
		g.Expect(code).To(Equal(ebdctl.ExitOK), errOut)
		g.Expect(out).To(ContainSubstring("Backup " + ns + "/before of application etcd"))
		g.Expect(out).To(ContainSubstring("Revision:     500"))
		g.Expect(out).To(ContainSubstring("Keyspace /registry: 25 objects, 4 namespaces"))
		g.Expect(out).To(MatchRegexp(`(?m)^  configmaps\s+12$`))
		g.Expect(out).To(ContainSubstring("namespaces: default, kube-system, shop, blog"))

		code, out, _ = ebdctlRun("show", "after", "-n", ns, "-o", "json")
		g.Expect(code).To(Equal(ebdctl.ExitOK))
		var res ebdctl.ShowResult
		g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
		g.Expect(res.Manifest.Revision).To(Equal(int64(650)))
		g.Expect(res.Manifest.Keyspaces[0].NamespaceNames).To(Equal([]string{"default", "kube-system", "api"}))

		code, out, _ = ebdctlRun("show", "uninspected", "-n", ns)
		g.Expect(code).To(Equal(ebdctl.ExitFailed))
		g.Expect(out).To(ContainSubstring("No manifest: the snapshot does not open as an etcd database"))
	})

	t.Run("diff", func(t *testing.T) {
		g := NewWithT(t)
		code, out, errOut := ebdctlRun("diff", "before", "after", "-n", ns)
		g.Expect(code).To(Equal(ebdctl.ExitOK), errOut)
		g.Expect(out).To(ContainSubstring("revision 500 → 650"))
		g.Expect(out).To(MatchRegexp(`(?m)^  configmaps\s+12\s+5\s+-7$`))
		g.Expect(out).To(MatchRegexp(`(?m)^  namespaces\s+4\s+3\s+-1$`))
		g.Expect(out).NotTo(ContainSubstring("pods"))
		g.Expect(out).To(ContainSubstring("namespaces only in before: blog, shop"))
		g.Expect(out).To(ContainSubstring("namespaces only in after: api"))

		code, out, _ = ebdctlRun("diff", "before", "after", "-n", ns, "-o", "json")
		g.Expect(code).To(Equal(ebdctl.ExitOK))
		var res ebdctl.DiffResult
		g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
		g.Expect(res.Keyspaces[0].NamespacesOnlyInFrom).To(Equal([]string{"blog", "shop"}))

		code, _, errOut = ebdctlRun("diff", "before", "uninspected", "-n", ns)
		g.Expect(code).To(Equal(ebdctl.ExitFailed))
		g.Expect(errOut).To(ContainSubstring("Backup " + ns + "/uninspected has no manifest: the snapshot does not open"))
	})

	t.Run("restore --dry-run waits for the report", func(t *testing.T) {
		g := NewWithT(t)
		type result struct {
			code        int
			out, errOut string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := ebdctlRun("restore", "etcd", "-n", ns, "--from", "before", "--dry-run", "--name", "rehearse", "--timeout", "2m", "--terminal", "no")
			done <- result{code, out, errOut}
		}()
		var job backupsv1alpha1.RestoreJob
		g.Eventually(func() error {
			return sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rehearse"}, &job)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(string(job.Spec.Options.Raw)).To(MatchJSON(`{"dryRun": true}`))
		g.Expect(job.Spec.BackupRef.Name).To(Equal("before"))
		g.Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "it waits for the rehearsal to end")

		// The report in the driver's record annotation, then the end.
		rec, err := json.Marshal(rehearsalrecord.Record{RevisionBefore: 700, KeysBefore: 20, Report: &driverv1alpha1.RehearsalReport{
			RevisionBefore: 700, RevisionAfter: 500, KeysBefore: 20, KeysAfter: 28,
			Resources:           []driverv1alpha1.CountChange{{Name: "configmaps", Before: 5, After: 12}},
			NamespacesReturning: []string{"blog", "shop"}, NamespacesVanishing: []string{"api"}}})
		g.Expect(err).NotTo(HaveOccurred())
		job.Annotations = map[string]string{rehearsalrecord.Annotation: string(rec)}
		g.Expect(sb.Client.Update(ctx, &job)).To(Succeed())
		job.Status.Phase, job.Status.Message = backupsv1alpha1.RestoreJobPhaseSucceeded, "rehearsed Backup before in a throwaway etcd"
		g.Expect(sb.Client.Status().Update(ctx, &job)).To(Succeed())

		var r result
		g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&r))
		g.Expect(r.code).To(Equal(ebdctl.ExitOK), r.errOut)
		g.Expect(r.out).To(HavePrefix("rehearsal restorejob " + ns + "/rehearse created: application etcd from Backup before"))
		g.Expect(r.out).To(ContainSubstring("Rehearsal " + ns + "/rehearse of Backup before succeeded: rehearsed Backup before in a throwaway etcd"))
		g.Expect(r.out).To(ContainSubstring("revision:  700 now → 500 after"))
		g.Expect(r.out).To(MatchRegexp(`(?m)^  configmaps\s+5\s+12\s+\+7$`))
		g.Expect(r.out).To(ContainSubstring("namespaces coming back: blog, shop"))
		g.Expect(r.out).To(ContainSubstring("namespaces going away: api"))
		g.Expect(r.out).NotTo(ContainSubstring("safety Backup"))
		g.Expect(strings.Count(r.out, "Nothing live was changed.")).To(Equal(1))
	})

	t.Run("restore --to --dry-run rehearses the point", func(t *testing.T) {
		g := NewWithT(t)
		done := make(chan [3]string, 1)
		go func() {
			code, out, errOut := ebdctlRun("restore", "etcd", "-n", ns, "--to", "600", "--dry-run", "--name", "to-point", "--timeout", "2m", "--terminal", "no")
			done <- [3]string{fmt.Sprint(code), out, errOut}
		}()
		var job backupsv1alpha1.RestoreJob
		g.Eventually(func() error {
			return sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "to-point"}, &job)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(string(job.Spec.Options.Raw)).To(MatchJSON(`{"dryRun": true, "pointInTime": "600"}`))
		g.Expect(job.Spec.BackupRef.Name).To(Equal("before"), "the newest Backup at or before revision 600")

		rec, err := json.Marshal(rehearsalrecord.Record{RevisionBefore: 700, Report: &driverv1alpha1.RehearsalReport{
			RevisionBefore: 700, RevisionAfter: 600, NamespacesReturning: []string{"blog"}}})
		g.Expect(err).NotTo(HaveOccurred())
		job.Annotations = map[string]string{rehearsalrecord.Annotation: string(rec)}
		g.Expect(sb.Client.Update(ctx, &job)).To(Succeed())
		job.Status.Phase, job.Status.Message = backupsv1alpha1.RestoreJobPhaseSucceeded, "rehearsed a restore to 600"
		g.Expect(sb.Client.Status().Update(ctx, &job)).To(Succeed())

		var r [3]string
		g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&r))
		g.Expect(r[0]).To(Equal(fmt.Sprint(ebdctl.ExitOK)), r[2])
		g.Expect(r[1]).To(HavePrefix("rehearsal restorejob " + ns + "/to-point created: application etcd to revision 600 from Backup before"))
		g.Expect(r[1]).To(ContainSubstring("Rehearsal " + ns + "/to-point of Backup before to revision 600 succeeded: rehearsed a restore to 600"))
		g.Expect(r[1]).To(ContainSubstring("A restore to revision 600 would change:"))
		g.Expect(r[1]).To(ContainSubstring("namespaces coming back: blog"))

		code, _, errOut := ebdctlRun("restore", "etcd", "-n", ns, "--to", "499", "--dry-run", "--terminal", "no")
		g.Expect(code).To(Equal(ebdctl.ExitFailed))
		g.Expect(errOut).To(ContainSubstring("no good Backup at or before revision 499"))
	})
}
