// Package step is `etcd-stage inspect`, the step the inspection Job runs
// (internal/tenantjobs/inspection): it reads an etcd snapshot's bolt
// database and says what it holds: its revision, its compaction mark, its
// live keys, and, when the keyspace holds Kubernetes (kube-apiserver's
// /registry layout, or Kamaji's per-control-plane prefixes on a shared
// DataStore), object counts per resource and per namespace, bounded as a
// BackupManifest is.
//
// It runs inside the inspection Job on bytes fetched from the object store
// (with the staging step's checks); everything in the file is untrusted
// data. Its report is the one format of internal/tenantjobs/report; the
// counting and the bounds are internal/manifest's.
package step
