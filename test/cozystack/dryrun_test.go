package cozystack

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kamajistandin"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// setOptions rewrites a RestoreJob's spec.options, as a tenant may on
// Cozystack's CRD (no CEL immutability, options preserve-unknown).
func setOptions(tn *platform.Tenant, rj *backupsv1alpha1.RestoreJob, options string) {
	tn.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(rj), rj); err != nil {
			return err
		}
		rj.Spec.Options = &runtime.RawExtension{Raw: []byte(options)}
		return env.Client.Update(tn.Ctx, rj)
	})
	tn.G.Expect(err).NotTo(HaveOccurred(), "the spec of Cozystack's RestoreJob can change")
}

// awaitReady waits until rj's Ready reason is reason.
func awaitReady(tn *platform.Tenant, rj *backupsv1alpha1.RestoreJob, reason backupsv1alpha1.RestoreReason) {
	tn.T.Helper()
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		g.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(reason)), "status: %+v", rj.Status)
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

func claimsOf(tn *platform.Tenant) []coordinationv1.Lease {
	var leases coordinationv1.LeaseList
	tn.G.Expect(env.Client.List(tn.Ctx, &leases, client.InNamespace(testenv.DriverNamespace),
		client.MatchingLabels{claim.ComponentLabel: claim.ComponentValue, claim.TargetNamespaceLabel: tn.NS})).To(Succeed())
	return leases.Items
}

// dryRunJobs are the rehearsal Jobs made for rj.
func dryRunJobs(tn *platform.Tenant, rj *backupsv1alpha1.RestoreJob) []batchv1.Job {
	var jobs batchv1.JobList
	tn.G.Expect(env.Client.List(tn.Ctx, &jobs, client.InNamespace(tn.NS), client.MatchingLabels{backupsv1alpha1.RehearsalLabel: string(rj.UID)})).To(Succeed())
	return jobs.Items
}

// A RestoreJob does what it was asked when it started (issue 37, item 5).
// dryRun set on a restore under way, after the cluster was deleted (the
// re-created one still bootstrapping, the HelmRelease suspended, the
// control plane fenced, the claim held), is ignored and said so: the
// restore ends as a restore, and leaves nothing suspended, fenced or
// claimed; the rehearsal never takes it.
func TestDryRunSetOnARestoreUnderWayIsIgnored(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	tn.G.Expect(kamajistandin.CreateControlPlane(tn.Ctx, env.Client, tn.NS, "tenant-k8s", "etcd")).To(Succeed())
	before := tn.Cluster()
	tn.Op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "restore"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: b.Name}}}
	tn.Create(rj)

	awaitReady(tn, rj, backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	tn.G.Expect(tn.Cluster().UID).NotTo(Equal(before.UID), "the old cluster is deleted")
	tn.G.Expect(tn.HelmRelease().Spec.Suspend).To(BeTrue())
	tcp := &kamajiv1alpha1.TenantControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "tenant-k8s"}}
	tn.Get(tcp)
	tn.G.Expect(tcp.Annotations).To(HaveKeyWithValue(backupsv1alpha1.FencedByAnnotation, string(rj.UID)))
	tn.G.Expect(claimsOf(tn)).To(HaveLen(1))

	setOptions(tn, rj, `{"dryRun": true}`)
	// Whichever comes first: the restore says it ignores the change, or
	// the rehearsal takes the job.
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		told := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored) != nil
		g.Expect(told || rehearsing(rj)).To(BeTrue(), "status: %+v", rj.Status)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	tn.G.Expect(rehearsing(rj)).To(BeFalse(), "the rehearsal took the restore: status %+v", rj.Status)
	c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored)
	tn.G.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	tn.G.Expect(c.Message).To(ContainSubstring("the restore goes on"))
	tn.G.Eventually(func() []string { return tn.Events(rj) }).WithTimeout(10 * time.Second).
		Should(ContainElement(string(backupsv1alpha1.ReasonDryRunChangeIgnored)))

	tn.Op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	rj = tn.AwaitRestore(rj)
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
	tn.G.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonRestoreCompleted)))
	tn.G.Expect(tn.HelmRelease().Spec.Suspend).To(BeFalse(), "the HelmRelease is left suspended")
	tn.Get(tcp)
	tn.G.Expect(tcp.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation), "the control plane is left fenced")
	tn.G.Expect(tcp.Spec.WritePermissions).To(Equal(kamajiv1alpha1.WritePermissions{}))
	tn.G.Expect(claimsOf(tn)).To(BeEmpty(), "the claim is held")
	tn.G.Expect(dryRunJobs(tn, rj)).To(BeEmpty(), "the rehearsal took the restore")
}

// The reverse: a dry run that started stays a dry run when its options
// drop dryRun. The restore never takes it (no finalizer, nothing claimed,
// the cluster and the HelmRelease untouched) and says why.
func TestADryRunThatStartedStaysOne(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	before := tn.Cluster()
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "rehearsal"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: b.Name},
			Options: &runtime.RawExtension{Raw: []byte(`{"dryRun": true}`)}}}
	tn.Create(rj)
	awaitReady(tn, rj, backupsv1alpha1.ReasonRehearsing)

	setOptions(tn, rj, `{}`)
	// Whichever comes first: the restore says the dry run stays one (the
	// Event of the reconcile that decided so), or it takes the job.
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		taken := slices.Contains(rj.Finalizers, backupsv1alpha1.RestoreFinalizer) ||
			meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionClaimed) != nil
		g.Expect(taken || slices.Contains(tn.Events(rj), string(backupsv1alpha1.ReasonDryRunChangeIgnored))).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	tn.G.Expect(rj.Finalizers).NotTo(ContainElement(backupsv1alpha1.RestoreFinalizer), "the restore took the dry run")
	tn.G.Expect(meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionClaimed)).To(BeNil())
	tn.G.Expect(claimsOf(tn)).To(BeEmpty())
	tn.G.Expect(rehearsing(rj)).To(BeTrue(), "status: %+v", rj.Status)
	tn.Untouched(before)
}

// rehearsing: rj's Ready reason is a dry run's.
func rehearsing(rj *backupsv1alpha1.RestoreJob) bool {
	switch backupsv1alpha1.RestoreReason(platform.Reason(rj.Status.Conditions)) {
	case backupsv1alpha1.ReasonRehearsing, backupsv1alpha1.ReasonRehearsed, backupsv1alpha1.ReasonRehearsalFailed:
		return true
	}
	return false
}
