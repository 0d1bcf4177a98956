// Package step is `etcd-stage rehearse` (see internal/rehearse): it stages
// the Backup's object with internal/tenantjobs/staging/step, restores the staged file with
// etcdutl's library, boots a throwaway etcd in-process (etcd's embed
// package) on loopback ports with no peers, reads it back through a
// client, writes the report and removes everything it wrote.
package step
