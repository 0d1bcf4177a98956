package eventrecorder

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// An Event recorded is written once to the real API server, about the
// right object, and nothing of it stays queued.
func TestEventIsWrittenAndNotKept(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.DriverNamespace, Name: "regarding"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	r := New(env.Client, driverscheme.New(), "etcd-backup-driver")
	go func() { _ = r.Start(ctx) }()
	r.Eventf(cm, nil, corev1.EventTypeWarning, "Refused", "Backup", "refused: %s", strings.Repeat("x", 2000))

	var events eventsv1.EventList
	g.Eventually(func() ([]eventsv1.Event, error) {
		err := env.Client.List(ctx, &events, client.InNamespace(testenv.DriverNamespace))
		return events.Items, err
	}).WithTimeout(10 * time.Second).Should(HaveLen(1))
	e := events.Items[0]
	g.Expect(e.Regarding.Kind).To(Equal("ConfigMap"))
	g.Expect(e.Regarding.UID).To(Equal(cm.UID))
	g.Expect(e.Reason).To(Equal("Refused"))
	g.Expect(e.Action).To(Equal("Backup"))
	g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
	g.Expect(e.ReportingController).To(Equal("etcd-backup-driver"))
	g.Expect(len(e.Note)).To(BeNumerically("<=", 1024))
	g.Expect(e.Series).To(BeNil())
	g.Expect(r.queue).To(BeEmpty())
}

// A full queue drops the Event instead of blocking the reconcile that
// records it.
func TestFullQueueDropsInsteadOfBlocking(t *testing.T) {
	g := NewWithT(t)
	r := New(nil, driverscheme.New(), "etcd-backup-driver")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "regarding"}}
	before := testutil.ToFloat64(dropped)
	done := make(chan struct{})
	go func() {
		for range QueueSize + 3 {
			r.Eventf(cm, nil, corev1.EventTypeNormal, "Reason", "Action", "note")
		}
		close(done)
	}()
	g.Eventually(done).WithTimeout(5 * time.Second).Should(BeClosed())
	g.Expect(testutil.ToFloat64(dropped) - before).To(Equal(3.0))
	g.Expect(r.queue).To(HaveLen(QueueSize))
}
