package restore

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The check of a small object writes no status before it; when it cannot
// be made (S3 unreachable: an error to retry), its status is written then,
// so the user sees why the restore waits and the restore's deadline
// (counted from StartedAt) runs. Before (found by an independent review),
// nothing was written: no phase, no message, no deadline, and the claim
// held, with every backup of the cluster waiting on it.
func TestQuietCheckThatCannotBeMadeWritesItsStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	b := unsignedBackupAt(ns, "b", "b-unreachable", "http://127.0.0.1:1")
	g.Expect(provenance.Seal(ctx, testKeys, b)).To(Succeed())
	g.Expect(k.Create(ctx, b)).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())

	g.Eventually(func(g Gomega) {
		rj := getJob(g, ns, "restore")
		g.Expect(rj.Status.StartedAt).NotTo(BeNil(), "the deadline has nothing to count from")
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonVerifyingArtifact)))
		g.Expect(strings.Contains(rj.Status.Message, "retrying")).To(BeTrue(), "message: %s", rj.Status.Message)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// Without Backup and capture (the tenant deleted its Backup after a
// restore's capture went), the cluster is still observed, so the staging
// claim it boots from is handed to it, not deleted under it (found by an
// independent review).
func TestClusterObservedWithoutBackupOrCapture(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	rj := newRestoreJob(ns, "restore", "gone", "")
	rj.Finalizers = []string{backupsv1alpha1.RestoreFinalizer}
	g.Expect(k.Create(ctx, rj)).To(Succeed())
	r := &Reconciler{Reader: k, LiveReader: k, Claims: testClaims, Namespace: testenv.DriverNamespace, Keys: testKeys}
	g.Eventually(func(g Gomega) {
		o, err := r.observe(ctx, types.NamespacedName{Namespace: ns, Name: "restore"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(o.app).To(BeEmpty())
		g.Expect(o.cluster).NotTo(BeNil())
	}).Should(Succeed())
}
