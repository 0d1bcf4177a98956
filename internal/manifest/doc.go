// Package manifest is what the driver knows about a BackupManifest, the
// bounded summary of what an etcd holds: Counter counts keys into it (the
// inspection of a snapshot, the rehearsal's read-back and the live census
// all count with it), ShrinkKeyspaces cuts it to fit a report,
// CheckKeyspaces refuses what no Counter makes, and Compare and
// CompareTotals compare two of them for the content-drop guard, the
// rehearsal's report and ebdctl diff.
//
// Every comparison reads a list by one rule (whole.go): an entry missing
// from a whole list is a zero; missing from a list that was cut, to the
// manifest's bounds or to fit a report, it is unknown.
//
// It has no Kubernetes client: etcd-stage links it.
package manifest
