package claim

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultSweepInterval is how often the Sweeper looks for stale claims.
const DefaultSweepInterval = 10 * time.Minute

// Sweeper removes claim Leases whose holder is gone (HolderGone): a
// RestoreJob whose finalizer was removed by hand, or whose namespace was
// deleted, never releases its claim, and a Lease left behind would hold
// every later BackupJob and RestoreJob of that namespace's cluster and
// stay in the driver's namespace forever. A restore breaks such a claim
// when it meets one; the Sweeper removes the ones nobody meets.
type Sweeper struct {
	// Client deletes Leases.
	Client client.Client
	// Reader lists Leases and reads RestoreJobs, live.
	Reader client.Reader
	// Namespace is where the claims live (the driver's).
	Namespace string
	// Interval between sweeps; 0 means DefaultSweepInterval, a negative
	// value disables sweeping.
	Interval time.Duration
}

// Start sweeps at once and then every Interval until ctx ends; it is a
// manager Runnable.
func (s *Sweeper) Start(ctx context.Context) error {
	interval := s.Interval
	if interval < 0 {
		return nil
	}
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := s.Sweep(ctx); err != nil {
			log.FromContext(ctx).Error(err, "sweep stale restore claims")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection: one replica sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Sweep removes every claim whose holder is gone and returns how many. The
// delete is conditioned on the Lease's UID, so a claim taken since is kept.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	var leases coordinationv1.LeaseList
	if err := s.Reader.List(ctx, &leases, client.InNamespace(s.Namespace),
		client.MatchingLabels{ComponentLabel: ComponentValue}); err != nil {
		return 0, fmt.Errorf("list restore claims: %w", err)
	}
	removed := 0
	for i := range leases.Items {
		lease := &leases.Items[i]
		h := holderOf(lease)
		gone, err := HolderGone(ctx, s.Reader, h)
		if err != nil {
			return removed, err
		}
		if !gone {
			continue
		}
		err = s.Client.Delete(ctx, lease, client.Preconditions{UID: &lease.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return removed, fmt.Errorf("remove stale restore claim %s: %w", lease.Name, err)
		}
		if err == nil {
			removed++
			sweptTotal.Inc()
			log.FromContext(ctx).Info("removed a restore claim whose holder is gone", "lease", lease.Name,
				"namespace", h.Namespace, "restoreJob", h.Name)
		}
	}
	return removed, nil
}
