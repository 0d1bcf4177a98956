package restore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
)

// A restore to a point (spec.options.pointInTime) is the restore of a
// base Backup that internal/pointintime chooses and pins on the job
// (Resolve) before the claim, through the one restore path, with the
// staging step replaying the base's chain to the point. The glue here:
// the base stands in for spec.backupRef's Backup until the capture, which
// freezes the pin with the source (captureKeyPoint) for the staging.

// captureKeyPoint is the capture's copy of the pin (pointintime.Pin).
const captureKeyPoint = "point-in-time.yaml"

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
		return decision{state: statePinBase, reason: backupsv1alpha1.ReasonPointBaseChosen, message: pointMessage(p.target, p.res.Pin)}, false
	}
	return decision{}, true
}

// pointMessage names the base and the point.
func pointMessage(t changelog.Target, pin pointintime.Pin) string {
	return fmt.Sprintf("restoring to %s: base Backup %s (revision %d) and its changes up to the point (%s)", t, pin.Backup, pin.Base.Revision, pin.Chain)
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

// capturePoint is the pin as the capture keeps it ("" for no point).
func capturePoint(o *observation) (string, error) {
	if o.point == nil || !o.point.res.Pinned {
		return "", nil
	}
	pin := o.point.res.Pin
	pin.Signature = ""
	b, err := yaml.Marshal(pin)
	return string(b), err
}

// parseCapturePoint reads the capture's pin, nil when it has none.
func parseCapturePoint(raw string) (*pointintime.Pin, error) {
	if raw == "" {
		return nil, nil
	}
	var pin pointintime.Pin
	if err := yaml.UnmarshalStrict([]byte(raw), &pin); err != nil {
		return nil, fmt.Errorf("key %s: %w", captureKeyPoint, err)
	}
	if _, err := restoreoptions.ParsePoint(pin.Point); err != nil {
		return nil, fmt.Errorf("key %s: %w", captureKeyPoint, err)
	}
	return &pin, nil
}

// stagingPoint is the point the staging replays to, from the capture.
func stagingPoint(c *capture) *pointreplay.Point {
	if c.point == nil {
		return nil
	}
	t, _ := restoreoptions.ParsePoint(c.point.Point)
	return &pointreplay.Point{Chain: c.point.Chain, Base: c.point.Base, Target: t}
}
