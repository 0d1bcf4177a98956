package changelog

import "time"

// EventType is what an event did to its key.
type EventType uint8

// The event types, with their bytes in the format.
const (
	Put    EventType = 1
	Delete EventType = 3
)

// Item bytes of a record (see the package documentation).
const (
	itemEnd         byte = 0x00
	itemPut         byte = 0x01
	itemLeasedPut   byte = 0x02
	itemDelete      byte = 0x03
	itemLeaseNote   byte = 0x04
	maxLeaseTTL          = 9_000_000_000 // etcd's lease.MaxLeaseTTL
	maxVarintLength      = 10
)

// Event is one change of one key.
type Event struct {
	Type  EventType
	Key   []byte
	Value []byte
	// Lease is the ID of the etcd lease a put attached the key to; 0
	// for none.
	Lease int64
}

// LeaseNote records the TTL a lease was granted with, as the capture
// learnt it the first time a put used the lease (etcd's watch carries
// the ID only). TTL 0: the lease was gone when the capture asked.
type LeaseNote struct {
	ID  int64
	TTL int64
}

// Revision is one etcd revision, whole.
type Revision struct {
	Revision int64
	// Time is when the capture had the revision whole.
	Time   time.Time
	Events []Event
	// Leases are notes about leases the events use.
	Leases []LeaseNote
}
