// Package tenantjobs is what every Job the driver runs in a tenant's
// namespace shares (the restore's staging, a Backup's inspection, a dry
// run's rehearsal), so that a fix to one is a fix to all:
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
//
// The report's format is internal/tenantjobs/report, linked into
// etcd-stage as well.
package tenantjobs
