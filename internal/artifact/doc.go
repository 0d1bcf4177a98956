// Package artifact is the one place that knows how an Etcd Backup records
// where its snapshot lives: the driverMetadata keys and the
// status.underlyingResources payload (both compatible with the Cozystack
// driver, so either driver can restore the other's Backups), the
// etcd-operator's S3 object-key rule, and how a restore turns a Backup back
// into the exact object to read.
package artifact
