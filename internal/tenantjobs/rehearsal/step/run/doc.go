// Package run is `etcd-stage rehearse` itself (its flags and report are
// package step, one up): it stages the Backup's object with the staging
// step, restores the staged file with etcdutl's library, boots a
// throwaway etcd in-process (etcd's embed package) on loopback ports with
// no peers, reads it back through a client, writes the report and
// removes everything it wrote. Only etcd-stage links it.
package run
