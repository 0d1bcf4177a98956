package keeper

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plan"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// ReasonAnnotation, on a BackupJob the capture's keeper made, says why.
const ReasonAnnotation = "etcd-backup-driver.cozystack.io/reason"

// roll moves rec onto a chain on base: its spec names base, and what the
// capture reported of the previous chain is cleared. The window goes on
// from where it began when the previous chain ran without a gap up to
// base's revision (a restore to any point in between has a chain that
// reaches it); otherwise it begins again at base.
func (r *Reconciler) roll(ctx context.Context, rec *driverv1alpha1.CaptureProgress, base *baseBackup) error {
	st := rec.Status
	continuous := st.Gap == nil && st.BaseRevision == rec.Spec.BaseRevision && st.NewestRevision >= base.Revision && st.Window != nil
	rec.Spec.BaseBackup, rec.Spec.BaseRevision = base.Backup.Name, base.Revision
	if rec.Annotations == nil {
		rec.Annotations = map[string]string{}
	}
	rec.Annotations[ChainStartedAnnotation] = r.now().UTC().Format(time.RFC3339)
	if err := r.Client.Update(ctx, rec); err != nil {
		return fmt.Errorf("move CaptureProgress %s/%s onto Backup %s: %w", rec.Namespace, rec.Name, base.Backup.Name, err)
	}
	before := rec.DeepCopy()
	w := rec.Status.Window
	if !continuous || w == nil {
		w = &driverv1alpha1.CaptureWindow{From: base.Backup.Spec.TakenAt, FromBackup: base.Backup.Name}
	}
	rec.Status = driverv1alpha1.CaptureProgressStatus{Window: w, Conditions: rec.Status.Conditions}
	log.FromContext(ctx).Info("a newer good Backup starts a new chain", "record", rec.Name, "base", base.Backup.Name, "revision", base.Revision,
		"windowContinues", continuous)
	return r.Client.Status().Patch(ctx, rec, client.MergeFrom(before))
}

// gapped reports whether the capture said its current chain ended.
func gapped(rec *driverv1alpha1.CaptureProgress) bool {
	return rec.Status.Gap != nil && rec.Status.BaseRevision == rec.Spec.BaseRevision
}

// answerGap, once per chain: the capture on the ended chain is stopped
// (started again it would only find the chain ended), a Warning Event
// says where the window ends, and a BackupJob for the Plan takes a new
// base at once (named as the scheduler names its runs, so Cozystack's
// and the driver's retention count it as the Plan's). The record's
// annotation (which the capture's token cannot write) keeps it to one
// BackupJob per chain however the status is written.
func (r *Reconciler) answerGap(ctx context.Context, p *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress) error {
	answered := strconv.FormatInt(rec.Spec.BaseRevision, 10)
	if rec.Annotations[GapBaseAnnotation] == answered {
		return nil
	}
	if err := r.removeWorkload(ctx, rec); err != nil {
		return err
	}
	gap := rec.Status.Gap
	job := plan.BackupJobFor(p, cronschedule.RunName(p.Name, gap.At.Time))
	job.Annotations = map[string]string{ReasonAnnotation: "a new base after the point-in-time capture's gap (" + string(gap.Reason) + ")"}
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the new base BackupJob %s/%s: %w", p.Namespace, job.Name, err)
	}
	before := rec.DeepCopy()
	if rec.Annotations == nil {
		rec.Annotations = map[string]string{}
	}
	rec.Annotations[GapBaseAnnotation] = answered
	if err := r.Client.Patch(ctx, rec, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("record the answered gap on CaptureProgress %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	msg := fmt.Sprintf("the capture's chain after Backup %s ended at revision %d (%s: %s): the recoverable window ends there; BackupJob %s takes a new base now",
		rec.Spec.BaseBackup, rec.Status.NewestRevision, gap.Reason, gap.Message, job.Name)
	log.FromContext(ctx).Info("capture gap", "record", rec.Name, "reason", gap.Reason, "backupJob", job.Name)
	r.Recorder.Eventf(p, job, corev1.EventTypeWarning, driverv1alpha1.CaptureReasonGap, "Capture", "%s", textlimit.Note(msg))
	r.Recorder.Eventf(rec, job, corev1.EventTypeWarning, driverv1alpha1.CaptureReasonGap, "Capture", "%s", textlimit.Note(msg))
	return nil
}

// show writes the window and the Capturing condition the capture's
// reports say, sets the lag metric, and asks to be called again when the
// lag would pass the admin's maxLagSeconds (a timer, not a read: the
// capture's next report wakes the Plan before that if it is on time).
func (r *Reconciler) show(ctx context.Context, p *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress, sp strategypolicy.Policy) (ctrl.Result, error) {
	now := r.now()
	before := rec.DeepCopy()
	st := &rec.Status
	if st.Window == nil {
		// Written by the driver when the chain started; a status written
		// without it (the capture's token can write the whole status)
		// gets the latest start the driver can vouch for.
		st.Window = &driverv1alpha1.CaptureWindow{From: rec.CreationTimestamp, FromBackup: rec.Spec.BaseBackup}
	}
	if err := r.keepStart(ctx, p, st.Window); err != nil {
		return ctrl.Result{}, err
	}
	current := st.BaseRevision == rec.Spec.BaseRevision && st.UpdatedAt != nil
	if st.Window != nil && current {
		if d := durable(st); d != nil {
			if d.After(now) {
				d = &metav1.MicroTime{Time: now}
			}
			st.Window.To = d
		}
	}
	maxLag := sp.PointInTime.MaxLag
	// The lag counts from the window's end: nothing later is durable.
	since := reference(st.Window, rec)
	// Whether it is too late: from the window's end while the chain
	// reports, from the chain's start before its first report.
	due := since
	status, reason, msg := metav1.ConditionTrue, driverv1alpha1.CaptureReasonFollowing, ""
	switch {
	case gapped(rec):
		status, reason = metav1.ConditionFalse, driverv1alpha1.CaptureReasonGap
		msg = fmt.Sprintf("the chain after Backup %s ended at revision %d (%s): the window ends at %s; a new base Backup is being taken",
			rec.Spec.BaseBackup, st.NewestRevision, st.Gap.Reason, windowEnd(st.Window))
	case !current:
		status, reason = metav1.ConditionFalse, driverv1alpha1.CaptureReasonStarting
		msg = fmt.Sprintf("the capture after Backup %s (revision %d) has not reported yet", rec.Spec.BaseBackup, rec.Spec.BaseRevision)
		due = chainStarted(rec)
	default:
		msg = fmt.Sprintf("recoverable from %s (Backup %s) to %s", st.Window.From.UTC().Format(time.RFC3339), st.Window.FromBackup, windowEnd(st.Window))
	}
	if reason != driverv1alpha1.CaptureReasonGap && now.Sub(due) > maxLag {
		status, reason = metav1.ConditionFalse, driverv1alpha1.CaptureReasonStalled
		msg = fmt.Sprintf("nothing new made durable for %s, more than the %s the platform allows (spec.pointInTime.maxLagSeconds): %s",
			now.Sub(due).Truncate(time.Second), maxLag, msg)
	}
	lags.set(p.Namespace, p.Name, since, maxLag)
	if err := r.setCondition(ctx, p, rec, before, status, reason, msg); err != nil {
		return r.retry(ctx, err)
	}
	if status == metav1.ConditionFalse && reason != driverv1alpha1.CaptureReasonStarting {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(due.Add(maxLag).Sub(now), 0) + time.Second}, nil
}

// refuse says on the record that the capture cannot run, with a Warning
// Event when that is news; the lag goes on counting from the window's end.
func (r *Reconciler) refuse(ctx context.Context, p *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress, sp strategypolicy.Policy, msg string) error {
	lags.set(p.Namespace, p.Name, reference(rec.Status.Window, rec), sp.PointInTime.MaxLag)
	return r.setCondition(ctx, p, rec, rec.DeepCopy(), metav1.ConditionFalse, driverv1alpha1.CaptureReasonRefused, msg)
}

// setCondition writes rec's status (the window as changed since before,
// and the Capturing condition) when it changed; a Warning Event goes with
// each change to Stalled, Refused or BaseGone (the gap has its own).
func (r *Reconciler) setCondition(ctx context.Context, p *backupsv1alpha1.Plan, rec, before *driverv1alpha1.CaptureProgress,
	status metav1.ConditionStatus, reason, msg string) error {
	was := meta.FindStatusCondition(before.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	meta.SetStatusCondition(&rec.Status.Conditions, metav1.Condition{Type: driverv1alpha1.CaptureConditionCapturing, Status: status,
		Reason: reason, Message: textlimit.Message(msg), ObservedGeneration: rec.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	if equality.Semantic.DeepEqual(before.Status, rec.Status) {
		return nil
	}
	if (reason == driverv1alpha1.CaptureReasonStalled || reason == driverv1alpha1.CaptureReasonRefused || reason == driverv1alpha1.CaptureReasonBaseGone) &&
		(was == nil || was.Reason != reason) {
		r.Recorder.Eventf(p, rec, corev1.EventTypeWarning, reason, "Capture", "%s", textlimit.Note(msg))
	}
	if err := r.Client.Status().Patch(ctx, rec, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write the status of CaptureProgress %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	return nil
}

// durable is the newest point the capture made durable: its newest
// change's time or, later, when it last saw nothing more to receive.
func durable(st *driverv1alpha1.CaptureProgressStatus) *metav1.MicroTime {
	d := st.NewestTime
	if c := st.ConfirmedAt; c != nil && (d == nil || c.After(d.Time)) {
		d = c
	}
	return d
}

// reference is the time the lag is counted from: the window's end, or
// its start (the base Backup) before the capture made anything durable,
// or the record's creation.
func reference(w *driverv1alpha1.CaptureWindow, rec *driverv1alpha1.CaptureProgress) time.Time {
	switch {
	case w != nil && w.To != nil:
		return w.To.Time
	case w != nil:
		return w.From.Time
	}
	return rec.CreationTimestamp.Time
}

// chainStarted is when the driver started rec's current chain (its
// annotation; the record's creation when unreadable).
func chainStarted(rec *driverv1alpha1.CaptureProgress) time.Time {
	if t, err := time.Parse(time.RFC3339, rec.Annotations[ChainStartedAnnotation]); err == nil {
		return t
	}
	return rec.CreationTimestamp.Time
}

func windowEnd(w *driverv1alpha1.CaptureWindow) string {
	if w == nil || w.To == nil {
		return "its base Backup (nothing captured yet)"
	}
	return w.To.UTC().Format(time.RFC3339Nano)
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
