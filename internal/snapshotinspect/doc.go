// Package snapshotinspect reads an etcd snapshot's bolt database and says
// what it holds: its revision, its compaction mark, its live keys, and, when
// the keyspace holds Kubernetes (kube-apiserver's /registry layout, or
// Kamaji's per-control-plane prefixes on a shared DataStore), object counts
// per resource and per namespace, bounded as a BackupManifest is.
//
// It runs inside the inspection Job (etcd-stage inspect) on bytes fetched
// from the object store; everything in the file is untrusted data.
package snapshotinspect
