package rehearsal

import (
	"fmt"
	"strings"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Bounds of the report's lists (the API's).
const (
	maxChanges    = 24
	maxNamespaces = 16
)

// compare fills the report's counts from the live cluster now (nil when
// it could not be read) and the rehearsed Backup after: resources whose
// counts differ over all keyspaces (largest change first), namespaces
// returning and vanishing. A count or a name missing from a list that was
// cut is unknown, never a zero (manifest.CompareTotals): such a resource
// is left out, and so are the names, and Truncated says so.
func compare(rep *driverv1alpha1.RehearsalReport, now, after *driverv1alpha1.BackupManifest) {
	rep.Truncated = after.Truncated
	if now == nil {
		return
	}
	t := manifest.CompareTotals(now, after)
	var changes []driverv1alpha1.CountChange
	for _, c := range t.Resources {
		switch {
		case c.Delta == nil:
			rep.Truncated = true
		case *c.Delta != 0:
			changes = append(changes, driverv1alpha1.CountChange{Name: c.Name, Before: *c.From, After: *c.To})
		}
	}
	if len(changes) > maxChanges {
		changes, rep.Truncated = changes[:maxChanges], true
	}
	rep.Resources = changes
	if t.NamespaceNamesUnknown {
		rep.Truncated = true
		return
	}
	rep.NamespacesReturning, rep.NamespacesVanishing = t.NamespacesOnlyInTo, t.NamespacesOnlyInFrom
	if len(rep.NamespacesReturning) > maxNamespaces {
		rep.NamespacesReturning, rep.Truncated = rep.NamespacesReturning[:maxNamespaces], true
	}
	if len(rep.NamespacesVanishing) > maxNamespaces {
		rep.NamespacesVanishing, rep.Truncated = rep.NamespacesVanishing[:maxNamespaces], true
	}
}

// newReport is the RestoreJob's report of a rehearsal that read back
// report r against the live cluster's manifest now (nil: unread).
func newReport(now *driverv1alpha1.BackupManifest, revisionBefore int64, r step.Report) driverv1alpha1.RehearsalReport {
	rep := driverv1alpha1.RehearsalReport{RevisionBefore: revisionBefore, RevisionAfter: r.Revision, KeysAfter: r.Keys}
	if now != nil {
		rep.KeysBefore = now.Keys
	}
	compare(&rep, now, &driverv1alpha1.BackupManifest{Keys: r.Keys, Keyspaces: r.Keyspaces, Truncated: r.Truncated})
	return rep
}

// countsLost is summary's liveUnread for a rehearsal whose live counts a
// driver restart lost: they are not read again.
const countsLost = "the live counts by resource were lost with a driver restart and the live cluster is not counted twice, " +
	"so only the revision and the key count now are compared"

// summary says in one sentence what a restore would change, e.g. "a
// restore would bring back namespaces a, b; pods 12 → 30; revision 1500 →
// 11500".
func summary(rep driverv1alpha1.RehearsalReport, liveUnread string) string {
	var parts []string
	if len(rep.NamespacesReturning) > 0 {
		parts = append(parts, "bring back namespaces "+strings.Join(rep.NamespacesReturning, ", "))
	}
	if len(rep.NamespacesVanishing) > 0 {
		parts = append(parts, "remove namespaces "+strings.Join(rep.NamespacesVanishing, ", "))
	}
	var counts []string
	for i, c := range rep.Resources {
		if i == 5 {
			counts = append(counts, fmt.Sprintf("and %d more", len(rep.Resources)-i))
			break
		}
		counts = append(counts, fmt.Sprintf("%s %d → %d", c.Name, c.Before, c.After))
	}
	if len(counts) > 0 {
		parts = append(parts, strings.Join(counts, ", "))
	}
	if rep.RevisionBefore > 0 {
		parts = append(parts, fmt.Sprintf("revision %d → %d", rep.RevisionBefore, rep.RevisionAfter))
	} else {
		parts = append(parts, fmt.Sprintf("revision → %d", rep.RevisionAfter))
	}
	msg := "the Backup booted and read back (" + fmt.Sprint(rep.KeysAfter) + " keys); a restore would: " + strings.Join(parts, "; ")
	if liveUnread == countsLost {
		msg += "; " + countsLost
	} else if liveUnread != "" {
		msg += "; the live cluster could not be read (" + liveUnread + "), so nothing is compared with it and the revision was raised by etcd's blind bump"
	} else if len(rep.Resources) == 0 && len(rep.NamespacesReturning) == 0 && len(rep.NamespacesVanishing) == 0 {
		msg += "; no object counts change"
	}
	if rep.Truncated {
		msg += " (lists cut to their bounds)"
	}
	return textlimit.Cut(msg, 1024)
}
