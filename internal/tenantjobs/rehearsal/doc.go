// Package rehearsal runs dry-run RestoreJobs (spec.options.dryRun: true)
// of the Etcd strategy. It keeps the rehearsal Job's spec (build.go) and
// the controller that drives it (controller.go, reconcile.go,
// preflight.go, start.go, end.go, compare.go, setup.go; point.go for a
// dry run to a point); the step the Job runs, `etcd-stage
// rehearse`, is ./step (its flags and report, which the driver links) and
// ./step/run (the step itself, which alone links etcd's server).
//
// The controller checks the request as a real restore's preflight does,
// counts what the live cluster holds, and runs the rehearsal Job, which in
// the tenant's namespace, from the driver's own image, stages the Backup's
// snapshot exactly as a real restore would, boots a throwaway etcd from it
// on loopback inside the Pod, reads it back and reports what it holds. It
// then reports on the RestoreJob what a real restore would change
// (compared by internal/manifest's one rule for a list that was cut) and
// records the outcome on the Backup (status.underlyingResources.lastRehearsal). Cozystack's
// RestoreJob CRD serves no status field for the report: the rehearsal's
// start (the live revision, the Job's floor) and its report live in the
// driver's signed annotation (internal/rehearsalrecord, start.go), the
// summary in status.message and the Ready condition. A dry run counts the
// live cluster at most once: one whose start cannot be recorded or read
// back ends (RehearsalUnrecorded) instead of counting again.
//
// A rehearsal changes nothing live: no claim, no safety snapshot, no
// fence, no HelmRelease suspension, no EtcdCluster write. Its only writes
// are the RestoreJob's status and its record annotation, the rehearsal
// Job, the Backup's
// status.underlyingResources.lastRehearsal and Events. internal/restore
// ignores dry runs. The Pod has no service account token and no
// credentials but the bucket's read keys, and works in an emptyDir.
//
// The Job is hardened as every tenant Job is (tenantjobs.JobSpec). The
// tenant can create Jobs in its namespace, with any labels and owner
// references: the driver names its Job with a name keyed by its
// provenance key (tenantjobs.KeyedName), which no tenant can compute
// before the Job exists, reads only the Job of that name, and believes it
// only when it is exactly what the driver built (tenantjobs.Mine: the
// labels, the owner reference and the Pod template, all together; the
// owner reference alone proves nothing, anyone can copy it), and reads
// the report of a Pod the Job controls only (tenantjobs.ReadReport).
package rehearsal
