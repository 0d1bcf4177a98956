package plankeeper

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

// drillHistory is how many finished drill RestoreJobs a Plan keeps.
const drillHistory = 3

// DrillName is the name of the dry-run RestoreJob the Plan (namespace,
// name, uid) starts for the drill scheduled at scheduled: deterministic, so
// a crash or a second reconcile finds it instead of making another, and
// keyed with the driver's provenance key, which tenants do not hold, so it
// is the proof that the driver made it. Labels, annotations and a
// controller reference to the Plan are all things a tenant can copy onto a
// RestoreJob of its own; a name it cannot compute is not. A key rotation
// while a drill runs only leaves that drill unrecorded (the next one is).
func DrillName(key []byte, namespace, plan string, uid types.UID, scheduled time.Time) string {
	h := hmac.New(sha256.New, key)
	fmt.Fprintf(h, "etcd-backup-driver drill\n%s\n%s\n%s\n%d", namespace, plan, uid, scheduled.Unix())
	mac := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:5]))
	return cronschedule.RunName(plan+"-drill-"+mac, scheduled)
}

// drillName is DrillName under the active provenance key.
func (r *Reconciler) drillName(ctx context.Context, plan *backupsv1alpha1.Plan, scheduled time.Time) (string, error) {
	_, key, err := r.Keys.Active(ctx)
	if err != nil {
		return "", fmt.Errorf("name the drill of Plan %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	return DrillName(key, plan.Namespace, plan.Name, plan.UID, scheduled), nil
}

// drill runs the Plan's rehearsal schedule: it records drills that ended,
// starts the one due at now, prunes old ones and judges whether a
// rehearsal is overdue. It returns when it must look again (zero: only
// when something changes).
func (r *Reconciler) drill(ctx context.Context, w *work, obs *observed, now time.Time) (time.Time, error) {
	plan, d := w.plan, w.policy.Drill
	if d == nil {
		forgetDrillMetrics(plan.Namespace, plan.Name)
		w.remove(backupsv1alpha1.PlanConditionRehearsalOverdue)
		return time.Time{}, nil
	}
	drills, err := r.ownDrills(ctx, plan, obs.restores)
	if err != nil {
		return time.Time{}, err
	}
	recoverLastDrill(&w.rec, drills)
	r.recordEnded(w, drills)

	var next time.Time
	var startErr error
	invalid := ""
	if d.Schedule == nil {
		invalid = "the drill schedule (annotation " + planpolicy.DrillSchedule + ") cannot be used; no drills run until it is fixed"
	} else {
		next, startErr = r.runDueDrill(ctx, w, obs, drills, d.Schedule, now)
	}
	pruneErr := r.pruneDrills(ctx, &w.stored, drills)
	if w.policy.Scheduler.Suspend {
		// Asked for, as the backup alerts leave suspended Plans alone;
		// on resume the window counts from the last success again.
		forgetDrillMetrics(plan.Namespace, plan.Name)
		w.remove(backupsv1alpha1.PlanConditionRehearsalOverdue)
		return next, errors.Join(startErr, pruneErr)
	}
	flip := r.judgeOverdue(w, d.Window, now, invalid)
	return earliest(next, flip), errors.Join(startErr, pruneErr)
}

// ownDrills picks the dry-run RestoreJobs the Plan started from restores
// (all RestoreJobs in its namespace, as observe listed them).
func (r *Reconciler) ownDrills(ctx context.Context, plan *backupsv1alpha1.Plan, restores []backupsv1alpha1.RestoreJob) ([]backupsv1alpha1.RestoreJob, error) {
	var out []backupsv1alpha1.RestoreJob
	for _, rj := range restores {
		at, ok := drillScheduledAt(&rj)
		// The label, the annotation and the controller reference are hints
		// anyone can copy; the keyed name says the driver made it.
		if !ok || rj.Labels[backupsv1alpha1.DrillLabel] != "true" {
			continue
		}
		name, err := r.drillName(ctx, plan, at)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOf(&rj); rj.Name == name && ref != nil && ref.UID == plan.UID {
			out = append(out, rj)
		}
	}
	return out, nil
}

// runDueDrill starts or skips the drill due at now and returns the next
// drill time.
func (r *Reconciler) runDueDrill(ctx context.Context, w *work, obs *observed, drills []backupsv1alpha1.RestoreJob, sched cronschedule.Schedule, now time.Time) (time.Time, error) {
	plan, rec := w.plan, &w.rec
	runs := cronschedule.DueRuns(sched, lastDrillConsidered(plan, rec, drills), now, w.policy.Scheduler.StartingDeadline)
	if n := runs.Missed + runs.Superseded; n > 0 {
		// A missed drill is only a later one; the next due one starts.
		skipDrill(rec, runs.LastSkipped)
	}
	if runs.Due.IsZero() {
		return runs.Next, nil
	}
	if w.policy.Scheduler.Suspend {
		skipDrill(rec, runs.Due)
		return runs.Next, nil
	}
	dueName, err := r.drillName(ctx, plan, runs.Due)
	if err != nil {
		return runs.Next, err
	}
	for i := range drills {
		if !drills[i].Status.Phase.IsTerminal() && drills[i].Name != dueName {
			skipDrill(rec, runs.Due)
			r.Recorder.Eventf(plan, &drills[i], corev1.EventTypeWarning, backupsv1alpha1.PlanReasonConcurrencyForbidden, "Drill",
				"skipped the drill due at %s: drill %s has not finished", runs.Due.UTC().Format(time.RFC3339), drills[i].Name)
			return runs.Next, nil
		}
	}
	backup := newestGood(obs.backups)
	if backup == nil {
		skipDrill(rec, runs.Due)
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonNoBackupToRehearse, "Drill",
			"skipped the drill due at %s: the Plan has no good Backup to rehearse (Ready, Verified, not failed inspection, no content drop)",
			runs.Due.UTC().Format(time.RFC3339))
		return runs.Next, nil
	}
	return runs.Next, r.startDrill(ctx, w, backup, dueName, runs.Due)
}

// startDrill creates the dry-run RestoreJob of backup for the drill due at
// due, or finds the one an earlier reconcile created.
func (r *Reconciler) startDrill(ctx context.Context, w *work, backup *backupsv1alpha1.Backup, name string, due time.Time) error {
	plan := w.plan
	rj := newDrill(plan, backup, name, due)
	if err := controllerutil.SetControllerReference(plan, rj, r.Client.Scheme()); err != nil {
		return fmt.Errorf("own drill RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	err := r.Client.Create(ctx, rj)
	if apierrors.IsAlreadyExists(err) {
		var existing backupsv1alpha1.RestoreJob
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(rj), &existing); err != nil {
			return fmt.Errorf("read RestoreJob %s/%s after AlreadyExists: %w", rj.Namespace, rj.Name, err)
		}
		if ref := metav1.GetControllerOf(&existing); ref != nil && ref.UID == plan.UID {
			w.rec.LastDrillTime = &metav1.Time{Time: due}
			return nil
		}
		skipDrill(&w.rec, due)
		r.Recorder.Eventf(plan, nil, corev1.EventTypeWarning, backupsv1alpha1.PlanReasonNameConflict, "Drill",
			"skipped the drill due at %s: RestoreJob %s exists and does not belong to this Plan", due.UTC().Format(time.RFC3339), rj.Name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("create drill RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	log.FromContext(ctx).Info("started drill", "restoreJob", rj.Name, "backup", backup.Name, "scheduledAt", due)
	w.rec.LastDrillTime = &metav1.Time{Time: due}
	r.Recorder.Eventf(plan, rj, corev1.EventTypeNormal, backupsv1alpha1.PlanReasonRehearsalStarted, "Drill",
		"created dry-run RestoreJob %s rehearsing Backup %s for the drill due at %s", rj.Name, backup.Name, due.UTC().Format(time.RFC3339))
	return nil
}

// newDrill is the dry-run RestoreJob name of backup for plan's drill at due.
func newDrill(plan *backupsv1alpha1.Plan, backup *backupsv1alpha1.Backup, name string, due time.Time) *backupsv1alpha1.RestoreJob {
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	return &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: plan.Namespace,
			Name:      name,
			Labels: map[string]string{
				backupsv1alpha1.PlanNameLabel:        names.LabelValue(plan.Name),
				backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app.Name),
				backupsv1alpha1.DrillLabel:           "true",
			},
			Annotations: map[string]string{backupsv1alpha1.ScheduledAtAnnotation: due.UTC().Format(time.RFC3339)},
		},
		Spec: backupsv1alpha1.RestoreJobSpec{
			BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name},
			Options:   restoreoptions.DryRunOptions(),
		},
	}
}

// skipDrill remembers that the drill due at t did not start.
func skipDrill(rec *planrecord.Record, t time.Time) {
	if cur := rec.LastDrillSkippedTime; cur == nil || t.After(cur.Time) {
		rec.LastDrillSkippedTime = &metav1.Time{Time: t}
	}
}

// recoverLastDrill moves the record's last drill time up to the newest
// run of the Plan's own drills, repairing a lost (or ignored) record.
func recoverLastDrill(rec *planrecord.Record, drills []backupsv1alpha1.RestoreJob) {
	for i := range drills {
		at, ok := drillScheduledAt(&drills[i])
		if ok && (rec.LastDrillTime == nil || at.After(rec.LastDrillTime.Time)) {
			rec.LastDrillTime = &metav1.Time{Time: at}
		}
	}
}

// drillScheduledAt is the run time a drill records.
func drillScheduledAt(rj *backupsv1alpha1.RestoreJob) (time.Time, bool) {
	v, ok := rj.Annotations[backupsv1alpha1.ScheduledAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339, v)
	return at, err == nil
}

// lastDrillConsidered is the newest drill time already started or skipped:
// the Plan's creation, its record, and the run times of its own drills (a
// lost record cannot make a drill happen twice).
func lastDrillConsidered(plan *backupsv1alpha1.Plan, rec *planrecord.Record, drills []backupsv1alpha1.RestoreJob) time.Time {
	t := plan.CreationTimestamp.Time
	for _, mt := range []*metav1.Time{rec.LastDrillTime, rec.LastDrillSkippedTime} {
		if mt != nil && mt.After(t) {
			t = mt.Time
		}
	}
	for i := range drills {
		if at, ok := drillScheduledAt(&drills[i]); ok && at.After(t) {
			t = at
		}
	}
	return t
}

// newestGood is the newest Backup a drill should rehearse: the newest
// good one (goodbackup.Good) among the Plan's provenance-verified
// backups, the driver's Verified condition on it True (a Backup the
// driver has not judged yet waits for the next drill).
func newestGood(backups []backupsv1alpha1.Backup) *backupsv1alpha1.Backup {
	return goodbackup.Newest(backups, func(b *backupsv1alpha1.Backup) bool {
		return goodbackup.Good(b, meta.IsStatusConditionTrue(b.Status.Conditions, backupsv1alpha1.BackupConditionVerified))
	})
}

// earliest is the earlier of two times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
