// Package capture is `etcd-stage capture`, the change capture of point-in-
// time restore, as the driver sees it: its options (Args, Parse) and its
// report (Line, ParseReport). The step itself, which links etcd's client,
// is internal/tenantjobs/capture/step.
//
// The capture runs in the tenant's own namespace, one Pod per application
// that turned capture on (a Deployment of one replica), with the tenant's
// etcd client certificate and the tenant's own S3 key, hardened like the
// other tenant Jobs: a hostile or stalled etcd costs that Pod only. It
// follows the etcd with one watch of the whole keyspace from the base
// Backup's revision and writes the changes as a chain of segments
// (internal/changelog) under <prefix>/changes/<base revision>/.
//
// It exits only when told to (SIGTERM: what it holds whole is made
// durable first, outcome Stopped, exit 0), when the chain cannot go on
// (outcome Gap, ExitGap: the watch's start was compacted, the etcd is
// not the one the chain follows, a revision is above the format's bound;
// the index says so too), when its arguments are unusable (Refused,
// ExitRefused), or after transient failures it could not ride out
// (Retryable, exit 1). It reports one line of JSON in its termination
// message, in the one format every step writes (internal/tenantjobs/report).
package capture
