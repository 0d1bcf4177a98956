package restore

import (
	"errors"
	"fmt"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// appKind is the application kind the Etcd driver restores.
const appKind = "Etcd"

// preflight returns a terminal reason and message when the RestoreJob must
// be refused before anything is changed, or "" when it may proceed.
func preflight(o *observation) (backupsv1alpha1.RestoreReason, string) {
	b := o.backup
	if o.optsErr != nil {
		return backupsv1alpha1.ReasonMalformedOptions, o.optsErr.Error() + "."
	}
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady {
		return backupsv1alpha1.ReasonBackupNotReady, fmt.Sprintf(
			"Backup %s/%s is in phase %q, not Ready; restore a Ready Backup.", b.Namespace, b.Name, b.Status.Phase)
	}
	if msg := unsupportedTarget(o.job, b); msg != "" {
		return backupsv1alpha1.ReasonUnsupportedTarget, msg
	}
	if err := o.sourceErr; err != nil {
		if errors.Is(err, artifact.ErrNoObjectKey) {
			return backupsv1alpha1.ReasonNoObjectKey, err.Error() + "; the snapshot object cannot be located."
		}
		return backupsv1alpha1.ReasonUnrecognisedArtifact, err.Error() + "."
	}
	if o.cluster == nil {
		return backupsv1alpha1.ReasonSourceClusterNotFound, fmt.Sprintf(
			"EtcdCluster %s/%s does not exist, so there is no shape (version, size, TLS) to re-create it with; deploy the Etcd application %s first.",
			o.job.Namespace, clusterName, o.app)
	}
	if o.opts.SafetySnapshot != nil && *o.opts.SafetySnapshot && !available(o) {
		return backupsv1alpha1.ReasonClusterNotAvailable, fmt.Sprintf(
			"spec.options.safetySnapshot is true but EtcdCluster %s/%s is not Available, so no snapshot can be taken; set safetySnapshot to false to restore without one.",
			o.job.Namespace, clusterName)
	}
	return "", ""
}

// unsupportedTarget explains why the job's target is not the Backup's own
// Etcd application (the driver restores in place only), or returns "".
func unsupportedTarget(rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup) string {
	app := backupsv1alpha1.NormalizeApplicationRef(b.Spec.ApplicationRef)
	if app.Kind != appKind || *app.APIGroup != backupsv1alpha1.DefaultApplicationAPIGroup {
		return fmt.Sprintf("Backup %s/%s is of application %s/%s; the Etcd driver restores only %s/%s applications.",
			b.Namespace, b.Name, *app.APIGroup, app.Kind, backupsv1alpha1.DefaultApplicationAPIGroup, appKind)
	}
	t := rj.Spec.TargetApplicationRef
	if t == nil {
		return ""
	}
	target := backupsv1alpha1.NormalizeApplicationRef(*t)
	if target.Name != app.Name || target.Kind != app.Kind || *target.APIGroup != *app.APIGroup {
		return fmt.Sprintf("spec.targetApplicationRef is %s/%s %s but the Backup is of %s/%s %s: the Etcd driver restores in place only (no to-copy restore); remove targetApplicationRef or point it at the Backup's application.",
			*target.APIGroup, target.Kind, target.Name, *app.APIGroup, app.Kind, app.Name)
	}
	return ""
}
