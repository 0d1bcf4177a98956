package operator

import (
	"net"
	"regexp"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeServices are what a node gives every container besides its spec,
// which the sandbox stands in for:
//
//   - KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which a
//     kubelet sets to the kubernetes Service's address (whatever the
//     Pod's enableServiceLinks): here the API server's own address, which
//     its serving certificate names;
//   - names: cluster DNS resolves a Service's name to its ClusterIP. A
//     container run from its image (container mode) gets HostsFile as its
//     /etc/hosts (the tenant etcd client Services' proxies, named there);
//     a local process has no resolver the sandbox can point, so the
//     kubelet stand-in resolves the Service names in its arguments
//     (Resolve) to the addresses they reach, as DNS would have;
//   - service-account tokens, requested through the TokenRequest API with
//     the kubelet's authority (Tokens).
type nodeServices struct {
	// APIHost and APIPort are the API server's address.
	APIHost, APIPort string
	// Resolve maps a Service's host and port to the address it reaches;
	// nil resolves nothing.
	Resolve func(host, port string) (string, bool)
	// HostsFile is the /etc/hosts of containers run from their images.
	HostsFile string
	// Tokens requests service-account tokens.
	Tokens client.Client
}

// env is what every container's environment starts with.
func (n nodeServices) env() map[string]string {
	if n.APIHost == "" {
		return nil
	}
	return map[string]string{"KUBERNETES_SERVICE_HOST": n.APIHost, "KUBERNETES_SERVICE_PORT": n.APIPort,
		"KUBERNETES_SERVICE_PORT_HTTPS": n.APIPort}
}

// serviceHostPort is a Service's DNS name (<name>.<namespace>.svc,
// optionally .cluster.local and a final dot) and a port, inside an
// argument (a URL, a comma-separated list).
var serviceHostPort = regexp.MustCompile(`[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-a-z0-9]*[a-z0-9])?\.svc(\.cluster\.local)?\.?:[0-9]+`)

// resolveNames replaces every Service name and port in arg that Resolve
// knows by the address it reaches; anything else stays as it is.
func (n nodeServices) resolveNames(arg string) string {
	if n.Resolve == nil {
		return arg
	}
	return serviceHostPort.ReplaceAllStringFunc(arg, func(hp string) string {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return hp
		}
		if addr, ok := n.Resolve(host, port); ok {
			return addr
		}
		return hp
	})
}
