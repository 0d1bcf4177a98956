package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plan"
)

// setupFunc registers one controller (with its watches and indexes) on mgr.
type setupFunc func(mgr ctrl.Manager, o Options) error

// controllers lists every controller the driver runs, in registration order.
// Each entry lives in its own package under internal/.
var controllers = []setupFunc{
	func(mgr ctrl.Manager, o Options) error { return plan.Setup(mgr, o.MaxConcurrentReconciles) },
	func(mgr ctrl.Manager, o Options) error { return backupdeletion.Setup(mgr, o.MaxConcurrentReconciles) },
}
