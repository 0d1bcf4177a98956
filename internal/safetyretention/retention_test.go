package safetyretention_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

// safetyBackup is what a restore records: the driver's exact name, labels
// and Retain policy, signed with the driver's key.
func safetyBackup(g Gomega, keys provenance.Keys, ns, restore string, uid types.UID, takenAt time.Time) *backupsv1alpha1.Backup {
	name := fmt.Sprintf("%s-safety-%08x", restore, takenAt.Unix()&0xffffffff)
	rec := artifact.Record{SnapshotName: name, SnapshotUID: "snap-" + name, DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://s3.example.com", Key: ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	g.Expect(err).NotTo(HaveOccurred())
	group := strategyv1alpha1.GroupVersion.Group
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			backupsv1alpha1.SafetyBackupLabel: restore, backupsv1alpha1.RestoreJobUIDLabel: string(uid),
			backupsv1alpha1.ApplicationNameLabel: "etcd"}},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(backupsv1alpha1.DefaultApplicationAPIGroup), Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "s3"},
			TakenAt:        metav1.NewTime(takenAt),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI("bkt", artifact.ObjectKey(ns+"/etcd/", name))}},
	}
	g.Expect(provenance.Seal(context.Background(), keys, b)).To(Succeed())
	g.Expect(env.Client.Create(context.Background(), b)).To(Succeed())
	return b
}

// Every restore leaves a safety Backup; they were never removed. The newest
// three per application are kept, and so is an older one an unfinished
// RestoreJob restores from; the rest go.
func TestSafetyBackupsHaveARetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "safety-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	keys := &provenance.Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: provenance.DefaultSecretName}
	g.Expect(keys.Ensure(ctx)).To(Succeed())

	t0 := time.Now().Add(-10 * time.Hour).Truncate(time.Second)
	var all []*backupsv1alpha1.Backup
	for i := range 6 {
		all = append(all, safetyBackup(g, keys, ns.Name, fmt.Sprintf("restore-%d", i), types.UID(fmt.Sprintf("uid-%d", i)), t0.Add(time.Duration(i)*time.Hour)))
	}
	reading := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "undo"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: all[1].Name}}}
	g.Expect(env.Client.Create(ctx, reading)).To(Succeed())

	startDriver(t, g)
	g.Eventually(func() []bool { return present(g, all) }).WithTimeout(20*time.Second).Should(Equal([]bool{false, true, false, true, true, true}),
		"want the newest three and the one RestoreJob %s reads", reading.Name)
}

// startDriver runs the driver until the test ends. The RestoreJobs stay
// as the test made them: no restore controller runs them (in these
// namespaces, with no cluster, they would fail at once, and then rightly no
// longer hold their Backups; the CI met that race).
func startDriver(t *testing.T, g Gomega) {
	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.DisabledControllers = []string{"restore"}
	mgr, err := manager.New(env.Config, o)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// present says, for each Backup, whether it still exists and is not
// being deleted.
func present(g Gomega, backups []*backupsv1alpha1.Backup) []bool {
	out := make([]bool, 0, len(backups))
	for _, b := range backups {
		var got backupsv1alpha1.Backup
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &got)
		if !apierrors.IsNotFound(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
		out = append(out, err == nil && got.DeletionTimestamp == nil)
	}
	return out
}

// endRestore gives rj the status the driver writes when it ends Failed
// with the given Ready reason and conditions.
func endRestore(g Gomega, rj *backupsv1alpha1.RestoreJob, reason backupsv1alpha1.RestoreReason, conds ...metav1.Condition) {
	now := metav1.Now()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	rj.Status.Conditions = append([]metav1.Condition{{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: string(reason), Message: "m", LastTransitionTime: now}}, conds...)
	for i := range rj.Status.Conditions {
		rj.Status.Conditions[i].LastTransitionTime = now
	}
	g.Expect(env.Client.Status().Update(context.Background(), rj)).To(Succeed())
}

// A restore that failed after it deleted the cluster, without putting it
// back (HelmReleaseKeptSuspended: the data may now live only in its
// safety Backup), keeps that safety Backup out of the retention until a
// person ends it by deleting the RestoreJob. A restore that was refused
// before anything changed, or that rolled back, holds nothing.
func TestFailedRestoreNeedingAHandKeepsItsSafetyBackup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "safety-kept-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	keys := &provenance.Keyring{Reader: env.Client, Writer: env.Client, Namespace: testenv.DriverNamespace, Name: provenance.DefaultSecretName}
	g.Expect(keys.Ensure(ctx)).To(Succeed())

	job := func(name string) *backupsv1alpha1.RestoreJob {
		rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "nightly"}}}
		g.Expect(env.Client.Create(ctx, rj)).To(Succeed())
		return rj
	}
	purged := metav1.Condition{Type: backupsv1alpha1.RestoreConditionPurged, Status: metav1.ConditionTrue,
		Reason: string(backupsv1alpha1.ReasonClusterPurged), Message: "m"}
	broken, rolledBack, refused := job("broken"), job("rolled-back"), job("refused")
	endRestore(g, broken, backupsv1alpha1.ReasonBootstrapFailed, purged, metav1.Condition{
		Type: backupsv1alpha1.RestoreConditionHelmReleaseReconciled, Status: metav1.ConditionFalse,
		Reason: string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended), Message: "m"})
	endRestore(g, rolledBack, backupsv1alpha1.ReasonBootstrapFailed, purged, metav1.Condition{
		Type: backupsv1alpha1.RestoreConditionRollback, Status: metav1.ConditionTrue,
		Reason: string(backupsv1alpha1.ReasonBootstrapFailed), Message: "m"})
	endRestore(g, refused, backupsv1alpha1.ReasonStagingRefused)

	t0 := time.Now().Add(-10 * time.Hour).Truncate(time.Second)
	var all []*backupsv1alpha1.Backup
	for i, rj := range []*backupsv1alpha1.RestoreJob{broken, rolledBack, refused} {
		all = append(all, safetyBackup(g, keys, ns.Name, rj.Name, rj.UID, t0.Add(time.Duration(i)*time.Hour)))
	}
	for i := range 3 {
		all = append(all, safetyBackup(g, keys, ns.Name, fmt.Sprintf("later-%d", i), types.UID(fmt.Sprintf("later-%d", i)), t0.Add(time.Duration(5+i)*time.Hour)))
	}

	startDriver(t, g)
	state := func() []bool { return present(g, all) }
	g.Eventually(state).WithTimeout(20*time.Second).Should(Equal([]bool{true, false, false, true, true, true}),
		"want the newest three and the safety Backup of %s, which failed after deleting the cluster", broken.Name)
	g.Consistently(state).WithTimeout(2 * time.Second).Should(Equal([]bool{true, false, false, true, true, true}))

	// The person who recovered the application ends the restore.
	g.Expect(env.Client.Delete(ctx, broken)).To(Succeed())
	g.Eventually(state).WithTimeout(20*time.Second).Should(Equal([]bool{false, false, false, true, true, true}),
		"the ended restore's safety Backup is an ordinary one again")
}
