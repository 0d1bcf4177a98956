// Package informerguard keeps the driver to one informer per kind. A
// controller-runtime cache starts a separate informer, holding every object
// of the kind again, for each form an object is read in: typed, metadata
// only (metav1.PartialObjectMetadata) or unstructured. A typed read of a
// kind otherwise watched as metadata only would silently start a second,
// full cache of that kind; this cache refuses it instead, with an error
// naming the kind, so the mistake fails a test rather than costing memory.
package informerguard

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Form is how a kind is cached.
type Form string

// The forms a controller-runtime cache can hold a kind in, one informer each.
const (
	Typed        Form = "typed"
	Metadata     Form = "metadata"
	Unstructured Form = "unstructured"
)

// Cache is a cache.Cache that serves each kind in the first form it was
// asked for and refuses any other form of it.
type Cache struct {
	cache.Cache
	scheme *runtime.Scheme

	mu    sync.Mutex
	forms map[schema.GroupVersionKind]Form
}

// New is a cache.NewCacheFunc (ctrl.Options.NewCache) building a guarded
// controller-runtime cache.
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return Declared(nil)(config, opts)
}

// Declared is like New, with the form of some kinds fixed before any read:
// a read of a kind declared Metadata in another form is refused even when
// it comes first, so which controller starts first cannot decide the form.
func Declared(forms map[schema.GroupVersionKind]Form) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(config, opts)
		if err != nil {
			return nil, err
		}
		g := Wrap(c, opts.Scheme)
		for gvk, form := range forms {
			g.forms[gvk] = form
		}
		return g, nil
	}
}

// Wrap guards c; scheme resolves typed objects' kinds.
func Wrap(c cache.Cache, scheme *runtime.Scheme) *Cache {
	return &Cache{Cache: c, scheme: scheme, forms: map[schema.GroupVersionKind]Form{}}
}

// Kinds is each kind asked for so far and its form.
func (c *Cache) Kinds() map[schema.GroupVersionKind]Form {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[schema.GroupVersionKind]Form, len(c.forms))
	for k, v := range c.forms {
		out[k] = v
	}
	return out
}

// check records obj's kind in its form, or refuses a second form.
func (c *Cache) check(obj runtime.Object) error {
	gvk, form, err := c.kindOf(obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if was, ok := c.forms[gvk]; ok && was != form {
		return fmt.Errorf("%s is cached %s; a %s read would start a second informer holding every %s again: read it %s, or live",
			gvk.Kind, was, form, gvk.Kind, was)
	}
	c.forms[gvk] = form
	return nil
}

func (c *Cache) kindOf(obj runtime.Object) (schema.GroupVersionKind, Form, error) {
	var (
		gvk  schema.GroupVersionKind
		form Form
		err  error
	)
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		gvk, form = obj.GetObjectKind().GroupVersionKind(), Metadata
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		gvk, form = obj.GetObjectKind().GroupVersionKind(), Unstructured
	default:
		form = Typed
		if gvk, err = apiutil.GVKForObject(obj, c.scheme); err != nil {
			return gvk, form, err
		}
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	return gvk, form, nil
}

// Get reads from the cache of key's kind in obj's form.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.check(obj); err != nil {
		return err
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// List lists from the cache of list's kind in its form.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.check(list); err != nil {
		return err
	}
	return c.Cache.List(ctx, list, opts...)
}

// GetInformer returns the informer of obj's kind in its form.
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if err := c.check(obj); err != nil {
		return nil, err
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind returns the typed informer of gvk.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := c.check(obj); err != nil {
		return nil, err
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

// IndexField indexes obj's kind in its form.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if err := c.check(obj); err != nil {
		return err
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}
