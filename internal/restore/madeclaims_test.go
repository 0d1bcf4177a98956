package restore

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
)

// A staging claim this process made is settled without a read, by the UID
// it was given: a look-alike by the same name, with the same label (the
// claim deleted and made again in between), is never handed to the cluster
// blind. The API server refuses the patch, the driver forgets what it
// made, and the claim is read and judged. The claim really made is handed
// over once, however often the patch repeats.
func TestMadeClaimSettledByItsUID(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	job := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restore", UID: types.UID("job-" + ns)}}
	name := stagingjob.Name(job.UID)
	claim := func() *corev1.PersistentVolumeClaim {
		pvc := memberPVC(ns, name)
		pvc.Labels = map[string]string{backupsv1alpha1.StagingLabel: string(job.UID)}
		return pvc
	}
	made := claim()
	g.Expect(k.Create(ctx, made)).To(Succeed())
	g.Expect(k.Delete(ctx, made)).To(Succeed())
	g.Eventually(func() error {
		// The API server's pvc-protection finalizer waits for a controller
		// this suite does not run.
		cur := &corev1.PersistentVolumeClaim{}
		if err := k.Get(ctx, client.ObjectKeyFromObject(made), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		cur.Finalizers = nil
		return k.Update(ctx, cur)
	}).Should(Succeed())
	lookalike := claim()
	g.Eventually(func() error { return k.Create(ctx, lookalike) }).Should(Succeed())

	cluster := &etcdv1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterName, UID: "cluster-uid",
		Annotations: map[string]string{backupsv1alpha1.RestoredByAnnotation: string(job.UID)}},
		Spec: etcdv1alpha2.EtcdClusterSpec{Bootstrap: &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{
			Source: etcdv1alpha2.RestoreSource{PVC: &etcdv1alpha2.PVCSource{ClaimName: name, SubPath: stagingjob.RestoreFile}}}}}}
	o := &observation{job: job, cluster: cluster}
	r := &Reconciler{Client: k}
	r.made.add(job.UID, made.UID)

	done, err := r.handMadeClaim(ctx, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse(), "the look-alike is left to the read path")
	g.Expect(r.made.has(job.UID)).To(BeFalse())
	cur := &corev1.PersistentVolumeClaim{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(lookalike), cur)).To(Succeed())
	g.Expect(cur.OwnerReferences).To(BeEmpty(), "the look-alike was handed to the cluster")

	// The claim this process made (here: the one now there) is handed over.
	r.made.add(job.UID, lookalike.UID)
	for range 2 {
		done, err = r.handMadeClaim(ctx, o)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeTrue())
	}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(lookalike), cur)).To(Succeed())
	g.Expect(cur.OwnerReferences).To(HaveLen(1))
	g.Expect(cur.OwnerReferences[0].UID).To(Equal(cluster.UID))
}
