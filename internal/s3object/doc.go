// Package s3object is the driver's own access to stored snapshots: reading
// the one credentials Secret a Backup names, and stat, read, check and
// delete of one exact object, always through the endpoint policy. The
// etcd-operator writes and restores snapshots; the driver only looks at
// them before a restore destroys anything, and deletes them by policy.
package s3object
