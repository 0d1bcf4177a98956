// Package s3object is the driver's own access to S3 objects: reading the
// one credentials Secret a Backup names, and stat, read, check, write and
// delete of one exact object, always through the endpoint policy. The
// etcd-operator writes and restores snapshots; the driver looks at them
// before a restore destroys anything and deletes them by policy. The one
// writer here is the change capture (internal/tenantjobs/capture), which
// writes a tenant's change segments with the tenant's own key.
package s3object
