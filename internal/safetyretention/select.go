// Package safetyretention bounds the safety Backups restores leave behind.
// Every RestoreJob records a safety Backup of the live cluster before it
// destroys anything; without a retention they accumulate for ever (one per
// restore, each with its EtcdSnapshot). Per namespace and application the
// newest DefaultKeep verified safety Backups are kept, plus every Backup an
// unfinished RestoreJob names (the one it restores from, and its own safety
// Backup, its way back), and those of a RestoreJob that failed after it
// deleted the cluster, until a person deletes that RestoreJob; the rest
// are deleted, and the driver's Backup cleanup then runs as for any
// deleted Backup.
//
// Only Backups that carry the safety label and that the driver signed are
// considered: the label alone is tenant-writable, and a Backup the driver
// cannot verify has no trustworthy application or time to order by.
package safetyretention

import (
	"sort"
	"time"
)

// DefaultKeep is how many safety Backups are kept per application.
const DefaultKeep = 3

// Candidate is a verified safety Backup.
type Candidate struct {
	// Name of the Backup.
	Name string
	// Application and TakenAt are the signed facts.
	Application string
	TakenAt     time.Time
}

// Select returns the names of the candidates to delete: all but the newest
// keep per application, never one in protected. Pure.
func Select(cands []Candidate, protected map[string]bool, keep int) []string {
	byApp := map[string][]Candidate{}
	for _, c := range cands {
		byApp[c.Application] = append(byApp[c.Application], c)
	}
	var out []string
	for _, list := range byApp {
		sort.Slice(list, func(i, j int) bool {
			if !list[i].TakenAt.Equal(list[j].TakenAt) {
				return list[i].TakenAt.After(list[j].TakenAt)
			}
			return list[i].Name > list[j].Name
		})
		for i, c := range list {
			if i >= keep && !protected[c.Name] {
				out = append(out, c.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
