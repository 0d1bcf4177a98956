package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Objects a tenant makes or edits to pass for the driver's own (issue 32,
// items 3 and 4), built with the driver's exact names, labels and
// annotations.

// Attack (item 3): the staging Job's and claim's names were derived from
// the RestoreJob's UID, which the tenant knows. The tenant makes, before
// the restore stages, a claim and a Job that only exits 0 at those names,
// labelled as the restore's staging: the restore must stage with its own
// objects and boot the cluster from its own claim, and leave the
// tenant's alone.
func TestTenantMadeStagingObjectsAreNotTheRestores(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns) // plays the Job controller: it completes any staging-labelled Job
	g.Expect(k.Create(ctx, ourBackup(ns, "nightly", "nightly-forged-staging"))).To(Succeed())
	rj := newRestoreJob(ns, "restore", "nightly", "")
	g.Expect(k.Create(ctx, rj)).To(Succeed())

	name := stagingjob.Name(rj.UID)
	labels := stagingjob.Labels(rj.UID)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	g.Expect(k.Create(ctx, pvc)).To(Succeed())
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "stage", Image: "busybox", Command: []string{"true"}}},
			Volumes: []corev1.Volume{{Name: "staging", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
		}}}}
	g.Expect(k.Create(ctx, job)).To(Succeed())

	done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := getCluster(g, ns)
	claim, _, _ := unstructured.NestedString(c.Object, "spec", "bootstrap", "restore", "source", "pvc", "claimName")
	g.Expect(claim).NotTo(BeEmpty())
	g.Expect(claim).NotTo(Equal(name), "the cluster boots from the tenant's claim")
	g.Expect(bootstrapKey(c)).To(Equal("tenant/etcd/nightly-forged-staging.db"))
	// The driver's own Job ran the staging binary; the tenant's objects
	// are as the tenant left them.
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{backupsv1alpha1.StagingLabel: string(done.UID)})).To(Succeed())
	var ours []string
	for _, j := range jobs.Items {
		if j.UID != job.UID {
			ours = append(ours, j.Name)
			g.Expect(j.Spec.Template.Spec.Containers[0].Command).To(Equal([]string{stagingjob.Command}))
		}
	}
	g.Expect(ours).To(HaveLen(1))
	cur := &batchv1.Job{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(job), cur)).To(Succeed())
	g.Expect(cur.UID).To(Equal(job.UID))
	g.Expect(cur.DeletionTimestamp).To(BeNil())
	curPVC := &corev1.PersistentVolumeClaim{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(pvc), curPVC)).To(Succeed())
	g.Expect(curPVC.OwnerReferences).To(BeEmpty(), "the tenant's claim is not handed to the cluster")
	g.Expect(curPVC.DeletionTimestamp).To(BeNil())
}

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
