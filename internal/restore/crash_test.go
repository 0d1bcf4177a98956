package restore

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// writePoints is every API write a restore makes, in order. Status writes
// are named by the Ready reason they carry; the check of a small object
// writes no status before it, and its own write carries the safety
// snapshot's status (the step that follows it); the quick steps between
// the safety snapshot and the staging (hand-over, capture, suspension)
// write none of their own, and neither do the purge after the staging and
// the re-create (the bootstrap's write records the purge). Once the
// cluster's progress deadline is back, the success is sealed in the
// capture, so the outcome is written with the end, once the application
// is handed back; the staging claim (handed to the cluster), the capture
// (which names it) and the finalizer are settled after the end, in that
// order; the finished staging Job is left to its TTL. The claim is created
// before the Job, which names it. The crash test
// fails when the controller makes a write that is not listed here or
// skips one that is.
var writePoints = []string{
	"patch RestoreJob +finalizer",
	"create Lease",
	"status SafetySnapshotRunning",
	"create EtcdSnapshot",
	"create Backup",
	"patch EtcdSnapshot",
	"create ConfigMap",
	"patch HelmRelease suspend=true",
	"status StagingSnapshot",
	"create PersistentVolumeClaim",
	"create Job",
	"delete EtcdCluster",
	"create EtcdCluster with bootstrap",
	"status EtcdClusterBootstrapping",
	"patch EtcdCluster",
	"patch ConfigMap",
	"patch HelmRelease suspend=false",
	"delete Lease",
	"status Succeeded",
	"patch PersistentVolumeClaim",
	"delete ConfigMap",
	"patch RestoreJob -finalizer",
}

// runRestore runs one complete restore in a fresh namespace, with f (if
// any) injected, and checks the end state every run must reach.
func runRestore(t *testing.T, f *fault) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) {
		op.BootstrapWhen = func(ctx context.Context) bool {
			return anyJobReports(ctx, ns, backupsv1alpha1.ReasonEtcdClusterBootstrapping)
		}
	})
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-zzzzz"))).To(Succeed())
	if f != nil {
		f.ns = ns
		writes.inject(f)
	}
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	if f != nil {
		g.Expect(writes.fired(ns)).To(BeTrue(), "write point %q was never reached", f.point)
	}

	log := writes.of(ns)
	g.Expect(countOf(log, "create EtcdCluster with bootstrap")).To(Equal(1), "writes: %v", log)
	g.Expect(countOf(log, "delete EtcdCluster")).To(Equal(1), "writes: %v", log)
	c := getCluster(g, ns)
	g.Expect(bootstrapKey(c)).To(Equal("tenant/etcd/b-zzzzz.db"))
	g.Expect(progressDeadlineOf(c)).To(BeEquivalentTo(600), "the captured progress deadline is back")
	g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
	// The success was sealed in the capture (gone with it after the end),
	// not on anything the tenant can write.
	g.Expect(countOf(log, "patch ConfigMap")).To(BeNumerically(">=", 1), "writes: %v", log)
	g.Expect(c.GetAnnotations()).NotTo(HaveKey(backupsv1alpha1.RestoreSucceededAnnotation))
	g.Expect(getHR(g, ns).Annotations).NotTo(HaveKey(backupsv1alpha1.RestoreSucceededAnnotation))
	g.Expect(c.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(leaseCount(g, ns)).To(BeZero())
	g.Eventually(func() bool {
		_, err := getCapture(g, rj)
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "a successful restore removes its capture (after its end)")
	g.Eventually(func() []string { return getJob(g, ns, "restore").Finalizers }).Should(BeEmpty())
	safety := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: safetyName(rj)}, safety)).To(Succeed())
	snap := &etcdv1alpha2.EtcdSnapshot{}
	g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: safetyName(rj)}, snap)).To(Succeed())
	g.Expect(snap.OwnerReferences).To(HaveLen(1))
	g.Expect(snap.OwnerReferences[0].UID).To(Equal(safety.UID))
	var snaps etcdv1alpha2.EtcdSnapshotList
	g.Expect(k.List(ctx, &snaps, client.InNamespace(ns))).To(Succeed())
	g.Expect(snaps.Items).To(HaveLen(1))
	return ns
}

// Crash safety: a clean run makes exactly the enumerated writes; then, for
// every write point, a run where that write fails before it reaches the API
// server, and one where it is applied but the controller never learns so
// (a crash right after it), ends in the same state with one re-create.
func TestCrashSafety(t *testing.T) {
	ns := runRestore(t, nil)
	t.Run("clean run makes every enumerated write in order", func(t *testing.T) {
		g := NewWithT(t)
		// The report on the resumed HelmRelease may follow the end (as
		// more "status Succeeded").
		g.Eventually(func() []string { return distinct(writes.of(ns)) }).Should(Equal(writePoints))
	})
	for _, p := range writePoints {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("fail %s", p)
			if after {
				name = fmt.Sprintf("crash after %s", p)
			}
			t.Run(name, func(t *testing.T) {
				start := time.Now()
				runRestore(t, &fault{point: p, after: after})
				t.Logf("took %s", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}

// distinct keeps the first occurrence of each entry, in order.
func distinct(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
