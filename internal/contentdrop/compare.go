// Package contentdrop compares a Backup's manifest with the previous good
// one of the same application and says what dropped: a resource that lost
// more than a share of its objects, namespaces that disappeared, or a
// whole Kubernetes keyspace gone. A tenant whose namespaces were deleted
// keeps taking "successful" backups; this is what notices.
package contentdrop

import (
	"fmt"
	"sort"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
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
}

// ThresholdsOf reads the inspection settings of the strategy's
// StrategyPolicy (defaulted by internal/strategypolicy).
func ThresholdsOf(in strategypolicy.Inspection) Thresholds {
	return Thresholds{int64(in.MaxResourceDropPercent), int64(in.MinDroppedObjects), int64(in.MaxNamespacesGone)}
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

// Compare lists what dropped from prev to cur under t, largest loss first.
// A resource missing from a list that was cut (Truncated) is not known to
// have dropped and is not reported.
func Compare(prev, cur *backupsv1alpha1.BackupManifest, t Thresholds) []Drop {
	var drops []Drop
	curKS := map[string]*backupsv1alpha1.KeyspaceManifest{}
	for i := range cur.Keyspaces {
		curKS[cur.Keyspaces[i].Prefix] = &cur.Keyspaces[i]
	}
	for i := range prev.Keyspaces {
		p := &prev.Keyspaces[i]
		c, ok := curKS[p.Prefix]
		if !ok {
			if cur.Truncated && len(cur.Keyspaces) >= backupsv1alpha1.ManifestMaxKeyspaces {
				continue
			}
			if p.Objects >= t.MinDroppedObjects {
				drops = append(drops, Drop{Keyspace: p.Prefix, Before: p.Objects, KeyspaceGone: true})
			}
			continue
		}
		drops = append(drops, resourceDrops(p, c, cur.Truncated, t)...)
		if d, ok := namespaceDrop(p, c, t); ok {
			drops = append(drops, d)
		}
	}
	sort.SliceStable(drops, func(i, j int) bool {
		return drops[i].Before-drops[i].After > drops[j].Before-drops[j].After
	})
	return drops
}

func resourceDrops(p, c *backupsv1alpha1.KeyspaceManifest, curTruncated bool, t Thresholds) []Drop {
	now := map[string]int64{}
	for _, r := range c.Resources {
		now[r.Name] = r.Count
	}
	var out []Drop
	for _, r := range p.Resources {
		after, listed := now[r.Name]
		if !listed && curTruncated && len(c.Resources) >= backupsv1alpha1.ManifestMaxResources {
			continue
		}
		lost := r.Count - after
		if lost >= t.MinDroppedObjects && lost*100 > t.MaxResourceDropPercent*r.Count {
			out = append(out, Drop{Keyspace: p.Prefix, Resource: r.Name, Before: r.Count, After: after})
		}
	}
	return out
}

func namespaceDrop(p, c *backupsv1alpha1.KeyspaceManifest, t Thresholds) (Drop, bool) {
	complete := func(k *backupsv1alpha1.KeyspaceManifest) bool {
		return int64(len(k.NamespaceNames)) == k.Namespaces
	}
	if complete(p) && complete(c) {
		have := map[string]bool{}
		for _, n := range c.NamespaceNames {
			have[n] = true
		}
		var gone []string
		for _, n := range p.NamespaceNames {
			if !have[n] {
				gone = append(gone, n)
			}
		}
		if int64(len(gone)) > t.MaxNamespacesGone {
			return Drop{Keyspace: p.Prefix, Before: p.Namespaces, After: c.Namespaces, NamespacesGone: gone}, true
		}
		return Drop{}, false
	}
	// Too many to list: only the count says something went.
	if p.Namespaces-c.Namespaces > t.MaxNamespacesGone {
		return Drop{Keyspace: p.Prefix, Before: p.Namespaces, After: c.Namespaces}, true
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
