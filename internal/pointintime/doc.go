// Package pointintime holds the driver's one rule for a base Backup's
// chain of captured changes (internal/changelog): which revision the
// chain follows (the revision of the manifest the driver signed for the
// Backup), where the chain lives (next to the Backup's snapshot, under
// changelog.ChainPrefix), and what links it to the Backup (the Backup's
// recorded sha256 as the chain's genesis). The capture keeper starts
// chains with it, the restore and the dry run find the chain of the base
// they chose with it, and the Backup's deletion deletes the chain with it.
//
// It also chooses the base of a restore (or dry run) to a point (Choose:
// the newest good, recorded, inspected Backup of the application at or
// before it), pins that choice on the RestoreJob in a signed annotation
// (Resolve, Pin), and names the Backups a RestoreJob reads (Reads), which
// deletion and retention keep.
package pointintime
