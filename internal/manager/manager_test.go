package manager

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestFlagsOverrideDefaults(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--leader-elect", "--max-concurrent-reconciles=7", "--backup-deadline=90s", "--metrics-bind-address=0",
		"--kube-api-qps=55.5", "--kube-api-burst=99", "--disable-controllers=plan, metrics"})).To(Succeed())
	g.Expect(o.DisabledControllers).To(Equal([]string{"plan", "metrics"}))
	g.Expect(o.KubeAPIQPS).To(Equal(55.5))
	g.Expect(o.KubeAPIBurst).To(Equal(99))
	g.Expect(o.LeaderElect).To(BeTrue())
	g.Expect(o.MaxConcurrentReconciles).To(Equal(7))
	g.Expect(o.BackupDeadline).To(Equal(90 * time.Second))
	g.Expect(o.MetricsAddr).To(Equal("0"))
	g.Expect(o.RestoreDeadline).To(Equal(30 * time.Minute))
}

// The manager starts against a real API server, serves its probes and
// metrics, and stops cleanly.
func TestManagerServesProbesAndMetrics(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()

	o := DefaultOptions()
	o.ProbeAddr, o.MetricsAddr = freeAddr(t), freeAddr(t)
	mgr, err := New(env.Config, o)
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	for _, url := range []string{
		fmt.Sprintf("http://%s/healthz", o.ProbeAddr),
		fmt.Sprintf("http://%s/readyz", o.ProbeAddr),
		fmt.Sprintf("http://%s/metrics", o.MetricsAddr),
	} {
		g.Eventually(func() (int, error) {
			resp, err := http.Get(url)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}).WithTimeout(20*time.Second).Should(Equal(http.StatusOK), url)
	}
	cancel()
	g.Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
}

func TestDisableControllers(t *testing.T) {
	g := NewWithT(t)
	on, err := enabled(Options{DisabledControllers: []string{"plan"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(on).To(HaveLen(len(controllers) - 1))
	_, err = enabled(Options{DisabledControllers: []string{"plans"}})
	g.Expect(err).To(MatchError(ContainSubstring(`unknown controller "plans"`)))

	// With the driver's scheduler off (Cozystack's Plan controller
	// schedules), retention and drills still run.
	var left []uintptr
	for _, f := range on {
		left = append(left, reflect.ValueOf(f).Pointer())
	}
	g.Expect(left).To(ContainElement(reflect.ValueOf(setupFunc(setupPlanKeeper)).Pointer()))
	g.Expect(left).NotTo(ContainElement(reflect.ValueOf(setupFunc(setupPlans)).Pointer()))
}
