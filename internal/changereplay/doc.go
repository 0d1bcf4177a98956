// Package changereplay turns a base Backup's snapshot and a verified
// chain of captured changes (internal/changelog) into a snapshot of the
// etcd at a chosen point: a revision, or the newest revision the capture
// received at or before a time. The staging and rehearsal Jobs use it
// (through internal/tenantjobs/pointreplay; never the driver): the result
// is staged like any snapshot.
//
// Nothing is applied before every segment needed, and the chain linking
// them to the base, is verified: a corrupted, swapped, reordered or
// missing segment fails with its changelog error naming it. The base is
// restored with etcdutl's library into a throwaway single-member etcd on
// loopback (internal/scratchetcd) and each captured revision is applied as
// one transaction of its events in order, so the replayed etcd's
// revisions are the original's: every transaction's revision is checked
// (ErrDiverged), and keys carry the create and mod revisions and versions
// they had. At the target the etcd is snapshotted and stopped.
//
// Leases. etcd's watch tells which lease a put attached a key to, not the
// lease itself, and a throwaway etcd would expire leases on its own clock
// mid-replay, deleting keys in revisions of its own. So the scratch etcd
// holds every lease with etcd's largest TTL while it replays: the base's
// (their TTLs raised in the restored data before it boots) and those the
// chain uses (granted under their original IDs before the first put that
// needs them). Nothing expires, nothing is revoked but by the captured
// deletions. The snapshot then gets each lease's real TTL back: a base
// lease its own, a later one the TTL the capture noted when it first saw
// it (a lease already gone when the capture asked, 1 second). Restored,
// leased keys (Kubernetes Events, the API servers' endpoint leases) are
// attached as they were and expire their lease's TTL after the restored
// etcd starts, as after any snapshot restore.
//
// Likewise the base's auth switch is turned off and its alarms cleared
// while the scratch etcd runs (its client has no user; a NOSPACE alarm
// would refuse every write), and both are put back in the snapshot.
package changereplay
