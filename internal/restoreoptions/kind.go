package restoreoptions

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Kind is what a RestoreJob does: a restore, or a dry run (a rehearsal).
type Kind int

const (
	// Restore replaces the live cluster (internal/restore).
	Restore Kind = iota
	// DryRun rehearses the restore and touches nothing live
	// (internal/tenantjobs/rehearsal).
	DryRun
)

func (k Kind) String() string {
	if k == DryRun {
		return "dry run"
	}
	return "restore"
}

// A RestoreJob does what it was asked when it started, whatever its
// options say later: Cozystack's RestoreJob CRD does not make the spec
// immutable, and a restore that turned into a dry run half-way would be
// abandoned with the cluster deleted, the HelmRelease suspended, control
// planes fenced and the claim held; a dry run that turned into a restore
// would destroy what its user only meant to rehearse. So the kind is read
// from the options only until the job starts, and from then on from the
// records the driver left on it, in its metadata and status (both served
// by every RestoreJob CRD; tenants cannot write status):
//
//   - a restore holds the restore finalizer from its first step, writes
//     the Claimed condition with its start, and the Outcome condition
//     when it concludes;
//   - a dry run holds no finalizer, writes none of those, and writes the
//     Ready condition with a rehearsal's reason from its start.
//
// The restore has records of its own besides (its capture and claim, in
// the driver's namespace): it passes them as restoreRecords.

// rehearsalReasons are the Ready reasons a dry run writes from its start.
var rehearsalReasons = []string{
	string(backupsv1alpha1.ReasonRehearsing),
	string(backupsv1alpha1.ReasonRehearsed),
	string(backupsv1alpha1.ReasonRehearsalFailed),
	string(backupsv1alpha1.ReasonRehearsalUnrecorded),
}

// Asks is what rj's options ask for now: DryRun for dryRun: true, else
// Restore (options that do not parse are a restore's, which refuses them
// with MalformedOptions).
func Asks(rj *backupsv1alpha1.RestoreJob) Kind {
	if o, err := Parse(rj.Spec.Options); err == nil && o.DryRun {
		return DryRun
	}
	return Restore
}

// StartedAs is what rj started as, read from its records; started is
// false while nothing has started.
func StartedAs(rj *backupsv1alpha1.RestoreJob, restoreRecords bool) (kind Kind, started bool) {
	if restoreRecords || controllerutil.ContainsFinalizer(rj, backupsv1alpha1.RestoreFinalizer) ||
		meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionClaimed) != nil ||
		meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionOutcome) != nil {
		return Restore, true
	}
	if c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.ConditionReady); c != nil && slices.Contains(rehearsalReasons, c.Reason) {
		return DryRun, true
	}
	return Restore, false
}

// KindOf is what rj does: what it started as once it started, else what
// its options ask now. ignored reports options that now ask for the other
// kind: the change is not obeyed, and the caller says so.
func KindOf(rj *backupsv1alpha1.RestoreJob, restoreRecords bool) (kind Kind, ignored bool) {
	asks := Asks(rj)
	started, ok := StartedAs(rj, restoreRecords)
	if !ok {
		return asks, false
	}
	return started, asks != started
}

// IsDryRun reports whether rj is a dry run by what the job itself shows
// (KindOf without the restore's own records): the rehearsal takes it, the
// plugin reports it as one.
func IsDryRun(rj *backupsv1alpha1.RestoreJob) bool {
	k, _ := KindOf(rj, false)
	return k == DryRun
}

// IgnoredChange says why a RestoreJob that started as kind does not
// follow options that now ask for the other kind.
func IgnoredChange(started Kind) string {
	if started == DryRun {
		return "spec.options no longer ask for a dry run, but this RestoreJob started as one and a RestoreJob does what it was asked " +
			"when it started: it stays a dry run and touches nothing live; create another RestoreJob to restore"
	}
	return "spec.options.dryRun was set after this RestoreJob started as a restore, and is ignored: a RestoreJob does what it was asked " +
		"when it started, so the restore goes on to its end (or its rollback); create another RestoreJob with dryRun: true to rehearse"
}
