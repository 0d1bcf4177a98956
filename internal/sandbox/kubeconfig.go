package sandbox

import "github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"

// WriteKubeconfig writes a kubeconfig for the sandbox's admin to path, so
// that kubectl and the example scripts can reach the API server.
func (s *Sandbox) WriteKubeconfig(path string) error {
	return testenv.WriteKubeconfig(s.Config, path)
}
