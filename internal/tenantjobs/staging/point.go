package staging

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// A restore to a point replays the chain onto the base in the staging
// Job's restore container (pointreplay/run.Replay): a throwaway etcd runs in
// that process, its data on the claim. The container and the claim are
// sized for it, within fixed bounds.

// PointChangesRoom is the claim's room for the changes of a restore to a
// point, above the base's copies: the segments as fetched, the scratch
// etcd's write-ahead log (files of 64 MiB preallocated) and what the
// changes add to its database and to its snapshot. 2 GiB holds several
// hundred MiB of changes (uncompressed; a day of a control plane writing
// 10 changes a second of 400 bytes is about 350 MB). A chain that needs
// more fills the claim: the step fails as VolumeFailed, is retried and
// ends StagingFailed, before anything is destroyed.
const PointChangesRoom = 2 << 30

// pointRoom is the claim's room for s's replay: the scratch etcd's
// restored base and the replay's snapshot of it (the downloaded base and
// the staged file are counted already), and PointChangesRoom.
func pointRoom(s Spec) int64 {
	if s.Point == nil {
		return 0
	}
	return 2*s.Restore.Size + PointChangesRoom
}

// Memory of a restore container that replays: the scratch etcd keeps
// its key index in memory and maps its database (pages it touches count
// against the limit), so the limit grows with the base's size, from
// PointMemoryFloor up to PointMemoryCeiling. A base too large for the
// ceiling is killed (OOM), retried and ends StagingFailed before
// anything is destroyed.
const (
	PointMemoryRequest = 256 << 20
	PointMemoryFloor   = 512 << 20
	PointMemoryCeiling = 4 << 30
)

// PointMemoryLimit is the restore container's memory limit for a base
// of size bytes.
func PointMemoryLimit(size int64) int64 {
	return min(max(PointMemoryFloor+size, PointMemoryFloor), PointMemoryCeiling)
}

// pointMemory is the request and limit of a container replaying onto a
// base of size bytes.
func pointMemory(size int64) (request, limit string) {
	return resource.NewQuantity(PointMemoryRequest, resource.BinarySI).String(),
		resource.NewQuantity(PointMemoryLimit(size), resource.BinarySI).String()
}
