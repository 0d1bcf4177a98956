// Package apivalidation proves, against a real kube-apiserver, the schema
// rules the driver relies on: if one of these rules went missing from a CRD,
// the driver could be handed objects it assumes impossible.
package apivalidation

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { k8s = e.Client }))
}
