// Package step is `etcd-stage capture` (see internal/tenantjobs/capture):
// it reads the chain's index, watches the tenant's etcd from the revision
// after the newest durable one, writes whole revisions into segments
// (internal/changelog), makes each durable in S3 with the tenant's key
// and rewrites the index, until it is stopped or the chain cannot go on.
//
// Memory is bounded whatever the etcd sends. The watch is read straight
// from its gRPC stream (clientv3's watcher buffers responses without
// limit when its reader is slower than the etcd) with fixed flow-control
// windows, so while a segment is being uploaded the etcd is made to wait,
// not buffered for. What the capture holds at most is the segment being
// built (SegmentBytes plus one revision, compressed), one revision being
// received (changelog.DefaultLimits.MaxRevisionBytes), three watch
// messages (one in each goroutine and one being decoded, each at most
// MaxMessageBytes) and the two gRPC windows: 62 MiB at the defaults,
// above the process's own few MiB. TestMemoryStaysBounded measures 20 to
// 30 MiB while a hostile etcd sends 120 MB faster than S3 takes it, and
// 105 MiB when the hand-over between the two goroutines is buffered.
package step
