package rehearsal

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
)

// A dry run to a point (spec.options.pointInTime) rehearses what a
// restore to that point would do, with the restore's own rules: its base
// is chosen (pointintime.Choose: the newest good Backup of the
// application at or before the point, whatever spec.backupRef names) and
// pinned on the RestoreJob before the dry run starts
// (pointintime.Resolve, PinAnnotation), so neither a new Backup, a
// driver restart nor an edit of the options changes what it rehearses.
// Its Job stages the base replayed to the point (the staging step's
// pointreplay flags) before it boots and counts, so the report says what
// a restore to the point would change. A chain that does not verify ends
// the dry run with the step's reason, as it would end the restore before
// anything was destroyed.

// pointRun is what a dry run to a point rehearses: the point as asked,
// its base and its pin, and what its Job replays.
type pointRun struct {
	text  string
	res   pointintime.Resolution
	point pointreplay.Point
}

// pointOf is the point rj rehearses and its base (nil: rj rehearses its
// Backup b as it was): the pinned base once rj carries the pin, else the
// one chosen now, to be pinned (pin) before the dry run starts.
func (r *Reconciler) pointOf(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup) (*pointRun, *refusal, error) {
	o, err := restoreoptions.Parse(rj.Spec.Options)
	if (err != nil || o.PointInTime == "") && rj.Annotations[pointintime.PinAnnotation] == "" {
		return nil, nil, nil
	}
	// Options that no longer ask for the pinned point lose the pin
	// (Resolve): the dry run ends, it never moves.
	t, _ := o.Point()
	res, err := pointintime.Resolve(ctx, r.Reader, r.Keys, rj, b, o.PointInTime, t, started(rj))
	switch {
	case err != nil:
		return nil, nil, err
	case errors.Is(res.Refusal, pointintime.ErrNoBase):
		return nil, refuse(backupsv1alpha1.ReasonNoBaseAtPoint, "no dry run to %s: %v", o.PointInTime, res.Refusal), nil
	case res.Refusal != nil:
		return nil, refuse(backupsv1alpha1.ReasonPointBaseLost, "%v; create the dry run again", res.Refusal), nil
	}
	return &pointRun{text: o.PointInTime, res: res, point: pointreplay.Point{Chain: res.Pin.Chain, Base: res.Pin.Base, Target: t}}, nil, nil
}

// pin writes the base chosen for rj on it (optimistic lock: a choice on
// a stale view fails and is made again); its update wakes rj.
func (r *Reconciler) pin(ctx context.Context, rj *backupsv1alpha1.RestoreJob, p *pointRun) error {
	v, err := pointintime.EncodePin(ctx, r.Keys, rj, p.res.Pin)
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(rj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if rj.Annotations == nil {
		rj.Annotations = map[string]string{}
	}
	rj.Annotations[pointintime.PinAnnotation] = v
	if err := r.Client.Patch(ctx, rj, patch); err != nil {
		return fmt.Errorf("pin the base of dry run %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	r.event(rj, backupsv1alpha1.ReasonPointBaseChosen, "chose "+describe(rj, p), false)
	return nil
}

// describe says what a dry run rehearses, for status and Events.
func describe(rj *backupsv1alpha1.RestoreJob, p *pointRun) string {
	if p == nil {
		return "Backup " + rj.Spec.BackupRef.Name
	}
	return fmt.Sprintf("a restore to %s (base Backup %s at revision %d and the changes captured after it)", p.text, p.res.Pin.Backup, p.res.Pin.Base.Revision)
}

// toAPoint reports whether rj asks for a point (its options now).
func toAPoint(rj *backupsv1alpha1.RestoreJob) bool {
	o, err := restoreoptions.Parse(rj.Spec.Options)
	return err == nil && o.PointInTime != ""
}
