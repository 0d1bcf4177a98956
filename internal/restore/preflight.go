package restore

import (
	"context"
	"errors"
	"fmt"

	"github.com/Masterminds/semver/v3"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// appKind is the application kind the Etcd driver restores.
const appKind = "Etcd"

// restoreSpaceFactor: the operator's restore agent needs about twice the
// snapshot's size free on the member volume (the download plus the
// restored data directory).
const restoreSpaceFactor = 2

// preflight returns a terminal reason and message when the RestoreJob must
// be refused before anything is changed, or "" when it may proceed. It
// checks the request, the Backup and its credentials; clusterPreflight
// checks the live cluster, which only means something once no other restore
// holds it. Both are pure.
func preflight(o *observation) (backupsv1alpha1.RestoreReason, string) {
	b := o.backup
	if o.optsErr != nil {
		return backupsv1alpha1.ReasonMalformedOptions, o.optsErr.Error()
	}
	if !b.DeletionTimestamp.IsZero() {
		return backupsv1alpha1.ReasonBackupNotReady, fmt.Sprintf(
			"Backup %s/%s is being deleted; its object may go at any moment, so it is not restored from", b.Namespace, b.Name)
	}
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady {
		return backupsv1alpha1.ReasonBackupNotReady, fmt.Sprintf(
			"Backup %s/%s is in phase %q, not Ready; restore a Ready Backup", b.Namespace, b.Name, textlimit.Value(string(b.Status.Phase)))
	}
	if msg := unsupportedTarget(o.job, b); msg != "" {
		return backupsv1alpha1.ReasonUnsupportedTarget, msg
	}
	if err := o.sourceErr; err != nil {
		if errors.Is(err, artifact.ErrNoObjectKey) {
			return backupsv1alpha1.ReasonNoObjectKey, textlimit.Value(err.Error()) + "; the snapshot object cannot be located"
		}
		return backupsv1alpha1.ReasonUnrecognisedArtifact, textlimit.Value(err.Error())
	}
	if !o.verdict.Verified && o.admission != "" {
		return backupsv1alpha1.ReasonUnverifiedBackup, fmt.Sprintf(
			"Backup %s/%s is not one this driver recorded (%s), and it cannot be restored here because %s; restore a Backup this driver took",
			b.Namespace, b.Name, o.verdict.Reason, o.admission)
	}
	// The application a verified Backup is of is signed (an edit makes it
	// unverified), and unsupportedTarget pins it to the one application
	// that owns the cluster; clusterPreflight checks that the cluster is
	// in fact managed by it (ApplicationMismatch).
	// Plain http only where the Backup's Etcd strategy allows it, as when
	// the destination was rendered; the address is checked here and again
	// on every connection.
	if o.endpointErr != nil {
		return backupsv1alpha1.ReasonEndpointRefused, "the Backup's S3 endpoint is refused: " + o.endpointErr.Error()
	}
	if o.credsErr != nil {
		return backupsv1alpha1.ReasonCredentialsUnavailable, o.credsErr.Error() +
			"; the restore reads the snapshot with these credentials (and so does the etcd-operator)"
	}
	if o.opts.BumpsRevision() && o.stagingImage == "" {
		return backupsv1alpha1.ReasonNoStagingImage, "raising the restored etcd's revision needs the staging Job's image, and the driver has none " +
			"(--staging-image, or $STAGING_IMAGE, which the chart sets): install the driver with it, or set spec.options.bumpRevision: false " +
			"to restore without it (Kubernetes clients of this etcd are then not told to relist)"
	}
	return "", ""
}

// clusterPreflight refuses a restore whose live cluster cannot be its model,
// cannot receive the snapshot, or would be destroyed with no copy.
func clusterPreflight(o *observation) (backupsv1alpha1.RestoreReason, string) {
	name := o.job.Namespace + "/" + clusterName
	if o.cluster == nil {
		if reason, msg := absentRefusal(o); reason != "" {
			return reason, msg
		}
	}
	// The live cluster, or for an absent one the capture it is re-created
	// from.
	c := clusterModel(o)
	if owner, ok := c.GetLabels()[fluxNameLabel]; ok && owner != o.app {
		return backupsv1alpha1.ReasonApplicationMismatch, fmt.Sprintf(
			"EtcdCluster %s is managed by HelmRelease %q, not by application %q that the Backup is of", name, textlimit.Value(owner), o.app)
	}
	if c.Spec.Replicas != nil && *c.Spec.Replicas == 0 {
		return backupsv1alpha1.ReasonClusterPaused, fmt.Sprintf(
			"EtcdCluster %s has replicas: 0 (paused); the operator never bootstraps a paused cluster, so the restore could not finish. Scale it up first", name)
	}
	if c.Spec.Storage != nil && c.Spec.Storage.Medium == "Memory" {
		return backupsv1alpha1.ReasonMemoryStorage, fmt.Sprintf(
			"EtcdCluster %s keeps its data in memory (storage.medium: Memory); the operator refuses to restore into it", name)
	}
	if msg := storageShortfall(o, c, o.backupSize()); msg != "" {
		return backupsv1alpha1.ReasonInsufficientStorage, msg
	}
	if msg := versionProblem(o, c); msg != "" {
		return backupsv1alpha1.ReasonEtcdVersionTooOld, msg
	}
	if o.cluster != nil && !available(o) && o.opts.TakesSafetySnapshot() {
		return backupsv1alpha1.ReasonClusterNotAvailable, fmt.Sprintf(
			"EtcdCluster %s is not Available (%s), so no safety snapshot of it can be taken and a failed restore could not be undone; "+
				"to restore without a copy of the current data, set spec.options.safetySnapshot: false", name, memberSummary(c))
	}
	return "", ""
}

// backupSize is the snapshot's recorded size, or 0 when not recorded.
func (o *observation) backupSize() int64 {
	if a := o.backup.Status.Artifact; a != nil {
		return a.SizeBytes
	}
	return 0
}

// storageShortfall says why the member volume of c cannot hold a restore
// of a snapshot of size bytes, or "" (also when either size is unknown).
func storageShortfall(o *observation, c *etcdv1alpha2.EtcdCluster, size int64) string {
	if size <= 0 || c == nil || c.Spec.Storage == nil || c.Spec.Storage.Size == nil {
		return ""
	}
	need := resource.NewQuantity(size*restoreSpaceFactor, resource.BinarySI)
	if c.Spec.Storage.Size.Cmp(*need) >= 0 {
		return ""
	}
	return fmt.Sprintf("the snapshot is %d bytes and the restore needs %d× that free on each member's volume, but EtcdCluster %s/%s has storage.size %s; grow storage.size to at least %s first",
		size, restoreSpaceFactor, o.job.Namespace, clusterName, c.Spec.Storage.Size.String(), need.String())
}

// versionProblem refuses a snapshot taken from a newer etcd than the
// target runs; unknown versions (peer Backups record none) pass.
func versionProblem(o *observation, c *etcdv1alpha2.EtcdCluster) string {
	recorded := o.verdict.Facts.EtcdVersion
	if !o.verdict.Verified || recorded == "" || c.Spec.Version == "" {
		return ""
	}
	from, err1 := semver.NewVersion(recorded)
	to, err2 := semver.NewVersion(c.Spec.Version)
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("cannot compare the snapshot's etcd version %q with the cluster's %q", textlimit.Value(recorded), textlimit.Value(c.Spec.Version))
	}
	if from.GreaterThan(to) {
		return fmt.Sprintf("the snapshot was taken from etcd %s but EtcdCluster %s/%s runs %s, which cannot read it; upgrade the cluster's version first",
			from, o.job.Namespace, clusterName, to)
	}
	return ""
}

// unsupportedTarget explains why the job's target is not the Backup's own
// Etcd application (the driver restores in place only), or returns "".
func unsupportedTarget(rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup) string {
	app := backupsv1alpha1.NormalizeApplicationRef(b.Spec.ApplicationRef)
	if app.Kind != appKind || *app.APIGroup != backupsv1alpha1.DefaultApplicationAPIGroup {
		return fmt.Sprintf("Backup %s/%s is of application %s/%s; the Etcd driver restores only %s/%s applications",
			b.Namespace, b.Name, textlimit.Value(*app.APIGroup), textlimit.Value(app.Kind), backupsv1alpha1.DefaultApplicationAPIGroup, appKind)
	}
	if app.Name != applicationName {
		return fmt.Sprintf("Backup %s/%s is of application %q, but the Etcd application that owns EtcdCluster %s is always named %q (the chart pins it)",
			b.Namespace, b.Name, textlimit.Value(app.Name), clusterName, applicationName)
	}
	t := rj.Spec.TargetApplicationRef
	if t == nil {
		return ""
	}
	target := backupsv1alpha1.NormalizeApplicationRef(*t)
	if target.Name != app.Name || target.Kind != app.Kind || *target.APIGroup != *app.APIGroup {
		return fmt.Sprintf("spec.targetApplicationRef is %s/%s %s but the Backup is of %s/%s %s: the Etcd driver restores in place only (no to-copy restore); remove targetApplicationRef or point it at the Backup's application",
			textlimit.Value(*target.APIGroup), textlimit.Value(target.Kind), textlimit.Value(target.Name), *app.APIGroup, app.Kind, app.Name)
	}
	return ""
}

// A restore to a point (spec.options.pointInTime) is the restore of a
// base Backup that internal/pointintime chooses and pins on the job
// (Resolve) before the claim, through the one restore path, with the
// staging step replaying the base's chain to the point. The glue here:
// the base stands in for spec.backupRef's Backup until the capture, which
// freezes a copy of the pin with the source (pointintime.CaptureKey) for
// the staging.

// pointState is a restore to a point's target and its base.
type pointState struct {
	target changelog.Target
	res    pointintime.Resolution
}

// observePoint resolves the base of a job asking for a point, whose
// spec.backupRef names ref; the base then stands in for ref.
func (r *Reconciler) observePoint(ctx context.Context, o *observation, ref *backupsv1alpha1.Backup) error {
	t, ok := o.opts.Point()
	if !ok || o.optsErr != nil || !isEtcdStrategy(ref) || o.job.Status.Phase.IsTerminal() {
		return nil
	}
	started := o.job.Status.StartedAt != nil || o.holder.HeldBy(o.job)
	res, err := pointintime.Resolve(ctx, r.Reader, r.Keys, o.job, ref, o.opts.PointInTime, t, started)
	if err != nil {
		return err
	}
	o.point = &pointState{target: t, res: res}
	if res.Base != nil {
		o.backup = res.Base
	}
	return nil
}

// decidePoint returns done when the job asks for no point or its base is
// pinned; else the refusal, or (before the claim) the pin.
func decidePoint(o *observation, claimed bool) (decision, bool) {
	p := o.point
	switch {
	case p == nil:
		return decision{}, true
	case errors.Is(p.res.Refusal, pointintime.ErrNoBase):
		return failure(o, backupsv1alpha1.ReasonNoBaseAtPoint, fmt.Sprintf("no restore to %s: %v", p.target, p.res.Refusal)), false
	case p.res.Refusal != nil:
		return failure(o, backupsv1alpha1.ReasonPointBaseLost, p.res.Refusal.Error()), false
	case !p.res.Pinned && claimed:
		return failure(o, backupsv1alpha1.ReasonPointBaseLost, "the base of the restore to a point was never pinned"), false
	case !p.res.Pinned:
		return decision{state: statePinBase, reason: backupsv1alpha1.ReasonPointBaseChosen, message: pointintime.Message(p.target, p.res.Pin)}, false
	}
	return decision{}, true
}

// pinBase writes the base's pin on the job (optimistic lock: a second
// choice on a stale view fails and is looked at again).
func (r *Reconciler) pinBase(ctx context.Context, o *observation, d decision) error {
	v, err := pointintime.EncodePin(ctx, r.Keys, o.job, o.point.res.Pin)
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(o.job.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if o.job.Annotations == nil {
		o.job.Annotations = map[string]string{}
	}
	o.job.Annotations[pointintime.PinAnnotation] = v
	if err := r.Client.Patch(ctx, o.job, patch); err != nil {
		return fmt.Errorf("pin the base of RestoreJob %s/%s: %w", o.job.Namespace, o.job.Name, err)
	}
	r.event(o, backupsv1alpha1.ReasonPointBaseChosen, d.message, false)
	logr.FromContextOrDiscard(ctx).Info("restore to a point: base pinned", "restoreJob", o.job.Namespace+"/"+o.job.Name,
		"point", o.point.target.String(), "base", o.point.res.Pin.Backup, "baseRevision", o.point.res.Pin.Base.Revision)
	return nil
}
