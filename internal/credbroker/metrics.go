package credbroker

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// keysDeleted counts the tenant keys the broker deleted at once
	// because they could reach beyond their tenant's scope.
	keysDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcd_backup_driver_credential_broker_unsafe_keys_deleted_total",
		Help: "Tenant keys the credential broker deleted at once because they could reach beyond their tenant's prefix, by why (no-own-policy, policy-not-scope, not-owner-parent, not-brokers, prefix-holds-another-strategy).",
	}, []string{"strategy", "why"})
	// platformKeys is served by the replica that leads (the controller
	// runs there only).
	platformKeys = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcd_backup_driver_credential_broker_platform_keys",
		Help: "Service accounts of a brokered strategy's platform credential itself (the broker issues none), by whether they have a policy of their own (own) or every right of the platform credential (inherited).",
	}, []string{"strategy", "policy"})
)

func init() {
	metrics.Registry.MustRegister(keysDeleted, platformKeys)
}

// countPlatformKeys publishes how many keys the platform credential has
// of its own, after the sweep deleted strategy's tenant keys of the
// layout before owners had parents of their own. The broker issues none
// there: what remains is another strategy's old-layout key (its sweep
// deletes it) or someone else's, and one with no policy of its own is as
// strong as the platform credential (audit-keys finds and removes them).
func (b *Broker) countPlatformKeys(ctx context.Context, p Provider, strategy string) error {
	keys, err := p.PlatformKeys(ctx)
	if err != nil {
		return err
	}
	own, inherited := 0, 0
	for _, k := range keys {
		if k.Inherits {
			inherited++
		} else {
			own++
		}
	}
	platformKeys.WithLabelValues(strategy, "own").Set(float64(own))
	platformKeys.WithLabelValues(strategy, "inherited").Set(float64(inherited))
	return nil
}

// forgetStrategy drops a deleted strategy's series.
func forgetStrategy(strategy string) {
	platformKeys.DeletePartialMatch(prometheus.Labels{"strategy": strategy})
}
