package ebdctl

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// restorePoint is restore --to: the point as given (what the RestoreJob's
// spec.options.pointInTime carries) and as the driver reads it.
type restorePoint struct {
	text   string
	target changelog.Target
}

// parsePoint reads --to with the one parser of spec.options.pointInTime;
// a time after now is refused (nothing is captured there yet).
func parsePoint(s string, now time.Time) (restorePoint, error) {
	t, err := restoreoptions.ParsePoint(s)
	if err != nil {
		return restorePoint{}, usagef("--to: %v", err)
	}
	if !t.Time.IsZero() && t.Time.After(now) {
		return restorePoint{}, usagef("--to %s is in the future (it is now %s): a restore goes back to a point already captured", s, now.UTC().Format(time.RFC3339))
	}
	return restorePoint{text: s, target: t}, nil
}

// String is the point for a person: the time, or "revision N".
func (p restorePoint) String() string {
	if p.target.Revision > 0 {
		return fmt.Sprintf("revision %d", p.target.Revision)
	}
	return p.text
}

// after reports whether b is known to hold the etcd as it was after p:
// taken after p's time, or its manifest at a revision above p's. The
// plugin reads what the Backup shows, for the user's eye; the driver
// chooses the base itself from what it signed.
func (p restorePoint) after(b *backupsv1alpha1.Backup) bool {
	if p.target.Revision > 0 {
		m := artifact.Manifest(b)
		return m != nil && m.Revision > p.target.Revision
	}
	return b.Spec.TakenAt.After(p.target.Time)
}

// atOrBefore reports whether b is known to hold the etcd at or before p
// (a Backup without a manifest has no revision for a chain to follow).
func (p restorePoint) atOrBefore(b *backupsv1alpha1.Backup) bool {
	m := artifact.Manifest(b)
	return m != nil && m.Revision > 0 && !p.after(b)
}

// restorable is whether a restore would start from b of app: good
// (goodbackup.Good, as the driver shows it verified) and not a safety
// Backup.
func restorable(b *backupsv1alpha1.Backup, app string) bool {
	return isApp(b.Spec.ApplicationRef, app) && goodbackup.Good(b, goodbackup.ShownVerified(b)) && b.Labels[backupsv1alpha1.SafetyBackupLabel] == ""
}

// baseFor is the newest good Backup of app at or before p: the base a
// restore to p starts from, as far as the plugin can see.
func baseFor(ctx context.Context, c client.Reader, ns, app string, p restorePoint) (*backupsv1alpha1.Backup, error) {
	var list backupsv1alpha1.BackupList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Backups: %w", err)
	}
	best := goodbackup.Newest(list.Items, func(b *backupsv1alpha1.Backup) bool { return restorable(b, app) && p.atOrBefore(b) })
	if best == nil {
		return nil, fmt.Errorf("application %s/%s has no good Backup at or before %s to restore from (a restore to a point replays the changes "+
			"captured after such a Backup); pick a later point, inside the window kubectl etcd-backup status shows", ns, app, p)
	}
	return best, nil
}

// checkFrom refuses a Backup named with --from that holds the etcd after
// p: a restore to p cannot start from it.
func checkFrom(b *backupsv1alpha1.Backup, p restorePoint) error {
	if !p.after(b) {
		return nil
	}
	return usagef("Backup %s/%s was taken after %s (taken %s); a restore to a point starts from a Backup at or before it: "+
		"name an earlier one, or leave out --from and the newest one at or before the point is named",
		b.Namespace, b.Name, p, b.Spec.TakenAt.UTC().Format(time.RFC3339))
}

// pointOf is the point job asks to restore to, for a person ("" for
// none, or options that do not parse).
func pointOf(job *backupsv1alpha1.RestoreJob) string {
	o, err := restoreoptions.Parse(job.Spec.Options)
	if err != nil {
		return ""
	}
	t, ok := o.Point()
	if !ok {
		return ""
	}
	return oneLine(restorePoint{text: o.PointInTime, target: t}.String())
}
