// Package tenantjobs is the house of the three Jobs the driver runs in
// tenants' namespaces: the restore's staging, a Backup's inspection and a
// dry run's rehearsal. Each has a step that runs in the Pod (etcd-stage's
// subcommand: its flags and its report), the Job's spec, and the
// controller that creates, watches and reads the Job; what they share
// lives once, here, so that a fix to one is a fix to all.
//
// The map of the house:
//
//	tenantjobs                 what every tenant Job shares (this package)
//	tenantjobs/report          the one report line every step writes and the driver reads
//	tenantjobs/staging         the staging Job's spec (the restore drives it: internal/restore, staging.go)
//	tenantjobs/staging/step    `etcd-stage stage`
//	tenantjobs/inspection      the inspection Job's spec and its controller
//	tenantjobs/inspection/step `etcd-stage inspect`
//	tenantjobs/rehearsal       the rehearsal Job's spec and the dry-run controller
//	tenantjobs/rehearsal/step  `etcd-stage rehearse`: its flags and report, which the driver links
//	tenantjobs/rehearsal/step/run  the step itself, which alone links etcd's server
//	tenantjobs/capture         `etcd-stage capture`'s options, report and progress record (point-in-time restore's change capture)
//	tenantjobs/capture/step    the capture itself
//	tenantjobs/capture/keeper  the capture controller: the capture Deployment, its grant, its record and window
//
// Arrows point down: a controller imports its Job's spec, the spec its
// step and this package, a step the staging step (every step fetches and
// checks its object as staging does, and the object a Job reads is its
// Object) and report; this package imports no step, and no step imports
// controller-runtime. The counting of an etcd's keys into a manifest and
// the comparison of two manifests are internal/manifest's, the paged walk
// of an etcd's keys internal/keywalk's.
//
// This package holds:
//
//   - hardening (harden.go): JobSpec and Container build the Job and its
//     containers (no service account token, non-root, read-only root,
//     no capabilities, seccomp, bounded CPU and memory, a deadline, a
//     TTL, a podFailurePolicy that ends the Job at once on a refusal),
//     and CredentialsEnv hands the step its S3 keys;
//   - names (names.go): RandomName and KeyedName, names a tenant cannot
//     take first;
//   - ownership (own.go): Mine and MyPod, whether a Job or a Pod is
//     exactly what the driver built;
//   - reading the report (podreport.go): ReadReport and ReportOf find the
//     Job's newest Pod it controls and read the step's report from its
//     termination message, strictly, checked against the exit code;
//   - the Job's outcome (outcome.go): OutcomeOf.
package tenantjobs
