package planrecord

import (
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Changes lets through the Plan events that can change what the driver
// does with a Plan: its creation and deletion, a new generation (its
// spec), and a change to its annotations other than the driver's record
// (the tenant's settings). The driver's own writes (the record, its
// conditions) and Cozystack's status writes pass by: each would otherwise
// be followed by a reconcile of both of the driver's Plan controllers that
// finds nothing to do, and a write that did not settle would wake them
// for ever. Drills, Backups and BackupJobs wake a Plan through watches of
// their own; the due times through the requeue.
func Changes() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		if o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) {
			return true
		}
		return !maps.Equal(withoutRecord(o.GetAnnotations()), withoutRecord(n.GetAnnotations()))
	}}
}

func withoutRecord(a map[string]string) map[string]string {
	out := maps.Clone(a)
	delete(out, Annotation)
	return out
}
