// Package strategypolicy is where the driver reads the platform admin's
// settings for an Etcd strategy: the StrategyPolicy of the strategy's name
// (etcd-backup-driver.cozystack.io), with every default filled in. Cozystack's
// Etcd strategy kind serves only the destination, so these settings live in
// the driver's own kind; every reader asks here (Of, Get, List) and nowhere
// else, so a setting has one meaning and one default.
//
// The package also holds the one rule that spans the two objects (Check: a
// brokered strategy's bucket and endpoint are literal) and the small
// controller that reports it on the StrategyPolicy's Valid condition.
package strategypolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Defaults of what a StrategyPolicy leaves unset, and of a strategy that
// has none. The StrategyPolicy CRD defaults to the same values
// (test/apivalidation proves it), so what kubectl shows is what applies.
const (
	DefaultDeletionPolicy               = driverv1alpha1.DeletionPolicyRetain
	DefaultMaxResourceDropPercent int32 = 50
	DefaultMinDroppedObjects      int32 = 5
	DefaultMaxNamespacesGone      int32 = 0

	DefaultSegmentSeconds  int32 = 10
	DefaultMaxSegmentBytes int64 = 4 << 20
	DefaultMaxLagSeconds   int32 = 300
	DefaultCaptureMemMiB   int32 = 128
)

// DefaultExpiringResources are the resources whose objects expire on their
// own (events by their TTL, leases and the API servers' masterleases by
// their holders' renewals): left out of the content-drop check unless the
// policy says otherwise.
func DefaultExpiringResources() []string { return []string{"events", "leases", "masterleases"} }

// Policy is the effective policy of one Etcd strategy: every field set.
type Policy struct {
	// Name is the strategy's name, and so the StrategyPolicy's.
	Name string
	// Found says a StrategyPolicy exists; without one every default applies.
	Found bool
	// UID is the StrategyPolicy's ("" when there is none).
	UID types.UID
	// Deleting says the StrategyPolicy is being deleted: its settings
	// still apply until it is gone, but the credential broker issues no
	// more keys (it is removing them).
	Deleting bool

	// DeletionPolicy is recorded on each Backup taken through the strategy.
	DeletionPolicy driverv1alpha1.DeletionPolicy
	// AllowHTTPEndpoint lets the strategy's endpoint be plain http.
	AllowHTTPEndpoint bool
	// CredentialBroker, when set, makes the driver issue per-tenant keys.
	CredentialBroker *driverv1alpha1.CredentialBroker
	// Inspection is what the driver checks after a snapshot lands.
	Inspection Inspection
	// Retention is the admin's defaults and bounds for Plans (nil fields:
	// no default, no bound).
	Retention driverv1alpha1.Retention
	// PointInTime is what the admin allows of point-in-time capture.
	PointInTime PointInTime
}

// PointInTime is the effective point-in-time settings
// (driverv1alpha1.PointInTime).
type PointInTime struct {
	// Enabled: tenants may turn capture on.
	Enabled bool
	// SegmentInterval and MaxSegmentBytes bound a segment.
	SegmentInterval time.Duration
	MaxSegmentBytes int64
	// MaxLag is how far behind now the newest durable change may fall.
	MaxLag time.Duration
	// MemoryMiB is the capture container's memory.
	MemoryMiB int32
}

// Inspection is the effective inspection settings.
type Inspection struct {
	// Disabled: no manifest, no content-drop guard.
	Disabled bool
	// MaxResourceDropPercent, MinDroppedObjects, MaxNamespacesGone: what
	// counts as a content drop (driverv1alpha1.Inspection).
	MaxResourceDropPercent int32
	MinDroppedObjects      int32
	MaxNamespacesGone      int32
	// ExpiringResources are left out of the content-drop check.
	ExpiringResources []string
}

// Brokered reports whether the strategy issues per-tenant keys.
func (p Policy) Brokered() bool { return p.CredentialBroker != nil }

// AllowsHTTP reports whether endpoint is plain http and the policy allows
// it: what the driver's checks and Jobs are told. An https endpoint needs
// no allowance (false).
func (p Policy) AllowsHTTP(endpoint string) bool {
	return p.AllowHTTPEndpoint && strings.HasPrefix(strings.ToLower(endpoint), "http://")
}

// Effective is the policy sp says for the strategy named name, with every
// default; sp nil (no StrategyPolicy) is all defaults.
func Effective(name string, sp *driverv1alpha1.StrategyPolicy) Policy {
	p := Policy{
		Name:           name,
		DeletionPolicy: DefaultDeletionPolicy,
		Inspection: Inspection{
			MaxResourceDropPercent: DefaultMaxResourceDropPercent,
			MinDroppedObjects:      DefaultMinDroppedObjects,
			MaxNamespacesGone:      DefaultMaxNamespacesGone,
			ExpiringResources:      DefaultExpiringResources(),
		},
		PointInTime: PointInTime{
			SegmentInterval: time.Duration(DefaultSegmentSeconds) * time.Second,
			MaxSegmentBytes: DefaultMaxSegmentBytes,
			MaxLag:          time.Duration(DefaultMaxLagSeconds) * time.Second,
			MemoryMiB:       DefaultCaptureMemMiB,
		},
	}
	if sp == nil {
		return p
	}
	s := sp.Spec
	p.Found, p.UID, p.Deleting = true, sp.UID, !sp.DeletionTimestamp.IsZero()
	if s.DeletionPolicy != "" {
		p.DeletionPolicy = s.DeletionPolicy
	}
	p.AllowHTTPEndpoint = s.AllowHTTPEndpoint
	if s.CredentialBroker != nil {
		p.CredentialBroker = s.CredentialBroker.DeepCopy()
	}
	if in := s.Inspection; in != nil {
		p.Inspection.Disabled = in.Disabled
		setInt(&p.Inspection.MaxResourceDropPercent, in.MaxResourceDropPercent)
		setInt(&p.Inspection.MinDroppedObjects, in.MinDroppedObjects)
		setInt(&p.Inspection.MaxNamespacesGone, in.MaxNamespacesGone)
		if in.ExpiringResources != nil {
			// An empty list is a choice: every resource is checked.
			p.Inspection.ExpiringResources = slices.Clone(in.ExpiringResources)
		}
	}
	if s.Retention != nil {
		p.Retention = *s.Retention.DeepCopy()
	}
	if pit := s.PointInTime; pit != nil {
		p.PointInTime.Enabled = pit.Enabled
		if pit.SegmentSeconds != nil {
			p.PointInTime.SegmentInterval = time.Duration(*pit.SegmentSeconds) * time.Second
		}
		if pit.MaxSegmentBytes != nil {
			p.PointInTime.MaxSegmentBytes = *pit.MaxSegmentBytes
		}
		if pit.MaxLagSeconds != nil {
			p.PointInTime.MaxLag = time.Duration(*pit.MaxLagSeconds) * time.Second
		}
		setInt(&p.PointInTime.MemoryMiB, pit.MemoryMiB)
	}
	return p
}

func setInt(dst *int32, v *int32) {
	if v != nil {
		*dst = *v
	}
}

// Of returns the effective policy of the Etcd strategy named strategy,
// read through r (the manager's cache): its StrategyPolicy's settings with
// the defaults, or all defaults when there is none.
func Of(ctx context.Context, r client.Reader, strategy string) (Policy, error) {
	var sp driverv1alpha1.StrategyPolicy
	err := r.Get(ctx, client.ObjectKey{Name: strategy}, &sp)
	switch {
	case apierrors.IsNotFound(err):
		return Effective(strategy, nil), nil
	case err != nil:
		return Policy{}, fmt.Errorf("read StrategyPolicy %q: %w", strategy, err)
	}
	return Effective(strategy, &sp), nil
}
