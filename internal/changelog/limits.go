package changelog

// Limits bound what a reader accepts and a writer produces. A segment
// that breaks one is refused with ErrTooLarge before the memory is taken.
type Limits struct {
	// MaxRevisionBytes bounds one revision's encoded items: the most a
	// reader holds at once, and the most the capture buffers for a
	// revision it has not received whole.
	MaxRevisionBytes int64
	// MaxRevisionEvents bounds the events of one revision (each becomes
	// an operation of one transaction when replayed).
	MaxRevisionEvents int64
	// MaxRawBytes bounds a segment's decompressed body.
	MaxRawBytes int64
}

// DefaultLimits are the bounds of the format: a revision of up to 16 MiB
// (ten times etcd's default request limit, far above any Kubernetes
// transaction; larger ones come only from deleting huge ranges or
// revoking a lease held by very many keys) and 128 Ki events, and a
// segment of up to 64 MiB decompressed.
var DefaultLimits = Limits{
	MaxRevisionBytes:  16 << 20,
	MaxRevisionEvents: 128 << 10,
	MaxRawBytes:       64 << 20,
}

// MaxStoredBytes is the largest object a segment within l can be: the
// header and its body, which DEFLATE grows by 5 bytes per 64 KiB block
// when the data does not compress.
func (l Limits) MaxStoredBytes() int64 {
	return int64(HeaderSize) + l.MaxRawBytes + l.MaxRawBytes/1024 + 4096
}
