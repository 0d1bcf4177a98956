// Package planrecord keeps what the driver records about a Plan. Cozystack's
// Plan CRD serves only conditions in its status, so the driver's records
// (its scheduler's run times, the drills and the last rehearsal) live in
// ONE annotation it writes, etcd-backup-driver.cozystack.io/plan-status:
// strict JSON, bounded, signed with the provenance key and bound to the
// Plan's namespace, name and UID. Tenants can write their Plans'
// annotations, so the driver believes only a record that verifies: one
// edited, copied from another Plan, or made up is ignored (with a log) as
// if there were none, and written afresh. What a platform alert counts
// (the rehearsal-overdue gauge) is derived from it, never from anything a
// tenant could have written unsigned.
//
// The package also says which Plans the driver keeps records on (those
// whose BackupClass binds the Plan's application to an Etcd strategy:
// Cozystack's Plans of other kinds are never written to) and writes a
// record and the driver's conditions without clobbering a concurrent
// writer (Cozystack's Plan controller updates the same status).
package planrecord

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/signedannotation"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Annotation holds the driver's record on a Plan.
const Annotation = "etcd-backup-driver.cozystack.io/plan-status"

// MaxBytes bounds the annotation: a longer value is not read.
const MaxBytes = 4096

// MaxMessage bounds Rehearsal.Message.
const MaxMessage = 1024

// Record is what the driver knows about a Plan beyond its spec. The
// driver's scheduler writes the schedule times; the plan policy controller
// (retention and drills) the rest. Times are whole seconds.
type Record struct {
	// LastScheduleTime is the scheduled time of the newest run the
	// driver's scheduler started.
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSkippedTime is the scheduled time of the newest run that was
	// skipped: runs at or before it are never reconsidered.
	LastSkippedTime *metav1.Time `json:"lastSkippedTime,omitempty"`
	// NextScheduleTime is the next time a run is due.
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastSuccessfulBackup names the newest Ready Backup of the Plan.
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// LastDrillTime is the scheduled time of the newest drill started.
	LastDrillTime *metav1.Time `json:"lastDrillTime,omitempty"`
	// LastDrillSkippedTime is the scheduled time of the newest drill that
	// did not start: drills at or before it are not looked at again.
	LastDrillSkippedTime *metav1.Time `json:"lastDrillSkippedTime,omitempty"`
	// LastRehearsal is the outcome of the newest drill that ended.
	LastRehearsal *Rehearsal `json:"lastRehearsal,omitempty"`
	// LastSuccessfulRehearsalTime is when the newest successful drill was
	// scheduled: the time its keyed name binds, which a tenant cannot move.
	LastSuccessfulRehearsalTime *metav1.Time `json:"lastSuccessfulRehearsalTime,omitempty"`

	// SettingsRead is true once the driver has looked for settings in
	// fields of its earlier Plan CRD (and moved them to annotations).
	SettingsRead bool `json:"settingsRead,omitempty"`

	// Signature is the driver's mark over the rest (provenance.Mark).
	Signature string `json:"signature,omitempty"`
}

// Rehearsal is the outcome of one drill.
type Rehearsal struct {
	// RestoreJob is the drill's dry-run RestoreJob.
	RestoreJob string `json:"restoreJob"`
	// Backup is the Backup it rehearsed.
	Backup string `json:"backup"`
	// Succeeded is true when the rehearsal proved the Backup restorable.
	Succeeded bool `json:"succeeded"`
	// ScheduledAt is the drill's scheduled time; CompletedAt when it ended.
	ScheduledAt metav1.Time `json:"scheduledAt"`
	CompletedAt metav1.Time `json:"completedAt"`
	// Message is the RestoreJob's, cut to MaxMessage.
	Message string `json:"message,omitempty"`
}

// form is the plan-status record's annotation, bound and signatures.
var form = signedannotation.Form{Annotation: Annotation, MaxBytes: MaxBytes, Domain: "plan-status"}

// SignatureField is where the record's signature is (signedannotation).
func (r *Record) SignatureField() *string { return &r.Signature }

// Read returns the driver's record on plan. A Plan without one, or with
// one the driver did not write for this Plan (it does not parse strictly,
// is too long, or its signature does not verify), gets the zero Record,
// and ignored says why, for a log line. The error is only for keys that
// cannot be read now (retry).
func Read(ctx context.Context, keys provenance.Keys, plan *backupsv1alpha1.Plan) (rec Record, ignored string, err error) {
	rec, _, ignored, err = signedannotation.Read[Record](ctx, keys, form, plan)
	return rec, ignored, err
}

// Peek reads plan's record without verifying it, for display by tools
// that do not hold the driver's key (ebdctl); nothing is decided by it.
// false: no record, or one that does not parse.
func Peek(plan *backupsv1alpha1.Plan) (Record, bool) {
	return signedannotation.Peek[Record](form, plan)
}

// Encode returns rec as the annotation's value, signed for plan.
func Encode(ctx context.Context, keys provenance.Keys, plan *backupsv1alpha1.Plan, rec Record) (string, error) {
	if rec.LastRehearsal != nil {
		r := *rec.LastRehearsal
		r.Message = textlimit.Cut(r.Message, MaxMessage)
		rec.LastRehearsal = &r
	}
	return signedannotation.Encode[Record](ctx, keys, form, plan, rec)
}
