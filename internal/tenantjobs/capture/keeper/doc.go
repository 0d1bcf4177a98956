// Package keeper is the driver's side of point-in-time capture (issue
// 39): for every Etcd Plan whose tenant turned capture on (the Plan's
// etcd-backup-driver.cozystack.io/point-in-time annotation) and whose
// StrategyPolicy allows it (spec.pointInTime.enabled), it keeps one
// capture running in the tenant's namespace after the Plan's newest good
// Backup, and shows the recoverable window.
//
// Per Plan it keeps, under one keyed name (tenantjobs.KeyedName of the
// Plan's UID, which the tenant cannot compute): a CaptureProgress (the
// record, owned by the Plan), and, owned by that record, a ServiceAccount,
// a Role that may patch that one record's status and nothing else, its
// RoleBinding, and a Deployment of one replica running `/etcd-stage
// capture` from the base Backup's revision (tenantjobs.DeploymentSpec:
// hardened as every tenant Job, the tenant's etcd client certificate, the
// tenant's own S3 key from the base Backup's Secret, the projected token
// of that ServiceAccount, no platform credential). A newer good Backup
// rolls the Deployment onto a new chain; turning capture off removes
// them. An object at that name that the driver did not make (not
// controlled by the record) is never adopted, changed or deleted.
//
// The capture Pod writes its chain's progress into the record's status
// (at most twice a minute); the driver watches the record, derives the
// window and the Capturing condition from it, exports the lag
// (etcd_backup_driver_capture_lag_seconds, computed when scraped), and
// on a gap ends the window, says so, stops the capture and creates a new
// base BackupJob for the Plan at once. The progress is tenant input (the
// tenant can run a Pod as that ServiceAccount): it moves only what is
// shown and at most one BackupJob per chain, never what a restore reads.
package keeper
