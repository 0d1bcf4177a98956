package shard

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Confirming wraps c, whose reads come from a shard's caches, so that
// when a read of one of kinds finds nothing (a Get NotFound, an empty
// List) the answer is confirmed by the same read from live. A shard's
// cache holds only objects labelled with its number, and the objects the
// platform creates (a tenant's EtcdCluster, HelmRelease and member PVCs)
// may still carry another shard's label or none: created before the
// admission policy, or while it failed, or before their namespace moved.
// A restore must not take "not in my cache" for "gone". Reads that find
// something cost nothing more; an absence costs one live read. Unsharded,
// c is returned as is.
func Confirming(c client.Client, live client.Reader, s Shard, kinds ...client.Object) client.Client {
	if !s.Enabled() {
		return c
	}
	set := map[schema.GroupVersionKind]bool{}
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k, c.Scheme())
		if err != nil {
			panic(err) // the kinds are the driver's own, in its scheme
		}
		set[gvk] = true
	}
	return confirming{Client: c, live: live, kinds: set}
}

// confirming is the client Confirming returns.
type confirming struct {
	client.Client
	live  client.Reader
	kinds map[schema.GroupVersionKind]bool
}

// Get reads obj from the cache and, when it is not there and its kind
// is one to confirm, from live.
func (c confirming) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) && c.confirms(obj) {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return err
}

// List lists from the cache and, when that finds nothing of a kind to
// confirm, from live.
func (c confirming) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if err == nil && meta.LenList(list) == 0 && c.confirms(list) {
		return c.live.List(ctx, list, opts...)
	}
	return err
}

// confirms reports whether o (an object or a list) is of a kind to
// confirm live.
func (c confirming) confirms(o runtime.Object) bool {
	gvk, err := apiutil.GVKForObject(o, c.Scheme())
	if err != nil {
		return false
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return c.kinds[gvk]
}
