// Package scheme builds the runtime scheme that holds every kind the driver
// reads or writes: core Kubernetes, the backups and strategy APIs, the
// driver's own API, the etcd-operator and apps mirrors, and Flux HelmReleases.
package scheme

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// New returns a scheme with every kind the driver uses.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		backupsv1alpha1.AddToScheme,
		strategyv1alpha1.AddToScheme,
		driverv1alpha1.AddToScheme,
		etcdv1alpha2.AddToScheme,
		appsv1alpha1.AddToScheme,
		helmv2.AddToScheme,
		kamajiv1alpha1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
