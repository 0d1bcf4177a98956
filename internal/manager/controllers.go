package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
)

// setupFunc registers one controller (with its watches and indexes) on mgr.
type setupFunc func(mgr ctrl.Manager, o Options) error

// controllers lists every controller the driver runs, in registration order.
// Each entry lives in its own package under internal/.
var controllers = []setupFunc{
	func(mgr ctrl.Manager, o Options) error {
		return restore.Setup(mgr, restore.Config{Deadline: o.RestoreDeadline, MaxConcurrentReconciles: o.MaxConcurrentReconciles})
	},
}
