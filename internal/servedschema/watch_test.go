package servedschema

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// countingReader counts the CRD reads Missing makes on demand.
type countingReader struct {
	client.Reader
	n atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.n.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// With its watches running, the Schema answers without reading a CRD, and
// a CRD's change reaches it at once (not after the minutes a lazy read
// stays current). Seen failing without Start: every answer was a read.
func TestWatchedCRDsAreNotRead(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	reads := &countingReader{Reader: env.Client}
	s := &Schema{Reader: reads, Watcher: w}
	go func() { _ = s.Start(ctx) }()

	watching := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.read[TenantControlPlaneCRD].watched && s.read[DataStoreCRD].watched
	}
	g.Eventually(watching).WithTimeout(30 * time.Second).Should(BeTrue())
	g.Expect(s.Installed(ctx, TenantControlPlaneCRD, "v1alpha1")).To(BeTrue())

	// Kamaji's TenantControlPlane CRD stops serving its version: the
	// watch tells at once.
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: TenantControlPlaneCRD}, crd)).To(Succeed())
	before := crd.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v.(map[string]any)["served"] = false
	}
	g.Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
	g.Expect(env.Client.Patch(ctx, crd, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func() bool { return s.Installed(ctx, TenantControlPlaneCRD, "v1alpha1") }).WithTimeout(10 * time.Second).Should(BeFalse())

	g.Expect(reads.n.Load()).To(BeZero(), "CRDs read on demand")
}
