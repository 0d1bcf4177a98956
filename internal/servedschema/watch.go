package servedschema

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Start keeps the answers current from a watch on each CRD the driver
// checks (one object each, selected by its name), so no backup or restore
// reads a CRD itself: a lazy read every few minutes made the first
// restore (or BackupJob) after each quiet spell pay a request for it.
// Until a CRD's watch has listed it, or while its watch is broken, Installed
// reads it as before. A CRD's answer lives in a few strings; the CRD
// itself is not kept. Without a Watcher, Start only waits.
func (s *Schema) Start(ctx context.Context) error {
	if s.Watcher == nil {
		<-ctx.Done()
		return nil
	}
	done := make(chan struct{}, len(checked))
	for _, name := range checked {
		go func() {
			s.follow(ctx, name)
			done <- struct{}{}
		}()
	}
	for range checked {
		<-done
	}
	return nil
}

// NeedLeaderElection is false: every replica (standbys too) answers from
// its own watch.
func (s *Schema) NeedLeaderElection() bool { return false }

// checked are the CRDs Start watches.
var checked = []string{TenantControlPlaneCRD, DataStoreCRD}

// A broken watch lists again after watchRetry, doubled at each failure
// in a row up to refresh (when a lazy read would be made anyway).
const watchRetry = 10 * time.Second

// follow lists name, then watches it from there; a watch the server ends
// resumes from the last version seen, one whose version is too old lists
// again, one it refuses waits and lists again. A watch that ends within a
// second counts as refused, so nothing loops.
func (s *Schema) follow(ctx context.Context, name string) {
	log := logf.FromContext(ctx).WithValues("crd", name)
	rv, retry := "", watchRetry
	for ctx.Err() == nil {
		var err error
		if rv == "" {
			rv, err = s.list(ctx, name)
		}
		if err == nil {
			began := time.Now()
			rv, err = s.watchFrom(ctx, name, rv)
			if err == nil && time.Since(began) < time.Second {
				err = fmt.Errorf("watch of CRD %s ended at once", name)
			}
		}
		if err == nil || ctx.Err() != nil {
			retry = watchRetry
			continue
		}
		log.Info("CRD watch broken; its served fields are read on demand until it lists again", "retryIn", retry.String(), "error", err.Error())
		s.unwatched(name)
		rv = ""
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
		retry = min(2*retry, refresh)
	}
}

// list reads name (absent is an answer: it lacks nothing) and returns
// the version to watch from.
func (s *Schema) list(ctx context.Context, name string) (string, error) {
	list := crdList()
	if err := s.Watcher.List(ctx, list, byName(name)); err != nil {
		return "", fmt.Errorf("list CRD %s: %w", name, err)
	}
	var crd *unstructured.Unstructured
	if len(list.Items) > 0 {
		crd = &list.Items[0]
	}
	s.watched(name, answerOf(name, crd))
	return list.GetResourceVersion(), nil
}

// watchFrom follows name from version rv until the server ends the watch
// (it returns the last version seen) or refuses it (an error).
func (s *Schema) watchFrom(ctx context.Context, name, rv string) (string, error) {
	list := crdList()
	opts := byName(name)
	opts.Raw = &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
	w, err := s.Watcher.Watch(ctx, list, opts)
	if err != nil {
		return "", fmt.Errorf("watch CRD %s: %w", name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					return "", nil // history compacted past rv: list again
				}
				return "", fmt.Errorf("watch CRD %s: %w", name, err)
			}
			crd, isCRD := ev.Object.(*unstructured.Unstructured)
			if !isCRD {
				continue
			}
			rv = crd.GetResourceVersion()
			switch ev.Type {
			case watch.Added, watch.Modified:
				s.watched(name, answerOf(name, crd))
			case watch.Deleted:
				s.watched(name, answer{})
			}
		}
	}
}

func crdList() *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(crdGVK.GroupVersion().WithKind("CustomResourceDefinitionList"))
	return list
}

func byName(name string) *client.ListOptions {
	return &client.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name)}
}

// watched records what a watch says of name: current until it breaks.
// Whoever waits on Changed is told.
func (s *Schema) watched(name string, a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.read == nil {
		s.read = map[string]readCRD{}
	}
	s.read[name] = readCRD{answer: a, at: time.Now(), watched: true}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// unwatched: the answer for name stands, and is read again once stale.
func (s *Schema) unwatched(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.read[name]; ok {
		r.watched = false
		s.read[name] = r
	}
}
