package adversarial

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// A hand-written Ready Backup naming another tenant's object, with deletion
// policy Delete, is deleted: the Backup goes, the victim's object stays, and
// an Event says why.
func TestForgedBackupDeletionKeepsTheVictimsObject(t *testing.T) {
	victim, attacker := plat.NewTenant(t, "victim"), plat.NewTenant(t, "attacker")
	real := victim.Backup("nightly", "")
	key := platform.KeyOf(victim.G, real)

	forged := platform.Forge(real, attacker.NS, "stolen")
	forged.Spec.DriverMetadata[artifact.MetaDeletionPolicy] = "Delete"
	attacker.Create(forged)
	// The driver takes it in (finalizer) and says it cannot verify it.
	attacker.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(attacker.Ctx, client.ObjectKeyFromObject(forged), forged)).To(Succeed())
		g.Expect(forged.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer))
		g.Expect(conditionIn(forged.Status.Conditions, backupsv1alpha1.BackupConditionVerified).Reason).To(Equal(backupsv1alpha1.BackupReasonUnverified))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	attacker.G.Expect(env.Client.Delete(attacker.Ctx, forged)).To(Succeed())
	attacker.G.Eventually(func() bool { return attacker.Gone(forged) }).WithTimeout(30 * time.Second).Should(BeTrue())

	attacker.G.Expect(plat.ObjectExists(key)).To(BeTrue(), "the victim's object was deleted")
	attacker.G.Expect(victim.Gone(real)).To(BeFalse())
	attacker.G.Eventually(func() []string { return attacker.Events(forged) }).WithTimeout(10 * time.Second).
		Should(ContainElement(backupsv1alpha1.BackupReasonObjectKeptUnverified))
}

// The same forged Backup restored is refused: the attacker's cluster is
// never re-created from the victim's snapshot.
func TestForgedBackupRestoreIsRefused(t *testing.T) {
	victim, attacker := plat.NewTenant(t, "victim"), plat.NewTenant(t, "attacker")
	real := victim.Backup("nightly", "")
	attacker.Create(platform.Forge(real, attacker.NS, "stolen"))
	before := attacker.Cluster()

	rj := attacker.Restore("steal", "stolen", "")
	attacker.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	attacker.G.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonUnverifiedBackup)))
	attacker.G.Expect(rj.Status.Message).To(ContainSubstring("Nothing was changed"))
	attacker.Untouched(before)
	attacker.G.Expect(attacker.Cluster().Spec.Bootstrap).To(BeNil())
}

// A forged Backup naming a loopback or metadata endpoint is deleted and
// restored: the driver sends nothing there, signed with the platform's key
// or not.
func TestForgedEndpointsAreNeverDialled(t *testing.T) {
	attacker := plat.NewTenant(t, "attacker")
	var hits atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.2:0")
	attacker.G.Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	real := attacker.Backup("nightly", "")

	for i, endpoint := range []string{"http://" + l.Addr().String(), "http://169.254.169.254", "http://[fd00:ec2::254]"} {
		forged := platform.Forge(real, attacker.NS, "evil-"+string(rune('a'+i)))
		forged.Status.UnderlyingResources = nil
		forged.Spec.DriverMetadata[artifact.MetaEndpoint] = endpoint
		forged.Spec.DriverMetadata[artifact.MetaDeletionPolicy] = "Delete"
		// Signed with the platform's own key, as if the driver had
		// recorded it (a strategy that once rendered that endpoint): the
		// signature holds, so only the endpoint policy stands in the way.
		attacker.G.Expect(provenance.Seal(attacker.Ctx, platformKeys(), forged)).To(Succeed())
		attacker.Create(forged)
		v, err := provenance.Verify(attacker.Ctx, platformKeys(), forged)
		attacker.G.Expect(err).NotTo(HaveOccurred())
		attacker.G.Expect(v.Verified).To(BeTrue(), "the forged Backup must carry a valid signature: %+v", v)
		rj := attacker.Restore("evil-restore-"+string(rune('a'+i)), forged.Name, "")
		attacker.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
		attacker.G.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonEndpointRefused)))
		// Deleting it (policy Delete) dials nothing: the cleanup stops with
		// a status that says why, until an admin chooses to keep the object.
		attacker.G.Expect(env.Client.Delete(attacker.Ctx, forged)).To(Succeed())
		attacker.G.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(attacker.Ctx, client.ObjectKeyFromObject(forged), forged)).To(Succeed())
			c := conditionIn(forged.Status.Conditions, backupsv1alpha1.BackupConditionCleanup)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(backupsv1alpha1.BackupReasonObjectDeleteFailed))
			g.Expect(c.Message).To(ContainSubstring("refused"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		patch := client.MergeFrom(forged.DeepCopy())
		forged.Annotations = map[string]string{backupdeletion.SkipObjectDeletionAnnotation: "true"}
		attacker.G.Expect(env.Client.Patch(attacker.Ctx, forged, patch)).To(Succeed())
		attacker.G.Eventually(func() bool { return attacker.Gone(forged) }).WithTimeout(30 * time.Second).Should(BeTrue())
	}
	attacker.G.Consistently(hits.Load).WithTimeout(2*time.Second).Should(BeZero(), "requests reached the attacker's endpoint")
	attacker.G.Expect(plat.ObjectExists(platform.KeyOf(attacker.G, real))).To(BeTrue())
}

// A ConfigMap named like the driver's capture, pre-created in the tenant's
// namespace, is ignored: the restore uses its own capture (in the driver's
// namespace), its own source, takes its safety snapshot and hands the
// HelmRelease back.
func TestLookAlikeCaptureIsIgnored(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "restore"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: b.Name}}}
	tn.Create(rj)
	// Created right after the job, before the driver captures: the names
	// the driver used to give its captures, pointing elsewhere.
	// The first is the driver's exact capture name, with its exact labels.
	exact := names.Subdomain(names.MaxSubdomain, "restore-capture", rj.Namespace, rj.Name, names.Hash(string(rj.UID)))
	for _, name := range []string{exact, "restore-capture-" + string(rj.UID)[:8], "restore"} {
		lbls := map[string]string{backupsv1alpha1.RestoreJobUIDLabel: string(rj.UID)}
		for k, v := range restore.CaptureLabels() {
			lbls[k] = v
		}
		tn.Create(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: name, Labels: lbls},
			Data: map[string]string{
				"etcdcluster.yaml":        "apiVersion: etcd-operator.cozystack.io/v1alpha2\nkind: EtcdCluster\nspec:\n  replicas: 1\n",
				"restore-source.yaml":     "bucket: " + platform.Bucket + "\nkey: victim/etcd/theirs.db\nendpoint: http://127.0.0.2\n",
				"helmrelease-prior-state": "Suspended",
			},
		})
	}
	done := tn.AwaitRestore(rj)
	tn.G.Expect(done.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", done.Status)
	c := tn.Cluster()
	_, key, err := staging.SourceOf(context.Background(), plat.Client, c)
	tn.G.Expect(err).NotTo(HaveOccurred())
	tn.G.Expect(key).To(Equal(platform.KeyOf(tn.G, b)))
	tn.G.Expect(*c.Spec.Replicas).To(BeEquivalentTo(3))
	tn.G.Expect(condition(done, backupsv1alpha1.RestoreConditionSafetyBackup).Status).To(Equal(metav1.ConditionTrue))
	untouchedHelmRelease(tn)
}

// A Lease a tenant makes, named and labelled like a restore claim, blocks
// nothing: claims live in the driver's namespace.
func TestTenantLeaseDoesNotBlockRestores(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	// A RestoreJob that exists and has not finished (its Backup does not
	// exist), so a claim naming it is not stale: only where the Lease is
	// can make the driver ignore it.
	holderJob := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "holder"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "does-not-exist"}}}
	tn.Create(holderJob)
	holder := tn.NS + "/" + holderJob.Name
	exact := claim.LeaseName(claim.Target{Namespace: tn.NS, Cluster: "etcd"})
	for _, name := range []string{exact, "etcd-restore-etcd", "etcd-restore-" + tn.NS} {
		// The driver's exact name, labels and annotation.
		tn.Create(&coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: name,
				Labels: map[string]string{
					claim.ComponentLabel: claim.ComponentValue, claim.TargetNamespaceLabel: tn.NS,
					backupsv1alpha1.ApplicationNameLabel: "etcd", backupsv1alpha1.RestoreJobUIDLabel: string(holderJob.UID)},
				Annotations: map[string]string{claim.HolderNameAnnotation: holderJob.Name}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
		})
	}
	rj := tn.Restore("restore", b.Name, "")
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
}

// A forged Ready Backup with the Plan's labels and a time far in the
// future makes retention prune nothing real.
func TestForgedFutureBackupDoesNotDriveRetention(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	tn.Create(&backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "daily", Annotations: map[string]string{planpolicy.RetentionKeepLast: "1"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}, BackupClassName: platform.ClassName,
			Schedule: backupsv1alpha1.PlanSchedule{Cron: "@yearly"},
		},
	})
	real := tn.Backup("daily-real", "daily")
	forged := platform.Forge(real, tn.NS, "daily-forged")
	forged.Spec.TakenAt = metav1.NewTime(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	forged.Spec.DriverMetadata[artifact.MetaSnapshotName] = "none"
	tn.Create(forged)
	// A second real Backup (a second later: Backups keep whole seconds):
	// retention (keepLast 1) now deletes the older real one, and only that,
	// whatever the forged one says.
	time.Sleep(1100 * time.Millisecond)
	newer := tn.Backup("daily-newer", "daily")
	tn.G.Eventually(func() bool { return tn.Gone(real) }).WithTimeout(30 * time.Second).Should(BeTrue())
	tn.G.Consistently(func() bool { return tn.Gone(newer) || tn.Gone(forged) }).WithTimeout(3 * time.Second).Should(BeFalse())
	plan := &backupsv1alpha1.Plan{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "daily"}}
	tn.G.Eventually(func() string {
		tn.Get(plan)
		rec, _ := planrecord.Peek(plan)
		return rec.LastSuccessfulBackup
	}).WithTimeout(10 * time.Second).Should(Equal(newer.Name))
}

// A Backup with a 40 KB field still gets a clear terminal answer: every
// status message is cut below the API's limit.
func TestOversizedBackupFieldIsReported(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	real := tn.Backup("nightly", "")
	before := tn.Cluster()
	huge := platform.Forge(real, tn.NS, "huge")
	huge.Status.Phase = backupsv1alpha1.BackupPhase(strings.Repeat("Pending", 40*1024/7))
	tn.Create(huge)
	rj := tn.Restore("restore-huge", "huge", "")
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	tn.G.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonBackupNotReady)))
	tn.G.Expect(len(rj.Status.Message)).To(BeNumerically("<", 8192))
	tn.Untouched(before)
}

// Names a user chose that are not label values or DNS labels work: a
// 75-character or dotted RestoreJob restores; a BackupJob for a
// 64-character application name gets a clear terminal phase.
func TestLongAndDottedNames(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	// The BackupJob half reaches label hashing: a valid, long, dotted job
	// name (253 characters) ends in a Backup, and every label the driver
	// derives from it is a valid label value.
	long := "nightly.2026-06-01." + strings.Repeat("j", 253-len("nightly.2026-06-01."))
	lb := tn.Backup(long, "")
	for k, v := range lb.Labels {
		tn.G.Expect(len(v)).To(BeNumerically("<=", 63), "label %s", k)
	}
	tn.G.Expect(lb.Labels).To(HaveKey(backupsv1alpha1.OwningJobNameLabel))
	tn.G.Expect(lb.Labels[backupsv1alpha1.OwningJobNameLabel]).NotTo(Equal(long))

	b := tn.Backup("nightly", "")
	for _, name := range []string{strings.Repeat("r", 75), "restore-from-the-nightly-backup.2026-06-01"} {
		rj := tn.Restore(name, b.Name, "")
		tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %+v", name, rj.Status)
	}
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "long-app"},
		Spec: backupsv1alpha1.BackupJobSpec{BackupClassName: platform.ClassName,
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: strings.Repeat("a", 64)}},
	}
	tn.Create(job)
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseFailed))
		g.Expect(platform.Reason(job.Status.Conditions)).To(Equal(backupsv1alpha1.BackupReasonInvalidApplicationRef))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// A Backup whose application is not the target is refused at once: the
// cluster is never deleted.
func TestMismatchedApplicationIsRefused(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	real := tn.Backup("nightly", "")
	before := tn.Cluster()
	other := platform.Forge(real, tn.NS, "other-app")
	other.Spec.ApplicationRef.Name = "other"
	tn.Create(other)
	rj := tn.Restore("restore-other", "other-app", "")
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	tn.G.Expect(platform.Reason(rj.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonUnsupportedTarget)))

	target := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "restore-elsewhere"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: real.Name},
			TargetApplicationRef: &backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "other"}}}
	tn.Create(target)
	done := tn.AwaitRestore(target)
	tn.G.Expect(platform.Reason(done.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonUnsupportedTarget)))
	tn.Untouched(before)

	// The driver's own, verified Backup of "etcd", into a cluster named etcd
	// that Flux's label says another HelmRelease manages: not this
	// application's cluster, so not restored over.
	cluster := tn.Cluster()
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Labels["helm.toolkit.fluxcd.io/name"] = "other"
	tn.G.Expect(env.Client.Patch(tn.Ctx, cluster, patch)).To(Succeed())
	owned := tn.Restore("restore-foreign-cluster", real.Name, "")
	tn.G.Expect(platform.Reason(owned.Status.Conditions)).To(Equal(string(backupsv1alpha1.ReasonApplicationMismatch)))
	tn.Untouched(before)
}

func condition(rj *backupsv1alpha1.RestoreJob, typ string) *metav1.Condition {
	return conditionIn(rj.Status.Conditions, typ)
}

func conditionIn(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return &metav1.Condition{}
}

func untouchedHelmRelease(tn *platform.Tenant) {
	tn.T.Helper()
	hr := tn.HelmRelease()
	tn.G.Expect(hr.Spec.Suspend).To(BeFalse())
}

// platformKeys are the running driver's provenance keys, read from its
// Secret as the driver reads them.
func platformKeys() *provenance.Keyring {
	o := manager.DefaultOptions()
	return &provenance.Keyring{Reader: env.Client, Writer: env.Client, Namespace: o.Namespace, Name: o.ProvenanceSecret}
}
