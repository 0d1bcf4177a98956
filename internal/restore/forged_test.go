package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Objects a tenant makes or edits to pass for the driver's own (issue 32,
// items 3 and 4), built with the driver's exact names, labels and
// annotations.

// annotateCluster sets annotations on the live EtcdCluster, as the tenant
// can.
func annotateCluster(g Gomega, ns string, ann map[string]string) {
	g.Eventually(func(g Gomega) {
		c := getCluster(g, ns)
		a := c.GetAnnotations()
		for k, v := range ann {
			a[k] = v
		}
		c.SetAnnotations(a)
		g.Expect(k.Update(context.Background(), c)).To(Succeed())
	}).Should(Succeed())
}

// forgedDuringStaging runs a restore to its staging (held: the capture is
// made, the HelmRelease suspended, the live cluster untouched), lets
// forge edit what the tenant can, and checks that for a while nothing is
// destroyed and the restore is not over; then it lets the staging finish
// and checks the restore replaced the cluster as it should.
func forgedDuringStaging(t *testing.T, forge func(g Gomega, ns string, rj *backupsv1alpha1.RestoreJob)) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldStaging = true })
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-forged"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "nightly", ""))).To(Succeed())
	stagingJobOf(t, ns, "restore")
	forge(g, ns, getJob(g, ns, "restore"))

	g.Consistently(func(g Gomega) {
		c := getCluster(g, ns)
		g.Expect(c.GetUID()).To(Equal(old.GetUID()))
		g.Expect(c.GetDeletionTimestamp()).To(BeNil(), "the live cluster is deleted before its staging finished")
		g.Expect(getJob(g, ns, "restore").Status.Phase).NotTo(BeElementOf(backupsv1alpha1.RestoreJobPhaseSucceeded, backupsv1alpha1.RestoreJobPhaseFailed))
	}).WithTimeout(4 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	op.Set(func(op *testenv.Operator) { op.HoldStaging = false })
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := getCluster(g, ns)
	g.Expect(c.GetUID()).NotTo(Equal(old.GetUID()))
	g.Expect(bootstrapKey(c)).To(Equal("tenant/etcd/nightly-forged.db"))
}

// Attack (item 4): the tenant marks its live cluster as re-created by the
// running restore (restored-by: <RestoreJob UID>). The driver took it for
// a cluster of its own without the restore's source and rolled it over:
// deleted without the staging having finished.
func TestForgedRestoredByOnTheLiveClusterIsIgnored(t *testing.T) {
	forgedDuringStaging(t, func(g Gomega, ns string, rj *backupsv1alpha1.RestoreJob) {
		annotateCluster(g, ns, map[string]string{backupsv1alpha1.RestoredByAnnotation: string(rj.UID)})
	})
}

// Attack (item 4): the tenant seals the running restore's success on its
// live cluster (restored-by and restore-succeeded: <RestoreJob UID>). The
// driver read that as a healthy re-created cluster and ended the restore
// Succeeded without replacing anything.
func TestForgedSealOnTheLiveClusterIsIgnored(t *testing.T) {
	forgedDuringStaging(t, func(g Gomega, ns string, rj *backupsv1alpha1.RestoreJob) {
		annotateCluster(g, ns, map[string]string{
			backupsv1alpha1.RestoredByAnnotation:       string(rj.UID),
			backupsv1alpha1.RestoreSucceededAnnotation: string(rj.UID),
		})
	})
}

// Attack (item 4): the same seal on the HelmRelease.
func TestForgedSealOnTheHelmReleaseIsIgnored(t *testing.T) {
	forgedDuringStaging(t, func(g Gomega, ns string, rj *backupsv1alpha1.RestoreJob) {
		g.Eventually(func(g Gomega) {
			hr := getHR(g, ns)
			if hr.Annotations == nil {
				hr.Annotations = map[string]string{}
			}
			hr.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(rj.UID)
			g.Expect(k.Update(context.Background(), hr)).To(Succeed())
		}).Should(Succeed())
	})
}
