package shard

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Stamping wraps c so that every object it creates outside the driver's
// own namespace (driverNS) carries this shard's Label, unless it already
// has one: the driver's EtcdSnapshots, Backups, BackupJobs and staging Jobs
// land in the cache of the shard that made them. A replica only holds
// namespaces of its own shard, so its number is the namespace's; for
// tenant-writable kinds the admission policy sets the namespace's number
// anyway. Objects in driverNS (restore claims, captures) stay unlabelled:
// every shard must see every claim. Unsharded, c is returned as is.
func Stamping(c client.Client, s Shard, driverNS string) client.Client {
	if !s.Enabled() {
		return c
	}
	return stamping{Client: c, shard: s, driverNS: driverNS}
}

// stamping is the client Stamping returns.
type stamping struct {
	client.Client
	shard    Shard
	driverNS string
}

// Create labels obj, as Stamping says, and creates it.
func (c stamping) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if ns := obj.GetNamespace(); ns != "" && ns != c.driverNS {
		l := obj.GetLabels()
		if _, ok := l[Label]; !ok {
			if l == nil {
				l = map[string]string{}
			}
			l[Label] = c.shard.Value()
			obj.SetLabels(l)
		}
	}
	return c.Client.Create(ctx, obj, opts...)
}
