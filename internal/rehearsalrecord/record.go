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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
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

// Read returns the driver's record on rj: ok is false when it has none,
// or one the driver did not write for this RestoreJob (it does not parse
// strictly, is too long, or its signature does not verify), and ignored
// then says why ("" when there is no annotation at all). The error is only
// for keys that cannot be read now (retry).
func Read(ctx context.Context, keys provenance.Keys, rj *backupsv1alpha1.RestoreJob) (rec Record, ok bool, ignored string, err error) {
	raw, found := rj.Annotations[Annotation]
	if !found {
		return Record{}, false, "", nil
	}
	rec, err = parse(raw)
	if err != nil {
		return Record{}, false, err.Error(), nil
	}
	body, err := unsigned(rec)
	if err != nil {
		return Record{}, false, err.Error(), nil
	}
	verified, err := provenance.CheckMark(ctx, keys, domain(rj), body, rec.Signature)
	if err != nil {
		return Record{}, false, "", fmt.Errorf("verify the rehearsal record on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
	}
	if !verified {
		return Record{}, false, "its signature is not the driver's for this RestoreJob", nil
	}
	rec.Signature = ""
	return rec, true, "", nil
}

// Peek reads rj's record without verifying it, for display by tools that
// do not hold the driver's key (ebdctl); nothing is decided by it. false:
// no record, or one that does not parse.
func Peek(rj *backupsv1alpha1.RestoreJob) (Record, bool) {
	raw, ok := rj.Annotations[Annotation]
	if !ok {
		return Record{}, false
	}
	rec, err := parse(raw)
	return rec, err == nil
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
		body, err := unsigned(rec)
		if err != nil {
			return "", err
		}
		rec.Signature, err = provenance.Mark(ctx, keys, domain(rj), body)
		if err != nil {
			return "", err
		}
		out, err := json.Marshal(rec)
		if err != nil {
			return "", fmt.Errorf("encode the rehearsal record on RestoreJob %s/%s: %w", rj.Namespace, rj.Name, err)
		}
		if len(out) <= MaxBytes {
			return string(out), nil
		}
		if !shrink(rec.Report) {
			return "", fmt.Errorf("the rehearsal record on RestoreJob %s/%s is %d bytes, over %d", rj.Namespace, rj.Name, len(out), MaxBytes)
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

// domain binds a record to one RestoreJob: a record copied onto another
// (or onto a re-created RestoreJob of the same name) does not verify.
func domain(rj *backupsv1alpha1.RestoreJob) string {
	return "etcd-backup-driver rehearsal\n" + rj.Namespace + "\n" + rj.Name + "\n" + string(rj.UID)
}

// unsigned is rec's signed bytes: its JSON without the signature.
func unsigned(rec Record) ([]byte, error) {
	rec.Signature = ""
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode the rehearsal record: %w", err)
	}
	return body, nil
}

// parse reads one JSON object with only Record's fields, nothing after it.
func parse(raw string) (Record, error) {
	if len(raw) > MaxBytes {
		return Record{}, fmt.Errorf("it is %d bytes, over %d", len(raw), MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var rec Record
	if err := dec.Decode(&rec); err != nil {
		return Record{}, fmt.Errorf("it does not parse: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Record{}, errors.New("it does not parse: data after the record")
	}
	return rec, nil
}
