// Package provenance lets the driver tell the Backups it recorded from
// Backups anyone else wrote. A tenant can create and edit Backups in its own
// namespace (the kind has no status subresource), so nothing a Backup says
// is trusted by itself: deleting one may delete an S3 object, restoring one
// replaces a cluster, and retention orders them by time.
//
// When the driver records a Backup it signs the facts that matter — the
// namespace and name, the application and Plan, the exact S3 location
// (bucket, endpoint, region, path style, object key and, from signature
// v2 on, the key prefix new snapshots go under), the credentials
// Secret, the deletion policy, the snapshot's name and UID, the time it was
// taken, its size and checksum, and the source etcd version — with HMAC-SHA256
// under a key kept in a Secret in the driver's own namespace, which tenants
// cannot read. The facts are read back from the Backup the same way the
// restore and deletion paths read them (internal/artifact), so a Backup
// verifies exactly when what those paths would act on is what the driver
// wrote. Any edit, a hand-written Backup, or one made by another driver is
// unverified; callers decide what an unverified Backup may still do.
//
// The key Secret holds any number of keys; the one named by its "active"
// entry signs, and every key in it verifies, so keys rotate without
// invalidating older Backups.
package provenance
