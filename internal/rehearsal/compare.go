package rehearsal

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearse"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Bounds of the report's lists (the API's).
const (
	maxChanges    = 24
	maxNamespaces = 16
)

// side is one side of the comparison: the live cluster now (known false
// when it could not be read) or the rehearsed Backup.
type side struct {
	known     bool
	keys      int64
	keyspaces []backupsv1alpha1.KeyspaceManifest
}

// compare fills the report's counts: resources whose counts differ
// (largest change first), namespaces returning and vanishing. A count
// missing from one side is taken as zero only when that side's list is
// whole; otherwise the resource is left out and Truncated says so. The
// same holds for namespace names.
func compare(rep *backupsv1alpha1.RehearsalReport, now, after side, truncated bool) {
	rep.Truncated = truncated
	if !now.known {
		return
	}
	before, beforeWhole := resourceCounts(now.keyspaces)
	afterCounts, afterWhole := resourceCounts(after.keyspaces)
	var changes []backupsv1alpha1.CountChange
	for _, name := range union(keysOf(before), keysOf(afterCounts)) {
		b, inB := before[name]
		a, inA := afterCounts[name]
		if (!inB && !beforeWhole) || (!inA && !afterWhole) {
			rep.Truncated = true
			continue
		}
		if a != b {
			changes = append(changes, backupsv1alpha1.CountChange{Name: name, Before: b, After: a})
		}
	}
	sort.SliceStable(changes, func(i, j int) bool {
		di, dj := abs(changes[i].After-changes[i].Before), abs(changes[j].After-changes[j].Before)
		if di != dj {
			return di > dj
		}
		return changes[i].Name < changes[j].Name
	})
	if len(changes) > maxChanges {
		changes, rep.Truncated = changes[:maxChanges], true
	}
	rep.Resources = changes

	nowNames, nowWhole := namespaceNames(now.keyspaces)
	afterNames, afterNamesWhole := namespaceNames(after.keyspaces)
	if !nowWhole || !afterNamesWhole {
		rep.Truncated = true
		return
	}
	rep.NamespacesReturning, rep.NamespacesVanishing = minus(afterNames, nowNames), minus(nowNames, afterNames)
	if len(rep.NamespacesReturning) > maxNamespaces {
		rep.NamespacesReturning, rep.Truncated = rep.NamespacesReturning[:maxNamespaces], true
	}
	if len(rep.NamespacesVanishing) > maxNamespaces {
		rep.NamespacesVanishing, rep.Truncated = rep.NamespacesVanishing[:maxNamespaces], true
	}
}

// resourceCounts sums resources over the keyspaces; whole is false when a
// keyspace's list may have been cut (it is at its bound).
func resourceCounts(ks []backupsv1alpha1.KeyspaceManifest) (map[string]int64, bool) {
	out, whole := map[string]int64{}, len(ks) < backupsv1alpha1.ManifestMaxKeyspaces
	for _, k := range ks {
		if len(k.Resources) >= backupsv1alpha1.ManifestMaxResources {
			whole = false
		}
		for _, c := range k.Resources {
			out[c.Name] += c.Count
		}
	}
	return out, whole
}

// namespaceNames is every namespace of the keyspaces; whole is false when
// a keyspace has namespaces but does not list them (too many).
func namespaceNames(ks []backupsv1alpha1.KeyspaceManifest) ([]string, bool) {
	var out []string
	whole := len(ks) < backupsv1alpha1.ManifestMaxKeyspaces
	for _, k := range ks {
		if k.Namespaces > 0 && int64(len(k.NamespaceNames)) != k.Namespaces {
			whole = false
		}
		out = append(out, k.NamespaceNames...)
	}
	slices.Sort(out)
	return slices.Compact(out), whole
}

func keysOf(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func union(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// minus is a without b (both sorted, deduplicated).
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, x)
		}
	}
	return out
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// newReport is the RestoreJob's report of a rehearsal that read back
// report r against the live counts now.
func newReport(now side, revisionBefore int64, r rehearse.Report) backupsv1alpha1.RehearsalReport {
	rep := backupsv1alpha1.RehearsalReport{RevisionBefore: revisionBefore, RevisionAfter: r.Revision, KeysAfter: r.Keys}
	if now.known {
		rep.KeysBefore = now.keys
	}
	compare(&rep, now, side{known: true, keys: r.Keys, keyspaces: r.Keyspaces}, r.Truncated)
	return rep
}

// summary says in one sentence what a restore would change, e.g. "a
// restore would bring back namespaces a, b; pods 12 → 30; revision 1500 →
// 11500".
func summary(rep backupsv1alpha1.RehearsalReport, liveUnread string) string {
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
	if liveUnread != "" {
		msg += "; the live cluster could not be read (" + liveUnread + "), so nothing is compared with it and the revision was raised by etcd's blind bump"
	} else if len(rep.Resources) == 0 && len(rep.NamespacesReturning) == 0 && len(rep.NamespacesVanishing) == 0 {
		msg += "; no object counts change"
	}
	if rep.Truncated {
		msg += " (lists cut to their bounds)"
	}
	return textlimit.Cut(msg, 1024)
}
