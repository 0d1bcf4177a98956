package sandbox

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for the sandbox's admin to path, so
// that kubectl and the example scripts can reach the API server.
func (s *Sandbox) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = &clientcmdapi.Cluster{
		Server:                   s.Config.Host,
		CertificateAuthorityData: s.Config.CAData,
	}
	cfg.AuthInfos["sandbox-admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: s.Config.CertData,
		ClientKeyData:         s.Config.KeyData,
		Token:                 s.Config.BearerToken,
	}
	cfg.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "sandbox-admin", Namespace: "default"}
	cfg.CurrentContext = "sandbox"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
