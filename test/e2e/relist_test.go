package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// expectRelist checks what every restore under a tenant control plane
// must leave its clients, so that they relist: a new write gets a
// resourceVersion above maxBefore (every one seen before the restore),
// and a watch from maxBefore is told 410 Gone.
func expectRelist(t *testing.T, tn *tenant, cs *kubernetes.Clientset, maxBefore uint64) {
	t.Helper()
	ctx := tn.ctx
	t.Run("a new write gets a resourceVersion above every one seen before", func(t *testing.T) {
		g := NewWithT(t)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: probeNS, Name: "after-restore-" + rand.String(5)}}
		cm, err := cs.CoreV1().ConfigMaps(probeNS).Create(ctx, cm, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		rv, err := strconv.ParseUint(cm.ResourceVersion, 10, 64)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rv).To(BeNumerically(">", maxBefore), "resourceVersion of a write after the restore; %d was seen before it", maxBefore)
	})

	t.Run("a watch from before the restore gets 410 Gone", func(t *testing.T) {
		g := NewWithT(t)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		w, err := cs.CoreV1().ConfigMaps(probeNS).Watch(wctx, metav1.ListOptions{ResourceVersion: strconv.FormatUint(maxBefore, 10)})
		if err != nil {
			g.Expect(apierrors.IsResourceExpired(err) || apierrors.IsGone(err)).To(BeTrue(), "watch from resourceVersion %d refused with %v", maxBefore, err)
			return
		}
		defer w.Stop()
		select {
		case ev, open := <-w.ResultChan():
			g.Expect(open).To(BeTrue(), "the watch from resourceVersion %d closed without an event", maxBefore)
			g.Expect(ev.Type).To(Equal(watch.Error), "first event of a watch from resourceVersion %d: %s %s", maxBefore, ev.Type, describeObject(ev.Object))
			status := apierrors.FromObject(ev.Object)
			g.Expect(apierrors.IsResourceExpired(status) || apierrors.IsGone(status)).To(BeTrue(), "watch from resourceVersion %d ended with %v", maxBefore, status)
		case <-wctx.Done():
			g.Expect(wctx.Err()).NotTo(HaveOccurred(), "a watch from resourceVersion %d got no event in 20s", maxBefore)
		}
	})
}
