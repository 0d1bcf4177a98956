package restore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A restore hands the application back to Flux only when that cannot cost
// the tenant its data: when nothing was destroyed, or when the cluster it
// re-created (restored or rolled back) is healthy. A restore that ended
// after the purge without one keeps the HelmRelease it suspended
// suspended: resumed, Flux would re-create the EtcdCluster from the chart,
// with an empty data directory, over whatever is left, and the failure
// would look like a fresh, healthy cluster. The decision is taken once,
// with the outcome (the HelmReleaseReconciled condition written in the
// same status write), so the hand-back never changes its mind.

// runbookKeptSuspended is where the runbook says how to recover.
const runbookKeptSuspended = "docs/runbook.md#restorejob-helmreleasekeptsuspended"

// usableCluster: the application may go back to Flux as it is.
func usableCluster(o *observation) bool {
	// A sealed restore found its cluster healthy; a member not ready at a
	// later look does not take that back.
	return !committed(o) || sealed(o) || (o.cluster != nil && recreatedBy(o) && healthy(o.cluster))
}

// keepsSuspended: the restore suspended the HelmRelease and ends without a
// usable cluster, so it leaves it suspended.
func keepsSuspended(o *observation) bool {
	return o.capture != nil && o.capture.hrPrior == hrNotSuspended && !usableCluster(o)
}

// keptSuspended reads the decision back from the concluded job.
func keptSuspended(job *backupsv1alpha1.RestoreJob) bool {
	c := meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.RestoreConditionHelmReleaseReconciled)
	return c != nil && c.Reason == string(backupsv1alpha1.ReasonHelmReleaseKeptSuspended)
}

// keptSuspendedMessage says why the HelmRelease stays suspended and how to
// recover, exactly.
func keptSuspendedMessage(o *observation) string {
	msg := fmt.Sprintf("HelmRelease %s/%s is kept suspended (it was not suspended before the restore): the restore ended after the old EtcdCluster was deleted without a healthy cluster, and resuming it would let Flux re-create an empty cluster over the tenant's data. "+
		"To recover (%s): re-create EtcdCluster %s from ConfigMap %s/%s (key %s) and restore ",
		o.job.Namespace, o.app, runbookKeptSuspended, clusterName, o.capture.namespace, o.capture.name, captureKeyCluster)
	if o.capture.rollback != nil {
		msg += fmt.Sprintf("safety Backup %s/%s", o.job.Namespace, o.capture.rollback.BackupName)
	} else {
		msg += "the Backup you want"
	}
	return msg + fmt.Sprintf(" with a new RestoreJob (spec.options.safetySnapshot: false), or, once EtcdCluster %s is healthy, resume the HelmRelease by hand: kubectl -n %s patch helmrelease %s --type merge -p '{\"spec\":{\"suspend\":false}}'",
		clusterName, o.job.Namespace, o.app)
}

// helmReleaseAdvice is the sentence of a failure message about the
// HelmRelease.
func helmReleaseAdvice(o *observation) string {
	if keepsSuspended(o) {
		return keptSuspendedMessage(o) + "."
	}
	return fmt.Sprintf("The HelmRelease %s is returned to its prior state (%s).", o.app, o.capture.hrPrior)
}

// fluxNamespaceLabel is set by helm-controller, next to fluxNameLabel, on
// every object a HelmRelease applies: the HelmRelease's namespace.
const fluxNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"

// helmOwned: the live cluster is the object the application's HelmRelease
// applies, as the captured one was (helm-controller's labels name the same
// release). Only such a cluster is rolled over: it is the chart's
// rendering, with none of the tenant's data; anything else is left alone.
func helmOwned(o *observation) bool {
	want, got := o.capture.cluster.GetLabels(), o.cluster.GetLabels()
	name, ns := want[fluxNameLabel], want[fluxNamespaceLabel]
	return name == o.app && ns == o.job.Namespace && got[fluxNameLabel] == name && got[fluxNamespaceLabel] == ns
}

// rollOver deletes a cluster the HelmRelease applied after the purge (a
// human lifted the suspension, the chart re-rendered), so that this
// restore's cluster is re-created in its place: the tenant is never left
// with the chart's empty cluster. The HelmRelease was suspended again
// before (decideStep), and the delete confirms it live.
func rollOver(o *observation, what string) decision {
	msg := fmt.Sprintf("EtcdCluster %s (UID %s) %s; it was applied by HelmRelease %s (resumed by hand, or the chart re-rendered), which is suspended again: deleting that cluster to re-create this restore's in its place",
		clusterName, o.cluster.UID, what, o.app)
	if !o.cluster.GetDeletionTimestamp().IsZero() {
		return decision{state: stateWaitPurge, reason: backupsv1alpha1.ReasonReplacingRecreatedCluster, message: msg}
	}
	return decision{state: stateDeleteCluster, reason: backupsv1alpha1.ReasonReplacingRecreatedCluster, message: msg}
}
