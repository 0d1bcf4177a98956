// Package withoutkamaji runs the driver on a platform without Kamaji (its
// CRDs are not installed, as on a cluster that runs no tenant control
// planes), then installs Kamaji while the driver runs: the driver must
// neither ask the API server about Kamaji at every restore, nor miss it
// once it is there.
package withoutkamaji

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

var (
	env  *testenv.Env
	plat *platform.Platform
	// kamajiGets counts the driver's GETs of Kamaji's discovery
	// documents (/apis/kamaji.clastix.io...).
	kamajiGets atomic.Int64
)

// kamajiCRDs are the names of the Kamaji CRDs the driver uses.
var kamajiCRDs = []string{"tenantcontrolplanes.kamaji.clastix.io", "datastores.kamaji.clastix.io"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "withoutkamaji-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	return testenv.Run(m, func(e *testenv.Env) {
		env = e
		if err := removeKamaji(context.Background()); err != nil {
			panic(err)
		}
		if plat, err = platform.New(e.Client, dir); err != nil {
			panic(err)
		}
		cfg := rest.CopyConfig(e.Config)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countKamaji{rt} })
		plat.Start(cfg, nil)
	})
}

// countKamaji counts the GETs of Kamaji's discovery documents.
type countKamaji struct{ next http.RoundTripper }

func (c countKamaji) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/apis/"+kamajiv1alpha1.GroupVersion.Group) &&
		req.URL.Query().Get("watch") != "true" && !strings.Contains(req.URL.Path, "/tenantcontrolplanes") &&
		!strings.Contains(req.URL.Path, "/datastores") {
		kamajiGets.Add(1)
	}
	return c.next.RoundTrip(req)
}

// removeKamaji deletes the Kamaji CRDs every test environment installs and
// waits until the API server no longer serves the group.
func removeKamaji(ctx context.Context) error {
	for _, name := range kamajiCRDs {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		crd.SetName(name)
		if err := env.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// The API server drops a CRD once its cleanup finalizer has run, and
	// its discovery document after that; on a loaded machine (the CI runs
	// packages two at a time) the first took over a minute once.
	deadline := time.Now().Add(3 * time.Minute)
	for _, name := range kamajiCRDs {
		for {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd)
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s is not gone: %v (deletion %v, finalizers %v, status %v)", name, err,
					crd.GetDeletionTimestamp(), crd.GetFinalizers(), crd.Object["status"])
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return err
	}
	for {
		_, err := dc.ServerResourcesForGroupVersion(kamajiv1alpha1.GroupVersion.String())
		if apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server still serves %s: %v", kamajiv1alpha1.GroupVersion, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// installKamaji installs the Kamaji CRDs again, as a platform that adds
// Kamaji later does, and waits until they are served.
func installKamaji() error {
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "upstream", "kamaji")}, ErrorIfPathMissing: true,
	})
	return err
}
