package restore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// The staging step (internal/stagingjob) runs after the capture and before
// the purge, while the live cluster still answers: the driver reads the
// live revision, and a Job copies the Backup's object (and the safety
// Backup's) onto a claim, checked against what was verified and with the
// revision raised. The re-created cluster boots from that claim. The claim
// stays as long as the cluster it seeded (the operator keeps mounting it
// into the seed member); a restore that never used it deletes it.

// Annotations on the staging Job recording the live revision read.
const (
	liveRevisionAnnotation      = "etcd-backup-driver.cozystack.io/live-revision"
	liveRevisionErrorAnnotation = "etcd-backup-driver.cozystack.io/live-revision-error"
)

// decideStaging returns done once the staging Job completed; otherwise the
// step to take or a refusal (nothing is destroyed yet).
func decideStaging(o *observation) (decision, bool) {
	if o.stagingConflict != "" {
		return failure(o, backupsv1alpha1.ReasonStagingConflict, o.stagingConflict), false
	}
	if o.staging == nil || !o.stagingClaim {
		// No Job, or a Job whose claim was never made (a crash between
		// the two creates): stage (again; what exists is kept). A new
		// Job needs the live revision first.
		if o.staging == nil {
			if d, done := readRevision(o, o.liveRead, liverevision.ForStaging); !done {
				return d, false
			}
		}
		return decision{state: stateStage, reason: backupsv1alpha1.ReasonStaging, message: stagingMessage(o)}, false
	}
	switch out, why := stagingjob.OutcomeOf(o.staging); out {
	case stagingjob.Staged:
		return decision{}, true
	case stagingjob.Refused:
		return failure(o, backupsv1alpha1.ReasonStagingRefused, fmt.Sprintf(
			"staging Job %s refused the snapshot (%s)%s; the live cluster was not touched", o.staging.Name, why, reportSuffix(o))), false
	case stagingjob.Failed:
		return failure(o, backupsv1alpha1.ReasonStagingFailed, fmt.Sprintf(
			"staging Job %s failed (%s)%s; the live cluster was not touched", o.staging.Name, why, reportSuffix(o))), false
	}
	return decision{state: stateWaitStaging, reason: backupsv1alpha1.ReasonStaging, message: stagingMessage(o)}, false
}

// readRevision returns done once the read rd has ended; otherwise the step
// that starts it or the wait for its end, both under the staging's status
// (no status write of their own). The read runs off the workers
// (liverevision.Reads), and its end wakes the job.
func readRevision(o *observation, rd revisionRead, p liverevision.Purpose) (decision, bool) {
	switch rd.state {
	case liverevision.NotStarted:
		return decision{state: stateReadRevision, purpose: p, reason: backupsv1alpha1.ReasonStaging, message: stagingMessage(o)}, false
	case liverevision.Running:
		return decision{state: stateWaitRevision, reason: backupsv1alpha1.ReasonStaging, message: stagingMessage(o),
			deadline: o.now.Add(revisionPoll)}, false
	}
	return decision{}, true
}

// Before the purge the live revision is read again: staging a large
// snapshot takes minutes, and a writer the fence does not stop (any client
// of the etcd but Kamaji's control planes) may have moved the live
// revision past the margin the staging left above the revision it read.
// Purging then would restore a revision below one clients saw, while
// RevisionRaised said True. Such a restore is refused instead (nothing is
// destroyed yet); a new RestoreJob stages above the new revision.
const (
	// recheckAttempts is how many reads a re-check makes before it gives up.
	recheckAttempts = 3
	// recheckFresh is how long a re-check's answer is good for the purge.
	recheckFresh = 10 * time.Second
)

// decideRecheck returns done when the purge may go ahead: the snapshot was
// raised blind (far above anything the cluster reaches), or the live
// revision, read again just now, is still within stagingjob.RecheckBudget
// of the one the snapshot was staged above.
func decideRecheck(o *observation) (decision, bool) {
	floor := stagingjob.FloorOf(o.staging)
	if floor == 0 {
		return decision{}, true
	}
	rc := o.recheck
	switch {
	case rc.state != liverevision.Done:
	case rc.result.Err != nil && rc.result.Attempt < recheckAttempts, rc.result.Err == nil && o.now.Sub(rc.result.Ended) > recheckFresh:
		// Read (again): a failed read is retried, a stale answer renewed.
		rc.state = liverevision.NotStarted
	}
	if d, done := readRevision(o, rc, liverevision.BeforePurge); !done {
		return d, false
	}
	if rc.result.Err != nil {
		return failure(o, backupsv1alpha1.ReasonLiveRevisionUnconfirmed, fmt.Sprintf(
			"the live revision (%d when the snapshot was staged) could not be read again before the purge (%d attempts: %s), so the restored revision might fall below one the cluster's clients saw; the live cluster was not touched; see the driver's log, then create the RestoreJob again",
			floor, rc.result.Attempt, liverevision.TenantMessage(rc.result.Err))), false
	}
	if now := rc.result.Value; now-floor >= stagingjob.RecheckBudget {
		return failure(o, backupsv1alpha1.ReasonLiveRevisionOvertaken, fmt.Sprintf(
			"the live cluster went from revision %d, which the snapshot was staged above, to %d before the purge: %d writes or more landed while the snapshot was staged, more than the %d the purge allows, so the restored revision could fall below one the cluster's clients saw; the live cluster was not touched; stop the etcd's other writers (the restore fences Kamaji control planes, not other clients) and create the RestoreJob again",
			floor, now, now-floor, stagingjob.RecheckBudget)), false
	}
	return decision{}, true
}

// stagingDecides: decideStaging still judges the staging (and so its
// claim), which ends with the purge. Reading the claim at every step up to
// the hand-back was most of a restore's API requests.
func stagingDecides(o *observation) bool {
	if outcomeOf(o.job) != nil || purged(o.job) || o.capture == nil {
		return false
	}
	if o.cluster == nil {
		return o.capture.from != "" // restoring into an absent cluster
	}
	// A cluster this job re-created is past the purge (the quiet re-create
	// leaves TargetPurged to the bootstrap's write).
	return o.cluster.GetDeletionTimestamp().IsZero() && !recreatedBy(o)
}

func reportSuffix(o *observation) string {
	if o.stagingReport == "" {
		return ""
	}
	return ": " + o.stagingReport
}

// stagingNames are the restore's staging Job and claim names, as its
// capture records them (random: stagingjob.NewName); for a capture of an
// earlier driver, the names it derived from the RestoreJob's UID. Without a
// capture there is no staging to name: it is made after the capture and
// settled before the capture goes.
func stagingNames(o *observation) (job, claim string) {
	job, claim = stagingjob.Name(o.job.UID), stagingjob.Name(o.job.UID)
	if c := o.capture; c != nil && c.stagingJob != "" && c.stagingClaim != "" {
		job, claim = c.stagingJob, c.stagingClaim
	}
	return job, claim
}

func stagingMessage(o *observation) string {
	job, claim := stagingNames(o)
	msg := fmt.Sprintf("reading the live revision and staging the snapshot onto PersistentVolumeClaim %s (Job %s) with its revision raised above it",
		claim, job)
	if capturedLive(o) {
		// The purge that follows writes no status of its own (quiet).
		msg += fmt.Sprintf("; then EtcdCluster %s and its PVCs are deleted and it is re-created from that claim", clusterName)
	}
	return msg
}

// stagingSpec is the staging of this restore, from the capture (the frozen
// sources) and the driver's configuration.
func (r *Reconciler) stagingSpec(o *observation, live int64) stagingjob.Spec {
	job, claim := stagingNames(o)
	s := stagingjob.Spec{
		JobName: job, ClaimName: claim, Namespace: o.job.Namespace, RestoreJobName: o.job.Name, RestoreJobUID: o.job.UID, Image: r.StagingImage,
		Restore: stagingObject(o.capture.source), Point: stagingPoint(o.capture.point), LiveRevision: live,
		AllowedEndpointCIDRs: r.AllowedEndpointCIDRs, AllowHTTP: o.httpAllowed, CAPEM: r.S3CAPEM,
	}
	if rb := o.capture.rollback; rb != nil {
		obj := stagingObject(*rb)
		s.Rollback = &obj
	}
	if c := clusterModel(o); c != nil && c.Spec.Storage != nil {
		s.StorageClassName = c.Spec.Storage.StorageClassName
	}
	if !o.job.Status.StartedAt.IsZero() {
		s.Deadline = o.job.Status.StartedAt.Add(o.opts.Timeout(r.Deadline)).Sub(o.now)
	}
	return s
}

func stagingObject(src restoreSource) stagingjob.Object {
	return stagingjob.Object{Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Key, Region: src.Region,
		PathStyle: src.ForcePathStyle, SecretName: src.SecretName, Size: src.Size, SHA256: src.SHA256}
}

// stage creates the claim and the Job, with the live revision read before
// (readRevision). A revision that could not be read is not a reason to
// stop: the revision is raised by the documented large bump, and the Job's
// annotation (and then the RevisionRaised condition) says so in a fixed
// sentence; why it failed is in the driver's log (the error names what the
// tenant's Service led to, which is not the tenant's to read).
func (r *Reconciler) stage(ctx context.Context, o *observation) error {
	if o.staging != nil {
		// The Job exists without its claim (a crash between the two
		// creates): only the claim is made; the claim does not depend on
		// the revision, so the live cluster is not asked again.
		pvc, _ := stagingjob.Build(r.stagingSpec(o, 0))
		return r.createClaim(ctx, o, pvc)
	}
	read := o.liveRead.result
	if o.liveRead.state != liverevision.Done {
		read.Err = errors.New("the live revision was not read")
	}
	live := read.Value
	if read.Err != nil {
		live = 0
	}
	pvc, job := stagingjob.Build(r.stagingSpec(o, live))
	if read.Err != nil {
		job.Annotations[liveRevisionErrorAnnotation] = liverevision.TenantMessage(read.Err)
	} else {
		job.Annotations[liveRevisionAnnotation] = strconv.FormatInt(live, 10)
	}
	// The claim first: the Job names it, so once the Job exists its
	// claim's name is known to the tenant; the Job's own name is known to
	// nobody before the Job exists (both are the capture's). A crash in
	// between leaves a claim the next stage step finds (AlreadyExists) and
	// the hand-back settles.
	if err := r.createClaim(ctx, o, pvc); err != nil {
		return err
	}
	err := r.Client.Create(ctx, job)
	switch {
	case err == nil:
		r.madeJob.add(o.job.UID, job.UID)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create staging Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// createClaim creates the staging claim; one that already exists is read
// (observeStaging) to tell whose it is.
func (r *Reconciler) createClaim(ctx context.Context, o *observation, pvc *corev1.PersistentVolumeClaim) error {
	err := r.Client.Create(ctx, pvc)
	switch {
	case err == nil:
		r.made.add(o.job.UID, pvc.UID)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create staging PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// revisionCondition is RevisionRaised as the staging Job tells it, after
// decision d; nil while there is nothing to say. A restore that ends before
// the purge restored nothing, whatever it staged.
func revisionCondition(o *observation, d decision) *metav1.Condition {
	c := &metav1.Condition{Type: backupsv1alpha1.RestoreConditionRevisionRaised}
	if !o.opts.BumpsRevision() {
		c.Status, c.Reason = metav1.ConditionFalse, string(backupsv1alpha1.ReasonRevisionNotRaised)
		c.Message = "spec.options.bumpRevision is false: etcd restarts at the snapshot's revision, so Kubernetes watch caches and informers that saw a later one are not told to relist"
		return c
	}
	if o.staging == nil {
		return nil
	}
	if out, _ := stagingjob.OutcomeOf(o.staging); out != stagingjob.Staged {
		return nil
	}
	if out := outcomeOf(o.job); !committed(o) && ((d.state == stateConclude && !d.success) || (out != nil && !out.success)) {
		c.Status, c.Reason = metav1.ConditionFalse, string(backupsv1alpha1.ReasonRevisionNotRaised)
		c.Message = "the restore ended before the live cluster was replaced: the staged snapshot was not restored"
		return c
	}
	ann := o.staging.Annotations
	c.Status = metav1.ConditionTrue
	// Both annotations are on a Job in the tenant's namespace, which the
	// tenant may edit: only a number, and a bounded sentence, reach the
	// RestoreJob's status (an unbounded one would make every status write
	// of the job fail the CRD's maxLength).
	if live := ann[liveRevisionAnnotation]; live != "" && isRevision(live) {
		_, claim := stagingNames(o)
		c.Reason = string(backupsv1alpha1.ReasonRevisionRaised)
		c.Message = fmt.Sprintf("the live cluster was at revision %s; the snapshot was staged on PersistentVolumeClaim %s with its revision raised above %s and every earlier revision compacted, so watches from before the restore get 410 Gone and relist",
			live, claim, live)
		return c
	}
	c.Reason = string(backupsv1alpha1.ReasonRevisionBumpedBlind)
	c.Message = fmt.Sprintf("the live revision could not be read (%s); the snapshot's revision was raised by %d (etcd's recommended bump) and every earlier revision compacted",
		textlimit.Value(strings.TrimSpace(ann[liveRevisionErrorAnnotation])), stagingjob.UnknownLiveBump)
	return c
}

// isRevision reports whether s is an etcd revision as the driver writes it.
func isRevision(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}

// stagingSource is the bootstrap source of a re-create through the staging
// claim: the restore's file, or the safety snapshot's in a rollback.
func stagingSource(o *observation) *etcdv1alpha2.PVCSource {
	file := stagingjob.RestoreFile
	if rollbackOf(o.job) != nil {
		file = stagingjob.RollbackFile
	}
	_, claim := stagingNames(o)
	return &etcdv1alpha2.PVCSource{ClaimName: claim, SubPath: file}
}

// stagingDone: no staging Job of this restore is still running (the
// settle stops one that is, which needs the read path's care).
func stagingDone(o *observation) bool {
	if o.staging == nil {
		return true
	}
	out, _ := stagingjob.OutcomeOf(o.staging)
	return out != stagingjob.Running
}

// usesStaging: the live cluster was re-created by this job from the claim.
func usesStaging(o *observation) bool {
	if o.cluster == nil || !recreatedBy(o) || o.cluster.Spec.Bootstrap == nil || o.cluster.Spec.Bootstrap.Restore == nil {
		return false
	}
	p := o.cluster.Spec.Bootstrap.Restore.Source.PVC
	_, claim := stagingNames(o)
	return p != nil && p.ClaimName == claim
}

// readStagingClaim reads the staging claim that observeStaging left unread:
// live (the PVC cache holds member PVCs only), and only on a view that is
// caught up, the one a decision is taken on, not on every reconcile. A Job
// without its claim would never run, and a claim that is not this job's is
// refused.
func (r *Reconciler) readStagingClaim(ctx context.Context, o *observation) error {
	if !o.stagingClaimUnread {
		return nil
	}
	o.stagingClaimUnread = false
	ns := o.job.Namespace
	_, name := stagingNames(o)
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)
	switch {
	case err == nil:
		o.stagingClaim = pvc.Labels[backupsv1alpha1.StagingLabel] == string(o.job.UID)
		if !o.stagingClaim {
			o.stagingConflict = fmt.Sprintf("PersistentVolumeClaim %s/%s exists and is not this RestoreJob's staging claim", ns, name)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read staging PersistentVolumeClaim %s/%s: %w", ns, name, err)
	}
	return nil
}

// observeStaging reads the restore's staging Job and, when it failed, what
// its Pods said; the claim is read later (readStagingClaim).
func (r *Reconciler) observeStaging(ctx context.Context, o *observation) error {
	if o.capture == nil {
		return nil
	}
	j := &batchv1.Job{}
	name, _ := stagingNames(o)
	found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, j)
	if err != nil || !found {
		return err
	}
	if j.Labels[backupsv1alpha1.StagingLabel] != string(o.job.UID) {
		o.stagingConflict = fmt.Sprintf("Job %s/%s exists and is not this RestoreJob's staging Job", j.Namespace, j.Name)
		return nil
	}
	if made := r.madeJob.uidOf(o.job.UID); made != "" && made != j.UID {
		// Deleted and made again by someone else since this process
		// created it (the tenant sees its name once it exists).
		o.stagingConflict = fmt.Sprintf("Job %s/%s is not the staging Job this RestoreJob created (UID %s, not %s)", j.Namespace, j.Name, j.UID, made)
		return nil
	}
	o.staging = j
	out, _ := stagingjob.OutcomeOf(j)
	switch {
	case !stagingDecides(o):
	case r.made.has(o.job.UID):
		// Created by this process (madeClaims).
		o.stagingClaim = true
	default:
		// Read by readStagingClaim, once the view is caught up.
		o.stagingClaimUnread = true
	}
	if out != stagingjob.Refused && out != stagingjob.Failed {
		return nil
	}
	var pods corev1.PodList
	if err := r.LiveReader.List(ctx, &pods, client.InNamespace(j.Namespace),
		client.MatchingLabels{backupsv1alpha1.StagingLabel: string(o.job.UID)}); err != nil {
		return fmt.Errorf("list the Pods of staging Job %s: %w", j.Name, err)
	}
	for i := range pods.Items {
		if reason, msg := stagingjob.PodReport(&pods.Items[i]); msg != "" {
			o.stagingReport = msg
			if reason != "" {
				o.stagingReport = reason + ": " + msg
			}
		}
	}
	return nil
}

// stagingPoint is the point the staging replays to, from the capture's
// copy of the pin (nil for no point).
func stagingPoint(pin *pointintime.Pin) *pointreplay.Point {
	if pin == nil {
		return nil
	}
	p := pin.Replay()
	return &p
}
