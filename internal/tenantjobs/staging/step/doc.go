// Package staging is the staging step of an in-place restore: the
// etcd-stage binary, run by the driver as a Kubernetes Job, that turns a
// stored snapshot into the file the etcd-operator restores from.
//
// Why it exists: the etcd-operator restores with
// `etcdutl snapshot restore --skip-hash-check`, without --bump-revision or
// --mark-compacted, and cannot be changed. Restored that way, etcd's
// revision goes back from the live value to the snapshot's, and every
// Kubernetes client that saw a newer resourceVersion is stranded: watches
// from a "future" revision wait silently and new writes reuse
// resourceVersions already handed out. etcd's own answer
// (`--bump-revision N --mark-compacted`) writes the keyspace's latest
// revision N above the snapshot's and schedules a compaction at it, so a
// watch or read below it gets ErrCompacted (410 Gone to Kubernetes clients,
// which relist). Staging makes exactly that edit to the snapshot file
// itself, before the operator sees it, so the operator's plain restore
// keeps it: one record in bucket "key" at {main: target, sub: 0} and
// scheduledCompactRev = target in bucket "meta", as etcdutl does.
//
// Nothing the tenant can write is trusted. The expected size and sha256
// come from the driver's signed facts (the Job's arguments); the object is
// untrusted bytes, streamed (never buffered) to a temporary file next to
// the output while it is counted and hashed, refused as soon as it grows
// past the expected size, and refused if its size, sha256 or etcd's
// integrity trailer is wrong. Only then is it opened as a bolt database,
// edited, given a fresh trailer, synced and renamed into place, so the
// output path never holds a partial or unchecked file.
//
// The Job reports one line of JSON (Report, in the one format of
// internal/tenantjobs/report) in its termination message and exits with
// report.ExitSucceeded, ExitRetryable or ExitRefused; the driver's Job
// podFailurePolicy fails the Job at once on ExitRefused, and reads the
// report with ParseReport.
package step
