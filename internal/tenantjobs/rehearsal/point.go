package rehearsal

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
)

// A dry run to a point (spec.options.pointInTime) rehearses what a
// restore to that point would do. Its base is chosen by the restore's
// own rule (pointintime.Choose: the newest good Backup of the
// application at or before the point, whatever spec.backupRef names) and
// pinned, with the point, in the dry run's record when it starts
// (rehearsalrecord.Record.PointInTime, Base, BaseUID): a new Backup, a
// driver restart or an edit of the options never changes what it
// rehearses. Its Job stages the base and replays the base's chain up to
// the point (pointreplay) before it boots and counts, so the report says
// what a restore to the point would change. A chain that does not verify
// ends the dry run with the step's reason, as it would end the restore
// before anything was destroyed.

// pointRun is what a dry run to a point rehearses: the point as asked,
// the base Backup and what its Job replays.
type pointRun struct {
	text  string
	base  *backupsv1alpha1.Backup
	point pointreplay.Point
}

// pointOf is the point rj rehearses and its base (nil: rj rehearses its
// Backup b as it was). Once rj's record is written it is the record's
// (rec); before, it is what the options ask, with the base chosen now.
func (r *Reconciler) pointOf(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup,
	rec rehearsalrecord.Record, recorded bool) (*pointRun, *refusal, error) {
	text := rec.PointInTime
	if !recorded {
		o, err := restoreoptions.Parse(rj.Spec.Options)
		if err != nil {
			return nil, nil, nil
		}
		text = o.PointInTime
	}
	if text == "" {
		return nil, nil, nil
	}
	target, err := restoreoptions.ParsePoint(text)
	if err != nil {
		return nil, refuse(backupsv1alpha1.ReasonMalformedOptions, "%v", err), nil
	}
	candidates, ref, err := r.baseCandidates(ctx, rj, rec, recorded)
	if ref != nil || err != nil {
		return nil, ref, err
	}
	base, err := pointintime.Choose(ctx, r.Keys, candidates, b, target)
	switch {
	case errors.Is(err, pointintime.ErrNoBase) && recorded:
		return nil, refuse(backupsv1alpha1.ReasonNoBaseBackup, "the base Backup %s this dry run started from is no longer a base for %s: %v", rec.Base, text, err), nil
	case errors.Is(err, pointintime.ErrNoBase):
		return nil, refuse(backupsv1alpha1.ReasonNoBaseBackup, "%v", err), nil
	case err != nil:
		return nil, nil, err
	}
	return &pointRun{text: text, base: base.Backup, point: pointreplay.Point{Chain: base.Chain.Prefix, Base: base.Chain.Base, Target: target}}, nil, nil
}

// baseCandidates are the Backups a base may be chosen from: every Backup
// of rj's namespace before the dry run's record is written, and then the
// one it pinned only (gone or replaced: a refusal).
func (r *Reconciler) baseCandidates(ctx context.Context, rj *backupsv1alpha1.RestoreJob, rec rehearsalrecord.Record,
	recorded bool) ([]backupsv1alpha1.Backup, *refusal, error) {
	if !recorded {
		var list backupsv1alpha1.BackupList
		if err := r.Reader.List(ctx, &list, client.InNamespace(rj.Namespace)); err != nil {
			return nil, nil, fmt.Errorf("list Backups of %s: %w", rj.Namespace, err)
		}
		return list.Items, nil, nil
	}
	pinned := &backupsv1alpha1.Backup{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: rec.Base}, pinned)
	switch {
	case apierrors.IsNotFound(err) || err == nil && pinned.UID != rec.BaseUID:
		return nil, refuse(backupsv1alpha1.ReasonNoBaseBackup, "the base Backup %s this dry run to %s started from was deleted or replaced while it ran; create the dry run again",
			rec.Base, rec.PointInTime), nil
	case err != nil:
		return nil, nil, fmt.Errorf("read Backup %s/%s: %w", rj.Namespace, rec.Base, err)
	}
	return []backupsv1alpha1.Backup{*pinned}, nil, nil
}

// pin is rec with the point and base of p (p nil: rec as it is).
func pin(rec rehearsalrecord.Record, p *pointRun) rehearsalrecord.Record {
	if p != nil {
		rec.PointInTime, rec.Base, rec.BaseUID = p.text, p.base.Name, p.base.UID
	}
	return rec
}

// describe says what a dry run rehearses, for status and Events.
func describe(rj *backupsv1alpha1.RestoreJob, p *pointRun) string {
	if p == nil {
		return "Backup " + rj.Spec.BackupRef.Name
	}
	return fmt.Sprintf("a restore to %s (base Backup %s at revision %d and the changes captured after it)", p.text, p.base.Name, p.point.Base.Revision)
}

// toAPoint reports whether rj asks for a point (its options now).
func toAPoint(rj *backupsv1alpha1.RestoreJob) bool {
	o, err := restoreoptions.Parse(rj.Spec.Options)
	return err == nil && o.PointInTime != ""
}
