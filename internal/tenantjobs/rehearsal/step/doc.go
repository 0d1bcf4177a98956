// Package step is `etcd-stage rehearse`, the step inside a dry-run
// RestoreJob's Job (internal/tenantjobs/rehearsal): it stages the Backup's
// snapshot exactly as a real restore does (the staging step: size,
// sha256, trailer, the revision raise), restores the staged file into a
// scratch data directory with etcdutl's library, boots a throwaway
// single-member etcd in-process on loopback ports only, and reads it back through a client: the revision
// must be the staged one, reads below it must answer ErrCompacted, and a
// keys-only walk of the whole keyspace must count the same keys as the
// offline inspection of the staged file. The walk's counts (per
// Kubernetes resource and namespace) are what a restore would bring back.
//
// Nothing of the tenant's cluster is touched: the Job has no credentials
// for it and the throwaway etcd listens on 127.0.0.1 only. The scratch
// data is removed before the step exits.
//
// The step reports one line of JSON (Report, in the one format of
// internal/tenantjobs/report) in its termination message and exits with
// that format's codes: report.ExitSucceeded, ExitRetryable, or ExitRefused
// for bytes that are refused or a snapshot that does not boot or read back
// as staged.
//
// This package holds what the driver shares with the step: its options
// (Args, Parse) and its report (Line, ParseReport). The step itself is
// ./run, kept apart so the manager, which builds the Job and reads the
// report, does not link etcd's server.
package step
