package cozystack

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// Backup and in-place restore work on Cozystack's schema. The deletion
// policy is the StrategyPolicy's (Cozystack's strategy kind has none), so
// the Backup is recorded Delete as the platform's policy says.
func TestBackupAndRestoreOnCozystackCRDs(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	tn.G.Expect(artifact.RecordedOf(b).DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyDelete))
	// The driver keeps its records in status.underlyingResources, which
	// Cozystack's Backup CRD keeps: the Backup is inspected (a Job in its
	// namespace; no kubelet runs it here).
	tn.G.Eventually(func() string {
		tn.G.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		c := meta.FindStatusCondition(b.Status.Conditions, backupsv1alpha1.BackupConditionInspected)
		if c == nil {
			return ""
		}
		return c.Reason + ": " + c.Message
	}).WithTimeout(10 * time.Second).Should(HavePrefix("InspectionPending: inspecting the snapshot in Job etcd-inspect-"))
	var jobs batchv1.JobList
	tn.G.Expect(env.Client.List(tn.Ctx, &jobs, client.InNamespace(tn.NS), client.HasLabels{backupsv1alpha1.InspectionLabel})).To(Succeed())
	tn.G.Expect(jobs.Items).To(HaveLen(1))

	before := tn.Cluster()
	rj := tn.Restore("restore", b.Name, "")
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
	tn.G.Expect(tn.Cluster().UID).NotTo(Equal(before.UID))
	tn.G.Expect(tn.HelmRelease().Spec.Suspend).To(BeFalse())
}

// On a Cozystack platform Cozystack's Plan controller schedules and the
// driver's scheduler is off (the suite runs the driver with
// --disable-controllers=plan, as docs/install.md says): a Plan's retention,
// set as an annotation, still prunes the Backups the driver records for
// the BackupJobs Cozystack's controller creates, and the Plan says what
// applies. The Plan's cron carries its time zone as a CRON_TZ= prefix,
// which Cozystack's CRD stores and its controller reads.
func TestRetentionWhenCozystackSchedules(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "nightly", Annotations: map[string]string{planpolicy.RetentionKeepLast: "1"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}, BackupClassName: platform.ClassName,
			Schedule: backupsv1alpha1.PlanSchedule{Cron: "CRON_TZ=Europe/Berlin 0 3 * * *"},
		},
	}
	tn.Create(plan)
	tn.G.Expect(plan.Spec.Schedule.Cron).To(Equal("CRON_TZ=Europe/Berlin 0 3 * * *"))
	first := cozystackRun(tn, plan, time.Now().Add(-2*time.Minute))
	// Backups keep whole seconds: the second is a second later.
	time.Sleep(1100 * time.Millisecond)
	second := cozystackRun(tn, plan, time.Now())
	tn.G.Eventually(func() bool { return tn.Gone(first) }).WithTimeout(30 * time.Second).Should(BeTrue())
	tn.G.Expect(tn.Gone(second)).To(BeFalse())
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(plan.Status.Conditions, backupsv1alpha1.PlanConditionPolicyValid)).To(BeTrue())
		rec, ok := planrecord.Peek(plan)
		g.Expect(ok).To(BeTrue())
		g.Expect(rec.LastSuccessfulBackup).To(Equal(second.Name))
		g.Expect(rec.LastScheduleTime).To(BeNil(), "the driver's scheduler is off")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	var jobs backupsv1alpha1.BackupJobList
	tn.G.Expect(env.Client.List(tn.Ctx, &jobs, client.InNamespace(tn.NS))).To(Succeed())
	tn.G.Expect(jobs.Items).To(HaveLen(2), "only Cozystack's runs")
}

// cozystackRun plays Cozystack's Plan controller: it creates the BackupJob
// of plan's run at t as that controller does (<plan>-<Unix minutes>,
// spec.planRef, a controller reference to the Plan) and waits for the
// driver to record its Backup.
func cozystackRun(tn *platform.Tenant, plan *backupsv1alpha1.Plan, t time.Time) *backupsv1alpha1.Backup {
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: fmt.Sprintf("%s-%d", plan.Name, t.Unix()/60)},
		Spec: backupsv1alpha1.BackupJobSpec{
			PlanRef:         &backupsv1alpha1.LocalObjectReference{Name: plan.Name},
			ApplicationRef:  backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef),
			BackupClassName: plan.Spec.BackupClassName,
		},
	}
	tn.G.Expect(controllerutil.SetControllerReference(plan, job, env.Client.Scheme())).To(Succeed())
	tn.Create(job)
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), "status: %+v", job.Status)
	}).WithTimeout(60 * time.Second).Should(Succeed())
	b := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: job.Status.BackupRef.Name}}
	tn.Get(b)
	tn.G.Expect(b.Spec.PlanRef).To(Equal(&backupsv1alpha1.LocalObjectReference{Name: plan.Name}))
	return b
}

// On Cozystack's strategy kind plain http is the StrategyPolicy's to
// allow: a strategy without one is https only, and its job fails saying
// where to allow http, with nothing created; once its StrategyPolicy
// allows http, a job gets its snapshot at the http endpoint.
func TestHTTPEndpointIsTheStrategyPolicysToAllow(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	endpoint := "http://" + strings.TrimPrefix(plat.S3URL, "https://")
	tn.Create(&strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: "plain-http-" + tn.NS},
		Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
			S3: &strategyv1alpha1.EtcdS3Template{Bucket: platform.Bucket, Endpoint: endpoint, ForcePathStyle: &fps,
				CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: platform.CredsSecret}}}}},
	}, &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "plain-http-" + tn.NS},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: "plain-http-" + tn.NS},
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
		}}},
	})
	job := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "http"},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "plain-http-" + tn.NS}}
	tn.Create(job)
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseFailed))
		g.Expect(job.Status.Message).To(ContainSubstring("set spec.allowHTTPEndpoint: true in the StrategyPolicy"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	var snaps etcdv1alpha2.EtcdSnapshotList
	tn.G.Expect(env.Client.List(tn.Ctx, &snaps, client.InNamespace(tn.NS))).To(Succeed())
	tn.G.Expect(snaps.Items).To(BeEmpty())

	tn.Create(&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "plain-http-" + tn.NS},
		Spec: driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true}})
	allowed := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "http-allowed"},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "plain-http-" + tn.NS}}
	tn.Create(allowed)
	tn.G.Eventually(func(g Gomega) {
		g.Expect(env.Client.List(tn.Ctx, &snaps, client.InNamespace(tn.NS))).To(Succeed())
		g.Expect(snaps.Items).To(ContainElement(HaveField("Spec.Destination.S3.Endpoint", endpoint)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// Cozystack's Backup controller adds and removes the shared finalizer on
// every Backup; the driver's own finalizer guarantees its cleanup whatever
// that one does, and the driver lets the shared one go once it is done.
func TestDriverOwnsItsFinalizer(t *testing.T) {
	tn := plat.NewTenant(t, "tenant")
	b := tn.Backup("nightly", "")
	tn.G.Expect(b.Finalizers).To(ContainElement(backupsv1alpha1.BackupCleanupFinalizer))
	// Cozystack's controller adds its finalizer...
	patch := client.MergeFrom(b.DeepCopy())
	controllerutil.AddFinalizer(b, backupsv1alpha1.CleanupFinalizer)
	tn.G.Expect(env.Client.Patch(tn.Ctx, b, patch)).To(Succeed())
	tn.G.Expect(env.Client.Delete(tn.Ctx, b)).To(Succeed())
	// ...and, on deletion, drops it at once (as it does); the Backup still
	// waits for the driver's cleanup, which then lets it go. The driver
	// may be done first and have let the shared finalizer go itself: the
	// Backup is then gone already (the CI met that order).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(tn.Ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(b, backupsv1alpha1.CleanupFinalizer)
		return env.Client.Patch(tn.Ctx, b, patch)
	})
	tn.G.Expect(err == nil || apierrors.IsNotFound(err)).To(BeTrue(), "drop the shared finalizer: %v", err)
	tn.G.Eventually(func() bool { return tn.Gone(b) }).WithTimeout(30 * time.Second).Should(BeTrue())
	tn.G.Eventually(func() []string { return tn.Events(b) }).WithTimeout(10 * time.Second).Should(ContainElement("SnapshotDeleted"))
}
