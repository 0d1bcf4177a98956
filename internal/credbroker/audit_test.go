package credbroker_test

import (
	"bytes"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// kubeconfig writes a kubeconfig file for the test API server.
func kubeconfig(w *world, t *testing.T) string {
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	w.g.Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

// After an upgrade from the layout whose tenant keys were service accounts
// of the platform credential, the sweep deletes this strategy's keys of
// that layout and any key under a tenant's user the broker did not make.
// What it cannot know to be the broker's is counted and listed: a key of
// the platform credential with no policy of its own (what a tenant holding
// a stripped key of the old layout could mint) is counted in a metric,
// listed by audit-keys and deleted by audit-keys --remove; a key of root
// with no policy of its own (the platform credential can mint keys of any
// user) and a key of the platform credential with a policy of its own are
// listed for review and never removed. Sound keys are left alone.
func TestAuditFindsAndRemovesKeysThatAreNotSound(t *testing.T) {
	w := newWorld(t, "audit", "audit-a")
	_, err := w.broker.Ensure(w.ctx, w.strategy, "audit-a")
	w.g.Expect(err).NotTo(HaveOccurred())
	good := w.tenantKey("audit-a")
	owner := credbroker.OwnerOf("audit", "audit-a")

	platform, err := brokerminio.NewAdmin(server.Endpoint, w.platform.AccessKeyID, w.platform.SecretAccessKey, nil)
	w.g.Expect(err).NotTo(HaveOccurred())
	legacy, err := platform.AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: credbroker.Group("audit") + "0123456789",
		Description: "etcd-backup-driver tenant key: issued=1700000000", Policy: credbroker.Policy(credbroker.ScopeOf(w.strategy, "audit-a"))})
	w.g.Expect(err).NotTo(HaveOccurred())
	strip(w, legacy.AccessKey)
	backdoor, err := platform.AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: "backdoor"})
	w.g.Expect(err).NotTo(HaveOccurred())
	ops, err := platform.AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: "ops",
		Policy: []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::tenants/*"]}]}`)})
	w.g.Expect(err).NotTo(HaveOccurred())
	rootMinted, err := platform.AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: "rootdoor", TargetUser: server.RootUser})
	w.g.Expect(err).NotTo(HaveOccurred(), "the platform credential can mint keys of root: the audit must look there")
	defer func() {
		for _, k := range []string{ops.AccessKey, rootMinted.AccessKey} {
			_ = rootAdmin(w).DeleteServiceAccount(w.ctx, k)
		}
	}()
	planted, err := rootAdmin(w).AddServiceAccount(w.ctx, brokerminio.NewServiceAccount{Name: "planted", TargetUser: owner.Name})
	w.g.Expect(err).NotTo(HaveOccurred())

	found, err := w.broker.Audit(w.ctx, w.strategy, false)
	w.g.Expect(err).NotTo(HaveOccurred())
	kinds := map[string]credbroker.FindingKind{}
	for _, f := range found {
		kinds[f.AccessKeyID] = f.Kind
	}
	w.g.Expect(kinds).To(HaveKeyWithValue(legacy.AccessKey, credbroker.FoundOldLayoutKey))
	w.g.Expect(kinds).To(HaveKeyWithValue(backdoor.AccessKey, credbroker.FoundPlatformKeyInherits))
	w.g.Expect(kinds).To(HaveKeyWithValue(ops.AccessKey, credbroker.FoundPlatformKey))
	w.g.Expect(kinds).To(HaveKeyWithValue(rootMinted.AccessKey, credbroker.FoundRootKeyInherits))
	w.g.Expect(kinds).To(HaveKeyWithValue(planted.AccessKey, credbroker.FoundUnsoundTenantKey))
	w.g.Expect(kinds).NotTo(HaveKey(good.AccessKeyID))

	_, err = w.broker.Sweep(w.ctx, w.strategy)
	w.g.Expect(err).NotTo(HaveOccurred())
	for _, gone := range []string{legacy.AccessKey, planted.AccessKey} {
		_, err := rootAdmin(w).InfoServiceAccount(w.ctx, gone)
		w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "the sweep left %s: %v", gone, err)
	}
	w.g.Expect(gauge("etcd_backup_driver_credential_broker_platform_keys", "audit", "inherited")).To(Equal(1.0))
	w.g.Expect(gauge("etcd_backup_driver_credential_broker_platform_keys", "audit", "own")).To(Equal(1.0))
	w.g.Expect(w.tenantKey("audit-a")).To(Equal(good), "the sweep replaced a sound key")

	kc := kubeconfig(w, t)
	var out, errOut bytes.Buffer
	args := []string{"audit-keys", "--strategy", "audit", "--driver-namespace", testenv.DriverNamespace, "--kubeconfig", kc}
	code := ebdctl.Main("kubectl etcd-backup", args, ebdctl.Streams{Out: &out, ErrOut: &errOut})
	w.g.Expect(code).To(Equal(ebdctl.ExitFailed), "stdout: %s\nstderr: %s", out.String(), errOut.String())
	w.g.Expect(out.String()).To(ContainSubstring(backdoor.AccessKey))
	w.g.Expect(out.String()).To(ContainSubstring(rootMinted.AccessKey))
	w.g.Expect(out.String()).To(ContainSubstring("every right of the platform credential"))
	w.g.Expect(out.String()).NotTo(ContainSubstring(good.AccessKeyID))

	out.Reset()
	errOut.Reset()
	code = ebdctl.Main("kubectl etcd-backup", append(args, "--remove"), ebdctl.Streams{Out: &out, ErrOut: &errOut})
	w.g.Expect(code).To(Equal(ebdctl.ExitOK), "stdout: %s\nstderr: %s", out.String(), errOut.String())
	w.g.Expect(errOut.String()).To(ContainSubstring("to review by hand"))
	_, err = rootAdmin(w).InfoServiceAccount(w.ctx, backdoor.AccessKey)
	w.g.Expect(brokerminio.IsNotFound(err)).To(BeTrue(), "audit-keys --remove left the backdoor: %v", err)
	for _, kept := range []string{ops.AccessKey, rootMinted.AccessKey} {
		_, err := rootAdmin(w).InfoServiceAccount(w.ctx, kept)
		w.g.Expect(err).NotTo(HaveOccurred(), "audit-keys --remove deleted %s, a key only for review", kept)
	}
	found, err = w.broker.Audit(w.ctx, w.strategy, false)
	w.g.Expect(err).NotTo(HaveOccurred())
	for _, f := range found {
		w.g.Expect(f.Kind.Removable()).To(BeFalse(), "left after --remove: %+v", f)
	}
	w.g.Expect(w.works(good, "audit-a")).To(Succeed())
}

// gauge reads a series of the driver's metrics registry.
func gauge(name, strategy, policy string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["strategy"] == strategy && labels["policy"] == policy {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func keysOf(found []credbroker.Finding) []string {
	var keys []string
	for _, f := range found {
		keys = append(keys, f.AccessKeyID)
	}
	return keys
}
