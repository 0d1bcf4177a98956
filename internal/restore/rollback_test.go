package restore

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// rollbackWritePoints is every API write of a restore the operator cannot
// bootstrap, from the failure on: the rollback's own writes.
var rollbackWritePoints = []string{
	"status RollingBack",
	"delete EtcdCluster",
	"create EtcdCluster with bootstrap",
	"patch EtcdCluster",
	"status HandingBack",
	"patch HelmRelease suspend=false",
	"delete Lease",
	"patch PersistentVolumeClaim",
	"patch RestoreJob -finalizer",
	"status Failed",
}

// runRollback runs a restore whose Backup the operator cannot bootstrap
// from, with f (if any) injected, and checks the end every run must reach:
// Failed, rolled back to the safety Backup, application handed back.
func runRollback(t *testing.T, f *fault) (string, *backupsv1alpha1.RestoreJob) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	bad := testPrefix + "b-bbbbb.db"
	op.Set(func(op *testenv.Operator) { op.FailBootstrap = func(key string) bool { return key == bad } })
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-bbbbb"))).To(Succeed())
	if f != nil {
		f.ns = ns
		writes.inject(f)
	}
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	if f != nil {
		g.Expect(writes.fired(ns)).To(BeTrue(), "write point %q was never reached", f.point)
	}
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonBootstrapFailed)), rj.Status.Message)
	g.Expect(rj.Status.Message).To(ContainSubstring("rolled back"))
	g.Expect(condition(rj, backupsv1alpha1.RestoreConditionRollback).Status).To(Equal(metav1.ConditionTrue))
	c := getCluster(g, ns)
	g.Expect(bootstrapKey(c)).To(Equal(testPrefix + safetyName(rj) + ".db"))
	g.Expect(c.GetAnnotations()).To(HaveKeyWithValue(backupsv1alpha1.RestoredFromAnnotation, safetyName(rj)))
	g.Expect(progressDeadlineOf(c)).To(BeEquivalentTo(600), "the captured progress deadline is back")
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(leaseCount(g, ns)).To(BeZero())
	_, err := getCapture(g, rj)
	g.Expect(err).NotTo(HaveOccurred(), "a failed restore keeps its capture")
	log := writes.of(ns)
	g.Expect(countOf(log, "create EtcdCluster with bootstrap")).To(Equal(2), "writes: %v", log)
	return ns, rj
}

// A restore the operator cannot bootstrap is rolled back to the safety
// Backup; with rollback declined it is not.
func TestRollback(t *testing.T) {
	t.Run("rolls back", func(t *testing.T) {
		ns, _ := runRollback(t, nil)
		g := NewWithT(t)
		log := writes.of(ns)
		from := indexOf(log, "status RollingBack", 0)
		g.Expect(from).To(BeNumerically(">", 0))
		g.Expect(distinct(log[from : indexOf(log, "status Failed", 0)+1])).To(Equal(rollbackWritePoints))
	})
	t.Run("declined", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		op := startOperator(t, ns)
		op.Set(func(op *testenv.Operator) { op.FailBootstrap = func(string) bool { return true } })
		g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-ccccc"))).To(Succeed())
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"rollback":false}`))).To(Succeed())
		rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonBootstrapFailed)))
		g.Expect(rj.Status.Message).To(ContainSubstring("rollback is false"))
		g.Expect(rj.Status.Message).To(ContainSubstring(safetyName(rj)), "it says where the old data is")
		g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal(testPrefix+"b-ccccc.db"), "the failed cluster is left as it is")
		expectKeptSuspended(t, ns, rj)
	})
}

// Crash safety of the rollback: every write of it, failed before it reaches
// the API server or applied with the response lost, ends the same way.
func TestRollbackCrashSafety(t *testing.T) {
	// The restore itself deleted and created the cluster once already:
	// the faults hit the rollback's own delete and create.
	skip := map[string]int{"delete EtcdCluster": 1, "create EtcdCluster with bootstrap": 1}
	for _, p := range rollbackWritePoints {
		for _, after := range []bool{false, true} {
			name := fmt.Sprintf("fail %s", p)
			if after {
				name = fmt.Sprintf("crash after %s", p)
			}
			t.Run(name, func(t *testing.T) {
				start := time.Now()
				runRollback(t, &fault{point: p, after: after, skip: skip[p]})
				t.Logf("took %s", time.Since(start).Round(time.Millisecond))
			})
		}
	}
}
