package credbroker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
)

// The reconciler sweeps a strategy at start and when its spec changes, not
// on writes that change nothing a sweep reads: its own finalizer, a status
// condition (the shared-credentials one), labels and annotations. A sweep
// on every such write is how a sweep came to run while a key was being
// issued.
func TestSweepsOnSpecChangesNotOnMetadataOrStatusWrites(t *testing.T) {
	w := newWorld(t, "sweeps")
	var sweeps atomic.Int32
	connect := brokerminio.Connect(nil)
	w.broker.Providers[driverv1alpha1.CredentialBrokerMinIO] = func(endpoint string, admin credbroker.Key) (credbroker.Provider, error) {
		if admin.AccessKeyID == w.platform.AccessKeyID {
			sweeps.Add(1) // this strategy's (other tests' strategies are reconciled too)
		}
		return connect(endpoint, admin)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr(true)}})
	w.g.Expect(err).NotTo(HaveOccurred())
	w.g.Expect((&credbroker.Reconciler{Client: mgr.GetClient(), Broker: w.broker}).SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()

	key := client.ObjectKeyFromObject(w.strategy.Etcd)
	w.g.Eventually(func() []string {
		var s strategyv1alpha1.Etcd
		_ = env.Client.Get(w.ctx, key, &s)
		return s.Finalizers
	}).WithTimeout(20 * time.Second).Should(ContainElement(credbroker.Finalizer))
	w.g.Eventually(sweeps.Load).Should(BeNumerically(">=", 1))
	time.Sleep(2 * time.Second) // the finalizer's own update event
	base := sweeps.Load()

	var s strategyv1alpha1.Etcd
	w.g.Expect(env.Client.Get(w.ctx, key, &s)).To(Succeed())
	meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: "SharedCredentials", Status: metav1.ConditionFalse, Reason: "OwnKeys", Message: "test"})
	w.g.Expect(env.Client.Status().Update(w.ctx, &s)).To(Succeed())
	w.g.Expect(env.Client.Get(w.ctx, key, &s)).To(Succeed())
	s.Annotations = map[string]string{"example.com/touched": "yes"}
	w.g.Expect(env.Client.Update(w.ctx, &s)).To(Succeed())
	w.g.Consistently(sweeps.Load).WithTimeout(3*time.Second).Should(Equal(base), "a status or metadata write started a sweep")

	sp := w.policy()
	sp.Spec.CredentialBroker.RotationInterval = &metav1.Duration{Duration: 48 * time.Hour}
	w.g.Expect(env.Client.Update(w.ctx, sp)).To(Succeed())
	w.g.Eventually(sweeps.Load).WithTimeout(10*time.Second).Should(BeNumerically(">", base), "a change of the StrategyPolicy's spec started no sweep")
}

func ptr[T any](v T) *T { return &v }
