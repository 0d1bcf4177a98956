// Package operator is the sandbox's stand-in for the etcd-operator
// (etcd-operator.cozystack.io/v1alpha2), for machines with no kubelet. It
// reproduces the operator's observable contract and nothing more:
//
//   - EtcdCluster: a seed member starts first (restored from
//     spec.bootstrap.restore.source.s3 when set: the exact object is
//     downloaded with the named Secret's credentials and restored with
//     etcdutl's library), then members join one at a time until
//     spec.replicas run. Members are real etcd processes on loopback.
//     Status carries clusterID, readyMembers and the Available, Progressing
//     and Degraded conditions with the operator's reasons. Deleting the
//     cluster stops its processes and removes their data.
//   - EtcdSnapshot: Pending, then Started while a "job" streams
//     Maintenance.Snapshot to S3 at the operator's object key, then Complete
//     with status.artifact {uri, sizeBytes, sha256:<hex>} or Failed.
//
// Differences from a real cluster, all invisible to the driver: no Pods,
// PVCs, Services or Jobs exist; TLS and auth settings are accepted but the
// members serve plain HTTP on 127.0.0.1; endpoints are published in a
// ConfigMap <cluster>-sandbox-endpoints so that scripts can reach the data.
package operator
