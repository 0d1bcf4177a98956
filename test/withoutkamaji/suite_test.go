// Package withoutkamaji runs the driver on a platform without Kamaji (its
// CRDs are not installed, as on a cluster that runs no tenant control
// planes), then installs Kamaji while the driver runs: the driver must
// neither ask the API server about Kamaji at every restore, nor miss it
// once it is there.
package withoutkamaji

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
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
	return testenv.RunWith(m, testenv.Options{WithoutKamaji: true}, func(e *testenv.Env) {
		env = e
		if err := kamajiNotServed(); err != nil {
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

// kamajiNotServed checks the suite's premise: the API server serves no
// Kamaji group (testenv.Options.WithoutKamaji left its CRDs out).
func kamajiNotServed() error {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return err
	}
	if _, err := dc.ServerResourcesForGroupVersion(kamajiv1alpha1.GroupVersion.String()); !apierrors.IsNotFound(err) {
		return fmt.Errorf("the API server serves %s (%v); this suite runs without Kamaji", kamajiv1alpha1.GroupVersion, err)
	}
	return nil
}

// installKamaji installs the Kamaji CRDs again, as a platform that adds
// Kamaji later does, and waits until they are served.
func installKamaji() error {
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{testenv.KamajiCRDPath()}, ErrorIfPathMissing: true,
	})
	return err
}
