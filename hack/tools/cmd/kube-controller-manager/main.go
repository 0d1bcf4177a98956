// Command kube-controller-manager is the upstream controller manager built
// from the Go module proxy, so that the sandbox and the envtest suites that
// need ownership semantics get the real garbage collector and Job controller
// with no binary download.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
