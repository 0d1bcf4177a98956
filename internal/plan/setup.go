package plan

import (
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Setup registers the Plan controller on mgr with the real clock.
func Setup(mgr ctrl.Manager, maxConcurrent int) error {
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(ControllerName),
		Clock:     clock.RealClock{},
	}
	return r.SetupWithManager(mgr, maxConcurrent)
}
