// Package rehearsalrecord keeps what the driver records on a dry-run
// RestoreJob. Cozystack's RestoreJob CRD serves no status field for it
// (status has phase, times, message and conditions only), so the
// rehearsal's start (the live revision, which is the rehearsal Job's
// floor, and the key count then) and its report live in ONE annotation
// the driver writes, etcd-backup-driver.cozystack.io/rehearsal: strict
// JSON, bounded, signed with the provenance key and bound to the
// RestoreJob's namespace, name and UID. Tenants can write their
// RestoreJobs' annotations, so the driver believes only a record that
// verifies; one edited, copied from another RestoreJob or made up reads
// as none, with the reason. The person's summary is the RestoreJob's
// status.message and Ready condition, which tenants cannot write.
package rehearsalrecord

import (
	"context"
	"errors"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/signedannotation"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Annotation holds the driver's record on a dry-run RestoreJob.
const Annotation = "etcd-backup-driver.cozystack.io/rehearsal"

// MaxBytes bounds the annotation: a longer value is not read, and Encode
// cuts the report's lists until the record fits.
const MaxBytes = 8192

// MaxLiveUnread bounds Record.LiveUnread.
const MaxLiveUnread = 512

// Record is the driver's record of one dry run.
type Record struct {
	// RevisionBefore is the live cluster's revision when the rehearsal
	// started, the floor the rehearsal Job stages above; 0: it could not
	// be read (the Job raises the revision by etcd's blind bump).
	RevisionBefore int64 `json:"revisionBefore"`
	// KeysBefore is the number of live keys then.
	KeysBefore int64 `json:"keysBefore,omitempty"`
	// LiveUnread says why the live cluster could not be read (words a
	// tenant may read); empty when it was.
	LiveUnread string `json:"liveUnread,omitempty"`
	// Report is what a real restore would change, once the rehearsal
	// ended; absent while it runs.
	Report *driverv1alpha1.RehearsalReport `json:"report,omitempty"`

	// Signature is the driver's mark over the rest (provenance.Mark).
	Signature string `json:"signature,omitempty"`
}

// form is the rehearsal record's annotation, bound and signatures.
var form = signedannotation.Form{Annotation: Annotation, MaxBytes: MaxBytes, Domain: "rehearsal"}

// SignatureField is where the record's signature is (signedannotation).
func (r *Record) SignatureField() *string { return &r.Signature }

// Read returns the driver's record on rj: ok is false when it has none,
// or one the driver did not write for this RestoreJob (it does not parse
// strictly, is too long, or its signature does not verify), and ignored
// then says why ("" when there is no annotation at all). The error is only
// for keys that cannot be read now (retry).
func Read(ctx context.Context, keys provenance.Keys, rj *backupsv1alpha1.RestoreJob) (rec Record, ok bool, ignored string, err error) {
	return signedannotation.Read[Record](ctx, keys, form, rj)
}

// Peek reads rj's record without verifying it, for display by tools that
// do not hold the driver's key (ebdctl); nothing is decided by it. false:
// no record, or one that does not parse.
func Peek(rj *backupsv1alpha1.RestoreJob) (Record, bool) {
	return signedannotation.Peek[Record](form, rj)
}

// Encode returns rec as the annotation's value, signed for rj. A report
// whose lists would pass MaxBytes has them cut (Truncated).
func Encode(ctx context.Context, keys provenance.Keys, rj *backupsv1alpha1.RestoreJob, rec Record) (string, error) {
	rec.LiveUnread = textlimit.Cut(rec.LiveUnread, MaxLiveUnread)
	if rec.Report != nil {
		rep := *rec.Report
		rec.Report = &rep
	}
	for {
		out, err := signedannotation.Encode[Record](ctx, keys, form, rj, rec)
		if !errors.Is(err, signedannotation.ErrTooLarge) || !shrink(rec.Report) {
			return out, err
		}
	}
}

// shrink halves the longest list of rep (false: nothing left to cut).
func shrink(rep *driverv1alpha1.RehearsalReport) bool {
	if rep == nil {
		return false
	}
	n := max(len(rep.Resources), len(rep.NamespacesReturning), len(rep.NamespacesVanishing))
	if n == 0 {
		return false
	}
	rep.Truncated = true
	switch n {
	case len(rep.Resources):
		rep.Resources = rep.Resources[:len(rep.Resources)/2]
	case len(rep.NamespacesReturning):
		rep.NamespacesReturning = rep.NamespacesReturning[:len(rep.NamespacesReturning)/2]
	default:
		rep.NamespacesVanishing = rep.NamespacesVanishing[:len(rep.NamespacesVanishing)/2]
	}
	return true
}
