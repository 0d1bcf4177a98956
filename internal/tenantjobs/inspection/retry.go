package inspection

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// The inspector failing is not the Backup failing. Only evidence about the
// bytes condemns a Backup (InspectionFailed or InspectionRefused, which
// goodbackup reads as "not good"): the object's size or sha256 is not the
// recorded one, or etcd's integrity trailer or its pages are invalid.
// Everything else is the inspector's own failure: its Pod killed (out of
// memory) or out of time, S3 errors (unreachable, keys refused, no such
// object), arguments the step refuses or a Job an earlier release built
// (an upgrade changes the image and arguments), a report that cannot be
// read. Those are InspectionRetrying: the Backup stays good, the driver
// deletes its failed Job and inspects again after a backoff that doubles
// with each failure (the InspectionRetry record in the Backup's
// status.underlyingResources), with a Warning Event each time.

// condemns reports whether a step's reason is evidence about the bytes.
func condemns(r report.Reason) bool {
	return r == stagingstep.ReasonArtifactChanged || r == stagingstep.ReasonArtifactCorrupt
}

// Backoff between inspections that failed for the inspector's reasons.
const (
	retryFirst = 5 * time.Minute
	retryMax   = 6 * time.Hour
)

// retryBackoff is the wait after the n-th failure (n >= 1).
func retryBackoff(n int32) time.Duration {
	d := retryFirst
	for i := int32(1); i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// ended decides a Job that ended without a manifest: condemned by its
// report, or retried.
func (r *Reconciler) ended(ctx context.Context, b *backupsv1alpha1.Backup, job *batchv1.Job, outcome tenantjobs.Outcome, why string) (ctrl.Result, error) {
	rep, err := r.report(ctx, job)
	if err == nil && condemns(rep.Reason) {
		reason := backupsv1alpha1.BackupReasonInspectionFailed
		if outcome == tenantjobs.Refused {
			reason = backupsv1alpha1.BackupReasonInspectionRefused
		}
		return ctrl.Result{}, r.failed(ctx, b, job, reason, why)
	}
	msg := "the inspection Job " + job.Name + " failed"
	switch {
	case err == nil && rep.Message != "":
		msg += ": " + string(rep.Reason) + ": " + rep.Message
	case err != nil:
		msg += ": " + err.Error()
		if why != "" {
			msg += " (" + why + ")"
		}
	case why != "":
		msg += ": " + why
	}
	return r.retry(ctx, b, job, msg)
}

// retry records an inspector's failure (once per failed Job), deletes the
// Job and waits out the backoff.
func (r *Reconciler) retry(ctx context.Context, b *backupsv1alpha1.Backup, job *batchv1.Job, why string) (ctrl.Result, error) {
	rec := artifact.InspectionRetry(b)
	if rec == nil || rec.Job != string(job.UID) {
		n := int32(1)
		if rec != nil {
			n = rec.Attempts + 1
		}
		wait := retryBackoff(n)
		next := &driverv1alpha1.InspectionRetry{Attempts: n, Job: string(job.UID),
			NotBefore: metav1.NewTime(r.now().Add(wait).UTC().Truncate(time.Second)), Message: textlimit.Cut(why, 1024)}
		msg := fmt.Sprintf("%s; the inspector's failure, not evidence against the Backup, which still counts as good: attempt %d, inspecting again after %s",
			why, n, next.NotBefore.Format(time.RFC3339))
		before := b.DeepCopy()
		if err := artifact.SetInspectionRetry(b, next); err != nil {
			return ctrl.Result{}, err
		}
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionInspected,
			Status: metav1.ConditionFalse, Reason: backupsv1alpha1.BackupReasonInspectionRetrying, Message: textlimit.Message(msg)})
		if err := r.patch(ctx, before, b); err != nil {
			return ctrl.Result{}, err
		}
		log.FromContext(ctx).Info("inspection failed for the inspector's own reason; retrying later", "attempt", n, "message", why)
		r.Recorder.Eventf(b, nil, "Warning", backupsv1alpha1.BackupReasonInspectionRetrying, "Inspect", "%s", textlimit.Note(msg))
		inspectionsTotal.WithLabelValues(backupsv1alpha1.BackupReasonInspectionRetrying).Inc()
		rec = next
	}
	err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return ctrl.Result{}, fmt.Errorf("delete the failed inspection Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return ctrl.Result{RequeueAfter: max(rec.NotBefore.Sub(r.now()), time.Second)}, nil
}

// retryWait is how long b still waits before it is inspected again (0:
// not waiting).
func (r *Reconciler) retryWait(b *backupsv1alpha1.Backup) time.Duration {
	rec := artifact.InspectionRetry(b)
	if rec == nil {
		return 0
	}
	wait := rec.NotBefore.Sub(r.now())
	// A tenant may edit the record: never wait longer than the backoff's bound.
	return max(min(wait, retryMax), 0)
}
