package restore

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// progressDeadlineOf is a cluster's spec.progressDeadlineSeconds (0 when
// unset).
func progressDeadlineOf(u *unstructured.Unstructured) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, "spec", "progressDeadlineSeconds")
	return v
}

// The re-create raises spec.progressDeadlineSeconds to the restore's
// budget; once the cluster is healthy it is the captured value again, not
// a deadline of the driver's making left on the tenant's cluster.
func TestProgressDeadlineReturnsToCaptured(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{mutate: func(u *unstructured.Unstructured) {
		g.Expect(unstructured.SetNestedField(u.Object, int64(1234), "spec", "progressDeadlineSeconds")).To(Succeed())
	}})
	op := startOperator(t, ns)
	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = true })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false,"restoreTimeoutSeconds":3600}`))).To(Succeed())
	waitReason(t, ns, "restore", backupsv1alpha1.ReasonEtcdClusterBootstrapping)
	raised := progressDeadlineOf(getCluster(g, ns))
	g.Expect(raised).To(BeNumerically(">", 3000), "the re-create gives the operator the restore's budget")

	op.Set(func(op *testenv.Operator) { op.HoldBootstrap = false })
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	c := getCluster(g, ns)
	g.Expect(progressDeadlineOf(c)).To(BeEquivalentTo(1234))
	g.Expect(bootstrapKey(c)).To(Equal(testPrefix + "b-aaaaa.db"))
	g.Expect(countOf(writes.of(ns), "patch EtcdCluster")).To(Equal(1))
	g.Consistently(func(g Gomega) {
		g.Expect(progressDeadlineOf(getCluster(g, ns))).To(BeEquivalentTo(1234))
	}).WithTimeout(time.Second).Should(Succeed())
}
