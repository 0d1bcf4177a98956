// Package cachetrim holds the cache transforms that keep, of each object
// the driver watches at scale, only what the driver reads from its cache.
// At 10,000 tenants' worth of history the caches are most of the driver's
// memory; what is dropped here is read live by the few paths that need it.
//
// A trimmed object carries the TrimmedAnnotation in its cached copy only
// (the API server's object is untouched), so a reader can tell a trimmed
// copy from the real thing and read the object live instead.
package cachetrim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
)

// TrimmedAnnotation marks a cached copy that lacks fields of the object.
const TrimmedAnnotation = "etcd-backup-driver.cozystack.io/cache-trimmed"

// Trimmed reports whether o is a trimmed cached copy: read it live to see
// all of it.
func Trimmed(o metav1.Object) bool {
	_, ok := o.GetAnnotations()[TrimmedAnnotation]
	return ok
}

// markTrimmed replaces o's annotations by the marker: no reader of a
// trimmed object reads its annotations from the cache.
func markTrimmed(o metav1.Object) {
	o.SetAnnotations(trimmedAnnotations)
}

// trimmedAnnotations is one map shared by every trimmed copy (a map each
// was a tenth of the heap): cached objects are never written to, and a
// client's Get or List hands out deep copies.
var trimmedAnnotations = map[string]string{TrimmedAnnotation: ""}

// stripManagedFields is what every transform does first: the driver never
// reads managed fields, and what repeats in metadata is shared.
func stripManagedFields(o metav1.Object) {
	o.SetManagedFields(nil)
	shareMeta(o)
}

// Plain drops managed fields from every object (cache.Options'
// DefaultTransform; a kind with its own transform does it there).
var Plain toolscache.TransformFunc = func(in any) (any, error) {
	if o, ok := in.(metav1.Object); ok {
		stripManagedFields(o)
	}
	return in, nil
}

// Snapshot keeps only the metadata and phase of an EtcdSnapshot that is
// history: Complete and handed to its Backup. (The driver's hand-over
// labels history, which takes it out of the cache; this trims history
// handed over before that label existed.) Only a BackupJob that did
// not record its end yet (a crash between the hand-over and its status
// write) reads such a snapshot whole, and it reads it live. A restore's
// safety snapshot (RestoreJobUIDLabel) is kept whole: the restore checks its
// destination while it runs.
var Snapshot toolscache.TransformFunc = func(in any) (any, error) {
	s, ok := in.(*etcdv1alpha2.EtcdSnapshot)
	if !ok {
		return Plain(in)
	}
	stripManagedFields(s)
	ref := metav1.GetControllerOf(s)
	_, safety := s.Labels[backupsv1alpha1.RestoreJobUIDLabel]
	if s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete || ref == nil || ref.Kind != "Backup" || safety {
		return s, nil
	}
	markTrimmed(s)
	s.Spec = etcdv1alpha2.EtcdSnapshotSpec{}
	s.Status = etcdv1alpha2.EtcdSnapshotStatus{Phase: s.Status.Phase}
	return s, nil
}

// BackupJob drops the message and conditions of a finished BackupJob: its
// controller only releases it, and Plans read its phase and times. `kubectl
// describe` and the plugin read the API server, not this cache.
var BackupJob toolscache.TransformFunc = func(in any) (any, error) {
	j, ok := in.(*backupsv1alpha1.BackupJob)
	if !ok {
		return Plain(in)
	}
	stripManagedFields(j)
	if !j.Status.Phase.IsTerminal() {
		return j, nil
	}
	markTrimmed(j)
	j.Status.Message, j.Status.Conditions = "", nil
	return j, nil
}

// HelmRelease keeps what a restore reads of an application's HelmRelease
// from the cache: its metadata, spec.suspend and readiness, and of its
// annotations only a restore's success seal (as an earlier driver wrote
// it: a restore running across the upgrade still reads it; the driver now
// seals in the capture). Values, chart and history (often the bulk of the
// object) are never read.
var HelmRelease toolscache.TransformFunc = func(in any) (any, error) {
	hr, ok := in.(*helmv2.HelmRelease)
	if !ok {
		return Plain(in)
	}
	stripManagedFields(hr)
	seal, sealed := hr.Annotations[backupsv1alpha1.RestoreSucceededAnnotation]
	markTrimmed(hr)
	if sealed {
		hr.Annotations = map[string]string{TrimmedAnnotation: "", backupsv1alpha1.RestoreSucceededAnnotation: seal}
	}
	hr.Spec = helmv2.HelmReleaseSpec{Suspend: hr.Spec.Suspend}
	hr.Status = helmv2.HelmReleaseStatus{ObservedGeneration: hr.Status.ObservedGeneration, Conditions: hr.Status.Conditions}
	return hr, nil
}

// Backup keeps a Backup whole (its signed fields are verified from the
// cache) but shares what repeats across the Backups of a namespace and
// of the platform: known label and driverMetadata keys, namespace,
// application, strategy, bucket, endpoint, the Verified condition and
// the destination in status.underlyingResources. A cached Backup costs
// about half as much.
//
// A Backup larger than any the driver writes (Oversized) keeps neither its
// driverMetadata nor its status.underlyingResources in the cache, and is
// marked trimmed: it cannot verify, and a tenant writing many of them
// cannot grow the driver's memory with them (Cozystack's Backup CRD bounds
// none of these fields).
var Backup toolscache.TransformFunc = func(in any) (any, error) {
	b, ok := in.(*backupsv1alpha1.Backup)
	if !ok {
		return Plain(in)
	}
	stripManagedFields(b)
	if Oversized(b) {
		b.Spec.DriverMetadata, b.Status.UnderlyingResources = nil, nil
		if len(b.Spec.ApplicationRef.Name) > maxName {
			b.Spec.ApplicationRef.Name = ""
		}
		markTrimmed(b)
	}
	shareRef(&b.Spec.ApplicationRef)
	shareRef(&b.Spec.StrategyRef)
	b.Spec.DriverMetadata = shareMap(b.Spec.DriverMetadata)
	shareConditions(b.Status.Conditions)
	if u := b.Status.UnderlyingResources; u != nil {
		u.Raw = shared.Bytes(u.Raw)
	}
	return b, nil
}

// Bounds of a Backup the driver writes, well above what it writes: 64
// driverMetadata entries, keys of at most 253 and values of at most 4096
// characters (what the driver's own Backup CRD enforced before Cozystack's
// replaced it), an application name of at most 253, and 64 KiB of
// status.underlyingResources (the peer's fields, a manifest cut to fit a
// 4 KiB report, a rehearsal record).
const (
	maxDriverMetadata = 64
	maxName           = 253
	maxMetaValue      = 4096
	maxUnderlying     = 64 << 10
)

// Oversized reports whether b is larger than any Backup the driver
// writes: a tenant's, made to take the driver's memory.
func Oversized(b *backupsv1alpha1.Backup) bool {
	if len(b.Spec.DriverMetadata) > maxDriverMetadata || len(b.Spec.ApplicationRef.Name) > maxName {
		return true
	}
	for k, v := range b.Spec.DriverMetadata {
		if len(k) > maxName || len(v) > maxMetaValue {
			return true
		}
	}
	return b.Status.UnderlyingResources != nil && len(b.Status.UnderlyingResources.Raw) > maxUnderlying
}
