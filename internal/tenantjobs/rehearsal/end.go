package rehearsal

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// succeed reports a rehearsal that booted and read back: the report goes
// into the record, its summary into the status.
func (r *Reconciler) succeed(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup,
	rec rehearsalrecord.Record, rep step.Report, pt *pointRun) error {
	c, _, counted := r.census(rj)
	var now *driverv1alpha1.BackupManifest
	live := rec.LiveUnread
	switch {
	case rec.RevisionBefore == 0:
		if live == "" {
			live = "it was not readable when the rehearsal started"
		}
	case counted:
		now = &c.Now
	default:
		// A restarted driver lost the counts it read at the start, and
		// does not count the live cluster a second time.
		live = countsLost
	}
	report := newReport(now, rec.RevisionBefore, rep)
	report.KeysBefore = rec.KeysBefore
	rec.Report = &report
	msg := summary(report, live)
	if pt != nil {
		msg = "rehearsed " + describe(rj, pt) + ": " + msg
	}
	return r.finish(ctx, rj, b, &rec, true, backupsv1alpha1.ReasonRehearsed, msg)
}

// fail ends a dry run: the refusal's reason and message, a Warning Event,
// and the Backup's record when it is the driver's. rec is the dry run's
// record once it started (nil before).
func (r *Reconciler) fail(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup,
	rec *rehearsalrecord.Record, ref *refusal) error {
	return r.finish(ctx, rj, b, rec, false, ref.reason, ref.message)
}

// finish records the outcome on the Backup
// (status.underlyingResources.lastRehearsal) and the report in the
// RestoreJob's record, and then ends the RestoreJob; a crash in between
// records them again.
func (r *Reconciler) finish(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup,
	rec *rehearsalrecord.Record, ok bool, reason backupsv1alpha1.RestoreReason, msg string) error {
	msg = textlimit.Cut(msg, 1024)
	now := metav1.NewTime(r.now())
	if b != nil && strategyv1alpha1.IsEtcd(b.Spec.StrategyRef) {
		if err := r.recordOnBackup(ctx, b, &driverv1alpha1.RehearsalRecord{RestoreJob: rj.Name, PointInTime: pointText(rj),
			Succeeded: ok, CompletedAt: now, Message: msg}); err != nil {
			return err
		}
	}
	if rec != nil && rec.Report != nil {
		if err := r.writeRecord(ctx, rj, *rec); err != nil {
			return err
		}
	}
	base := rj.DeepCopy()
	rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseFailed
	if ok {
		rj.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
	}
	if rj.Status.StartedAt == nil {
		rj.Status.StartedAt = &now
	}
	rj.Status.CompletedAt = &now
	rj.Status.Message = msg
	meta.SetStatusCondition(&rj.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.ConditionReady, Status: condition(ok),
		Reason: string(reason), Message: textlimit.Message(msg), ObservedGeneration: rj.Generation})
	if err := r.Client.Status().Patch(ctx, rj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the rehearsal's end on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	// What this process keeps of the dry run (its census, its Job) is
	// forgotten once a reconcile reads it ended: one from a cache that
	// does not show the end yet still finds it, and counts nothing again.
	r.event(rj, reason, msg, !ok)
	return nil
}

// pointText is the point rj rehearses, as its options ask ("" for
// none): for the Backup's record, which people read.
func pointText(rj *backupsv1alpha1.RestoreJob) string {
	o, _ := restoreoptions.Parse(rj.Spec.Options)
	return o.PointInTime
}
