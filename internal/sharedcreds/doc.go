// Package sharedcreds notices when namespaces that back up with the same Etcd
// strategy use the same S3 access key, and says so on the strategy (the
// SharedCredentials condition and Events), in a metric and, through them, in
// the chart's EtcdBackupSharedCredentials alert and `kubectl etcd-backup
// status -A`.
//
// A shared key is the Cozystack default (one key pair copied into every
// tenant namespace) and it defeats every check the driver makes: a tenant
// that can read its own credentials Secret can list, overwrite and delete
// the other tenants' snapshots with any S3 client.
//
// What it keeps: for each strategy, for each namespace known to back up with
// it, the name of the credentials Secret the strategy renders there and a
// 16-byte HMAC-SHA256 of the access key id under a key drawn at random when
// the process starts. Nothing leaves the process but counts and namespace
// names: the digests are never logged, written or exported, and since the
// key lives only in memory they mean nothing elsewhere (nor after a restart,
// when they are read again).
//
// Where the namespaces come from, without ever listing Secrets: the
// BackupJob controller tells the Tracker which Secret each job renders
// (Tracker.Observe, at no cost to the job), and every resync interval the
// controller adds the namespaces holding Backups of the strategy in the
// manager's cache (with the Secret each newest Backup recorded). Each
// namespace's Secret is then read live, by name, at most ReadsPerSecond a
// second; a namespace that is gone or terminating, or whose Secret is gone or
// holds no key, drops out.
package sharedcreds
