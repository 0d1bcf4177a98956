package e2e

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// An accidental delete undone to the point (issue 39): on a
// TenantControlPlane whose etcd is captured, namespaces are created (t1)
// and deleted (t2). A restore to a moment between brings them back with
// their objects; one to after t2 does not; after each the kube-apiserver's
// clients relist. A segment corrupted in S3 then fails a restore before
// anything is destroyed.
func TestRestoreToAPointUndoesAnAccidentalDelete(t *testing.T) {
	tn := newTenant(t, true)
	tn.allowPointInTime()
	tn.deploy(1)
	cs, _ := tn.controlPlane("kubernetes")
	plan := tn.capturingPlan("continuous")
	base := tn.awaitManifest(tn.takePlanBackup("base", plan.Name))
	rec := tn.awaitCapturePod()

	t1 := tn.createLostNamespaces(cs)
	tn.awaitWindowPast(rec, t1)
	beforeDelete := time.Now()
	tn.deleteLostNamespaces(cs)
	t2 := time.Now()
	tn.awaitWindowPast(rec, t2)
	// Every deletion was received by the window's end.
	afterDelete := rec.Status.Window.To.Time
	t.Logf("created by %s, deleted from %s to %s, window to %s", t1.Format(time.RFC3339Nano), beforeDelete.Format(time.RFC3339Nano),
		t2.Format(time.RFC3339Nano), afterDelete.Format(time.RFC3339Nano))

	t.Run("a point between t1 and t2 brings the namespaces back", func(t *testing.T) {
		tn := tn.in(t)
		maxBefore := tn.restoreToPoint(cs, "to-before-delete", base, beforeDelete)
		tn.expectLostNamespaces(cs, true)
		expectRelist(t, tn, cs, maxBefore)
	})
	t.Run("a point after t2 does not", func(t *testing.T) {
		tn := tn.in(t)
		maxBefore := tn.restoreToPoint(cs, "to-after-delete", base, afterDelete)
		tn.expectLostNamespaces(cs, false)
		expectRelist(t, tn, cs, maxBefore)
	})
	t.Run("a corrupted segment fails the restore before anything is destroyed", func(t *testing.T) {
		tn := tn.in(t)
		g := tn.g
		tn.corruptFirstSegment(base)
		cluster := tn.awaitHealthy(1, time.Minute)
		revBefore := tn.liveRevision()
		rj := tn.awaitRestore(tn.restoreJob("to-corrupt-chain", base.Name, pointOption(beforeDelete)), 4*time.Minute)
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
		g.Expect(rj.Status.Message).To(And(ContainSubstring("ChainChecksumMismatch"), ContainSubstring("segment 0")))
		after := tn.awaitHealthy(1, 10*time.Second)
		g.Expect(after.UID).To(Equal(cluster.UID), "the cluster was re-created")
		g.Expect(tn.liveRevision()).To(BeNumerically("<", revBefore+1000), "the live revision jumped: something restored")
		tn.expectLostNamespaces(cs, false)
	})
}

// in is tn for the subtest t: its failures fail t.
func (tn *tenant) in(t *testing.T) *tenant {
	sub := *tn
	sub.t, sub.g = t, NewWithT(t)
	return &sub
}

func pointOption(at time.Time) map[string]any {
	return map[string]any{"pointInTime": at.UTC().Format(time.RFC3339Nano)}
}

// restoreToPoint restores the application to at from backupRef base and
// returns the highest resourceVersion the tenant's clients could have
// seen before it.
func (tn *tenant) restoreToPoint(cs *kubernetes.Clientset, name string, base *backupsv1alpha1.Backup, at time.Time) uint64 {
	tn.t.Helper()
	g := tn.g
	list, err := cs.CoreV1().Namespaces().List(tn.ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	maxBefore, err := strconv.ParseUint(list.ResourceVersion, 10, 64)
	g.Expect(err).NotTo(HaveOccurred())
	rj := tn.awaitRestore(tn.restoreJob(name, base.Name, pointOption(at)), 4*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	tn.t.Logf("RestoreJob %s: %s", name, rj.Status.Message)
	raised := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionRaised)), raised.Message)
	return maxBefore
}

// deleteLostNamespaces deletes lostNamespaces and their ConfigMaps, as a
// person would by accident (no namespace controller runs here: the objects
// go first, then the namespace is finalized).
func (tn *tenant) deleteLostNamespaces(cs *kubernetes.Clientset) {
	tn.t.Helper()
	for ns := range lostNamespaces {
		tn.g.Expect(cs.CoreV1().ConfigMaps(ns).DeleteCollection(tn.ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		deleteNamespace(tn, cs, ns)
	}
}

// expectLostNamespaces waits until the tenant's kube-apiserver serves
// lostNamespaces with exactly their ConfigMaps, or none of them.
func (tn *tenant) expectLostNamespaces(cs *kubernetes.Clientset, present bool) {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		for ns, n := range lostNamespaces {
			_, err := cs.CoreV1().Namespaces().Get(tn.ctx, ns, metav1.GetOptions{})
			if !present {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s: %v", ns, err)
				continue
			}
			g.Expect(err).NotTo(HaveOccurred(), "namespace %s", ns)
			cms, err := cs.CoreV1().ConfigMaps(ns).List(tn.ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			got := map[string]string{}
			for _, cm := range cms.Items {
				got[cm.Name] = cm.Data["n"]
			}
			want := map[string]string{}
			for i := range n {
				want[fmt.Sprintf("cm-%d", i)] = fmt.Sprint(i)
			}
			g.Expect(got).To(Equal(want), "ConfigMaps of %s", ns)
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// corruptFirstSegment flips a byte of the first segment of base's chain
// in S3, keeping its size and its recorded sha256.
func (tn *tenant) corruptFirstSegment(base *backupsv1alpha1.Backup) {
	tn.t.Helper()
	src, err := artifact.Resolve(base)
	tn.g.Expect(err).NotTo(HaveOccurred())
	s3, err := sb.S3Client(sb.S3Credentials.AccessKeyID, sb.S3Credentials.SecretAccessKey)
	tn.g.Expect(err).NotTo(HaveOccurred())
	dir := src.Key[:strings.LastIndex(src.Key, "/")+1] + "changes/"
	var key string
	for o := range s3.ListObjects(tn.ctx, src.Bucket, minio.ListObjectsOptions{Prefix: dir, Recursive: true}) {
		tn.g.Expect(o.Err).NotTo(HaveOccurred())
		if strings.Contains(o.Key, "/0000000000-") && strings.HasSuffix(o.Key, ".seg") {
			key = o.Key
		}
	}
	tn.g.Expect(key).NotTo(BeEmpty(), "no first segment under %s", dir)
	obj, err := s3.GetObject(tn.ctx, src.Bucket, key, minio.GetObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	info, err := obj.Stat()
	tn.g.Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(obj)
	tn.g.Expect(err).NotTo(HaveOccurred())
	data[len(data)-1] ^= 0xff
	_, err = s3.PutObject(tn.ctx, src.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{UserMetadata: userMetadata(info)})
	tn.g.Expect(err).NotTo(HaveOccurred())
}

// userMetadata is an object's x-amz-meta-* as PutObject takes them.
func userMetadata(info minio.ObjectInfo) map[string]string {
	m := map[string]string{}
	for k, v := range info.UserMetadata {
		m[strings.TrimPrefix(strings.ToLower(k), "x-amz-meta-")] = v
	}
	for k, vs := range info.Metadata {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-amz-meta-"); ok && len(vs) > 0 {
			m[name] = vs[0]
		}
	}
	return m
}
