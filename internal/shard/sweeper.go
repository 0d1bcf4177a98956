package shard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The Sweeper lists namespaces and relabels the objects of the kinds it
// sweeps (staging Jobs and Plans included, which nothing else patches; the
// tenant's EtcdCluster, HelmRelease and member PVCs are patched under the
// restore's rules).
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list
// +kubebuilder:rbac:groups=backups.cozystack.io,resources=plans;restorejobs;backupjobs;backups,verbs=patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=patch

// Selection selects a shard's objects of one kind: by labels and, where
// the cache selects by name too (RBAC grants the tenant's EtcdCluster and
// HelmRelease by name only), by fields. A nil Field selects every name.
type Selection struct {
	Label labels.Selector
	Field fields.Selector
}

// DefaultSweepInterval is how often a shard moves misplaced objects.
const DefaultSweepInterval = time.Minute

// pageSize bounds each list the Sweeper makes (metadata only).
const pageSize = 500

// Sweeper moves this shard's misplaced objects to the shard their
// namespace belongs to, by relabelling them: objects created before the
// admission policy existed or while it was down (no label, which shard 0
// holds), and every object after the shard count changed. It lists
// metadata only and live, so it costs no cache; it runs on the shard's
// leader, at once and then every Interval, so a misplaced object reaches
// its shard within one Interval plus the time that shard takes to list it.
type Sweeper struct {
	// Client patches labels; Reader lists namespaces and objects, live.
	Client client.Client
	Reader client.Reader
	// Shard is the shard this replica is.
	Shard Shard
	// Kinds are the swept kinds, each with the selection of this shard's
	// objects of that kind (the shard's selector and the cache's own).
	Kinds map[schema.GroupVersionKind]Selection
	// Interval between sweeps; 0 means DefaultSweepInterval, negative
	// disables sweeping.
	Interval time.Duration
}

// NeedLeaderElection: the shard's leader sweeps.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Start sweeps until ctx ends; it is a manager Runnable.
func (s *Sweeper) Start(ctx context.Context) error {
	interval := s.Interval
	if interval < 0 || !s.Shard.Enabled() {
		return nil
	}
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if moved, err := s.Sweep(ctx); err != nil {
			log.FromContext(ctx).Error(err, "move objects to their shards")
		} else if moved > 0 {
			log.FromContext(ctx).Info("moved objects to their shards", "moved", moved, "shard", s.Shard.Index)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep relabels, once, every object of s.Kinds this shard holds whose
// label is not its namespace's shard, and returns how many it moved.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	shards, err := s.namespaceShards(ctx)
	if err != nil {
		return 0, err
	}
	moved := 0
	var errs []error
	for gvk, sel := range s.Kinds {
		n, err := s.sweepKind(ctx, gvk, sel, shards)
		moved += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return moved, errors.Join(errs...)
}

// namespaceShards maps each namespace to its shard.
func (s *Sweeper) namespaceShards(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := s.eachPage(ctx, corev1.SchemeGroupVersion.WithKind("Namespace"), Selection{Label: labels.Everything()}, func(ns *metav1.PartialObjectMetadata) error {
		out[ns.Name] = strconv.Itoa(Of(ns, s.Shard.Count))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	return out, nil
}

func (s *Sweeper) sweepKind(ctx context.Context, gvk schema.GroupVersionKind, sel Selection, shards map[string]string) (int, error) {
	moved := 0
	err := s.eachPage(ctx, gvk, sel, func(obj *metav1.PartialObjectMetadata) error {
		want, ok := shards[obj.Namespace]
		if !ok || obj.Labels[Label] == want {
			return nil // a namespace created since the list: next sweep
		}
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, Label, want)
		obj.SetGroupVersionKind(gvk)
		if err := s.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("move %s %s/%s to shard %s: %w", gvk.Kind, obj.Namespace, obj.Name, want, err)
		}
		moved++
		return nil
	})
	return moved, err
}

// eachPage lists objects of gvk matching sel, metadata only, page by page.
func (s *Sweeper) eachPage(ctx context.Context, gvk schema.GroupVersionKind, sel Selection, f func(*metav1.PartialObjectMetadata) error) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel.Label}, client.Limit(pageSize)}
	if sel.Field != nil {
		opts = append(opts, client.MatchingFieldsSelector{Selector: sel.Field})
	}
	fixed := len(opts)
	for {
		if err := s.Reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if err := f(&list.Items[i]); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts = append(opts[:fixed], client.Continue(list.Continue))
	}
}
