package liverevision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/keywalk"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

// CensusTimeout bounds a census, dial included: a walk of every key of a
// large cluster takes longer than one read.
const CensusTimeout = 2 * time.Minute

// A census runs inside the driver, shared by every tenant, and reads an
// etcd its tenant controls (the tenant holds the root client certificate
// and can point the etcd-client Service at a server of its own). So what
// it reads and keeps is bounded, each bound far above a Kubernetes
// cluster's (whose keys are at most a few hundred bytes, under a few
// dozen prefixes); past any bound the census ends with a TooLargeError,
// and the live side is reported unread.
const (
	// MaxReplyBytes bounds one reply (gRPC's MaxCallRecvMsgSize; etcd's
	// client allows 2 GiB): a page of keywalk.PageSize keys of up to 2 KiB
	// each. A longer reply is refused before it is read.
	MaxReplyBytes = 2 << 20
	// MaxKeys bounds the keys walked.
	MaxKeys = 4_000_000
	// MaxKeyBytes bounds the bytes of all keys walked.
	MaxKeyBytes = 512 << 20
)

// CensusLimits bound what a census's Counter keeps: distinct key prefixes,
// and namespaces with (resource, namespace) pairs.
var CensusLimits = manifest.Limits{Keyspaces: 256, Entries: 50_000}

// Census is what the live cluster holds: its revision and its keys,
// counted per Kubernetes keyspace, resource and namespace, in the
// manifest's bounded form (a few KiB, whatever the cluster holds).
type Census struct {
	Revision int64
	// Now has Revision, Keys, Keyspaces and Truncated.
	Now driverv1alpha1.BackupManifest
}

// TooLargeError ends a census past one of its bounds. Its message names
// the bound in the driver's words only, so a tenant may read it.
type TooLargeError struct {
	// Bound says which bound was passed.
	Bound string
}

func (e *TooLargeError) Error() string {
	return "the live cluster is too large for the driver to count (" + e.Bound + ")"
}

// Census reads every key of the etcd in ns (keywalk.Walk: keys only, in
// pages, all at the revision of the first page) within the census's
// bounds: Count. It dials, checks and fails as Revision does;
// TenantMessage is what a tenant may read of an error.
func (r Reader) Census(ctx context.Context, ns string) (Census, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = CensusTimeout
	}
	var c Census
	err := r.with(ctx, ns, timeout, func(ctx context.Context, cli *clientv3.Client, addr string) error {
		var err error
		if c, err = Count(ctx, cli); err != nil {
			return fmt.Errorf("count the keys of etcd at %s: %w", addr, err)
		}
		return nil
	})
	if err != nil {
		return Census{}, err
	}
	return c, nil
}

// Count walks every key of kv into a bounded manifest.Counter and keeps
// only its summary. Past MaxKeys, MaxKeyBytes or CensusLimits it stops
// with a TooLargeError, as it does when a reply passes the client's
// MaxCallRecvMsgSize (MaxReplyBytes, which the client must set).
func Count(ctx context.Context, kv clientv3.KV) (Census, error) {
	counter := manifest.NewBoundedCounter(CensusLimits)
	var keys, size int64
	rev, err := keywalk.Walk(ctx, kv, 0, func(key []byte) error {
		keys++
		size += int64(len(key))
		switch {
		case keys > MaxKeys:
			return &TooLargeError{Bound: fmt.Sprintf("more than %d keys", MaxKeys)}
		case size > MaxKeyBytes:
			return &TooLargeError{Bound: fmt.Sprintf("more than %d MiB of keys", MaxKeyBytes>>20)}
		}
		counter.Add(key)
		if err := counter.Err(); err != nil {
			return &TooLargeError{Bound: strings.TrimPrefix(err.Error(), manifest.ErrTooMany.Error()+": ")}
		}
		return nil
	})
	if s, ok := status.FromError(err); ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max") {
		err = &TooLargeError{Bound: fmt.Sprintf("a reply larger than %d MiB", MaxReplyBytes>>20)}
	}
	if err != nil {
		return Census{}, err
	}
	ks, cut := counter.Keyspaces()
	return Census{Revision: rev, Now: driverv1alpha1.BackupManifest{Revision: rev, Keys: counter.Keys(), Keyspaces: ks, Truncated: cut}}, nil
}

// IsTooLarge reports whether err ended a census past a bound.
func IsTooLarge(err error) bool {
	var t *TooLargeError
	return errors.As(err, &t)
}
