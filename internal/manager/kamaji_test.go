package manager

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// A partial Kamaji install (TenantControlPlanes served, DataStores not)
// does not keep the driver from starting: the restore's eager DataStore
// informer is skipped, its caches sync and its controllers run. (From an
// independent review: the informer's start failed SetupWithManager, so
// backups and Plans stopped too.)
func TestManagerStartsWithoutKamajiDataStores(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("datastores.kamaji.clastix.io")
	g.Expect(env.Client.Delete(ctx, crd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
	}).WithTimeout(30 * time.Second).Should(BeTrue())

	o := DefaultOptions()
	o.ProbeAddr, o.MetricsAddr = "0", "0"
	o.SkipControllerNameValidation = true
	mgr, err := New(env.Config, o)
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	synced, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	g.Expect(mgr.GetCache().WaitForCacheSync(synced)).To(BeTrue())
	cancel()
	g.Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
}
