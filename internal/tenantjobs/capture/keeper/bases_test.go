package keeper

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// The window starts at its oldest base Backup still kept: when retention
// (or a person) deletes the Backup it started at, whose chain goes with
// it, the window starts at the next base Backup of the run, never at an
// older one that was not in it.
func TestTheWindowStartsAtTheOldestBaseKept(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.backup("b0", -60, 50)
	b1 := h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)
	h.g.Expect(rec.Spec.BaseBackup).To(Equal("b1"))
	h.report(rec, 180, h.clk.Now().Add(-5*time.Second), nil)
	h.reconcile(p)
	h.backup("b2", 30, 150)
	h.reconcile(p)
	rec = h.record(p)
	h.g.Expect(rec.Spec.BaseBackup).To(Equal("b2"))
	h.g.Expect(rec.Status.Window.FromBackup).To(Equal("b1"), "the chain after b1 reached b2: the window goes on")
	h.report(rec, 160, h.clk.Now().Add(-time.Second), nil)

	// b1 is being deleted (its finalizer deletes its chain).
	b1.Finalizers = []string{"example.com/hold"}
	h.g.Expect(env.Client.Update(h.ctx, b1)).To(Succeed())
	h.g.Expect(env.Client.Delete(h.ctx, b1)).To(Succeed())
	h.reconcile(p)
	w := h.record(p).Status.Window
	h.g.Expect(w.FromBackup).To(Equal("b2"))
	h.g.Expect(w.From.Time).To(BeTemporally("==", t0.Add(30*time.Minute)))
	cond := meta.FindStatusCondition(h.record(p).Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Message).To(ContainSubstring("(Backup b2)"))

	// Gone for good: the start stays at b2.
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b1), b1)).To(Succeed())
	b1.Finalizers = nil
	h.g.Expect(env.Client.Update(h.ctx, b1)).To(Succeed())
	h.reconcile(p)
	h.g.Expect(h.record(p).Status.Window.FromBackup).To(Equal("b2"))
}

// A capture whose base Backup is deleted, with no other base left, stops:
// it would write on into the prefix of a chain being deleted with its
// base. The Plan's next base starts it again.
func TestACaptureWithoutABaseStops(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	b1 := h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)
	_, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())

	b1.Finalizers = []string{"example.com/hold"}
	h.g.Expect(env.Client.Update(h.ctx, b1)).To(Succeed())
	h.g.Expect(env.Client.Delete(h.ctx, b1)).To(Succeed())
	h.reconcile(p)
	_, err = h.deployment(rec.Name)
	h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the capture still runs: %v", err)
	var sa corev1.ServiceAccount
	h.g.Expect(apierrors.IsNotFound(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: rec.Name}, &sa))).To(BeTrue())
	cond := meta.FindStatusCondition(h.record(p).Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonBaseGone), cond.Message)
	h.g.Expect(cond.Message).To(ContainSubstring("Backup b1"))
	h.g.Expect(h.record(p).Status.Window).To(BeNil(), "a window from a Backup that is gone")
	h.g.Expect(strings.Join(h.events(), "\n")).To(ContainSubstring(driverv1alpha1.CaptureReasonBaseGone))

	h.backup("b2", 30, 150)
	h.reconcile(p)
	rec = h.record(p)
	h.g.Expect(rec.Spec.BaseBackup).To(Equal("b2"))
	d, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(arg(d, "base-revision")).To(Equal("150"))
	h.g.Expect(rec.Status.Window.FromBackup).To(Equal("b2"))
	h.expectGrant(rec.Name)
}
