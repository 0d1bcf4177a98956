// Package contentdrop compares a Backup's manifest with the previous good
// one of the same application and says what dropped: a resource that lost
// more than a share of its objects, namespaces that disappeared, or a
// whole Kubernetes keyspace gone. A tenant whose namespaces were deleted
// keeps taking "successful" backups; this is what notices.
package contentdrop

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Thresholds say what counts as a drop.
type Thresholds struct {
	// MaxResourceDropPercent: a resource losing more than this share of
	// its objects (and at least MinDroppedObjects) dropped.
	MaxResourceDropPercent int64
	MinDroppedObjects      int64
	// MaxNamespacesGone: more namespaces than this gone is a drop.
	MaxNamespacesGone int64
	// Expiring are resources whose objects expire on their own (events
	// by kube-apiserver's --event-ttl, leases and masterleases with their
	// holders): fewer of them is no drop. The manifests still count them,
	// and a rehearsal's report and ebdctl diff still show them changing.
	Expiring []string
}

// ThresholdsOf reads the inspection settings of the strategy's
// StrategyPolicy (defaulted by internal/strategypolicy).
func ThresholdsOf(in strategypolicy.Inspection) Thresholds {
	return Thresholds{int64(in.MaxResourceDropPercent), int64(in.MinDroppedObjects), int64(in.MaxNamespacesGone),
		slices.Clone(in.ExpiringResources)}
}

// Drop is one thing that dropped.
type Drop struct {
	// Keyspace is the Kubernetes keyspace's prefix.
	Keyspace string
	// Resource is the resource that lost objects ("" for namespaces or a
	// whole keyspace).
	Resource string
	Before   int64
	After    int64
	// NamespacesGone names the namespaces that disappeared (when both
	// manifests list them).
	NamespacesGone []string
	// KeyspaceGone: the whole keyspace (Before objects) is gone.
	KeyspaceGone bool
}

func (d Drop) String() string {
	switch {
	case d.KeyspaceGone:
		return fmt.Sprintf("keyspace %s gone (%d objects)", d.Keyspace, d.Before)
	case d.Resource != "":
		return fmt.Sprintf("%s in %s: %d → %d", d.Resource, d.Keyspace, d.Before, d.After)
	case len(d.NamespacesGone) > 0:
		return fmt.Sprintf("namespaces gone from %s: %s", d.Keyspace, strings.Join(d.NamespacesGone, ", "))
	}
	return fmt.Sprintf("namespaces in %s: %d → %d", d.Keyspace, d.Before, d.After)
}

// Compare lists what dropped from prev to cur under t, largest loss
// first, from what prev lists. A resource of t.Expiring never drops: its
// objects go by design. A keyspace or a resource that cur does not
// list is gone only when cur's list proves it (manifest.Compare's rule):
// one cut from a list, to the manifest's bounds or to fit the inspection's
// report, is not known to have dropped and is not reported.
func Compare(prev, cur *driverv1alpha1.BackupManifest, t Thresholds) []Drop {
	var drops []Drop
	for _, k := range manifest.Compare(prev, cur) {
		if !k.InFrom || k.ObjectsTo == nil {
			continue
		}
		if !k.InTo {
			if *k.ObjectsFrom >= t.MinDroppedObjects {
				drops = append(drops, Drop{Keyspace: k.Prefix, Before: *k.ObjectsFrom, KeyspaceGone: true})
			}
			continue
		}
		drops = append(drops, resourceDrops(k, t)...)
		if d, ok := namespaceDrop(k, t); ok {
			drops = append(drops, d)
		}
	}
	sort.SliceStable(drops, func(i, j int) bool {
		return drops[i].Before-drops[i].After > drops[j].Before-drops[j].After
	})
	return drops
}

func resourceDrops(k manifest.KeyspaceDiff, t Thresholds) []Drop {
	var out []Drop
	for _, r := range k.Resources {
		if r.Delta == nil || slices.Contains(t.Expiring, r.Name) {
			continue
		}
		lost := -*r.Delta
		if lost >= t.MinDroppedObjects && lost*100 > t.MaxResourceDropPercent**r.From {
			out = append(out, Drop{Keyspace: k.Prefix, Resource: r.Name, Before: *r.From, After: *r.To})
		}
	}
	return out
}

func namespaceDrop(k manifest.KeyspaceDiff, t Thresholds) (Drop, bool) {
	before, after := *k.NamespacesFrom, *k.NamespacesTo
	if !k.NamespaceNamesUnknown {
		if int64(len(k.NamespacesOnlyInFrom)) > t.MaxNamespacesGone {
			return Drop{Keyspace: k.Prefix, Before: before, After: after, NamespacesGone: k.NamespacesOnlyInFrom}, true
		}
		return Drop{}, false
	}
	// Too many to list: only the count says something went.
	if before-after > t.MaxNamespacesGone {
		return Drop{Keyspace: k.Prefix, Before: before, After: after}, true
	}
	return Drop{}, false
}

// Message says what dropped, for a condition and an Event.
func Message(drops []Drop, prevBackup string) string {
	parts := make([]string, 0, len(drops))
	for _, d := range drops {
		parts = append(parts, d.String())
	}
	return textlimit.Note(fmt.Sprintf("since Backup %s: %s", prevBackup, strings.Join(parts, "; ")))
}
