package ebdctl

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// update is one observed change of a watched object.
type update struct {
	// from names the stream (the argument of watchInto).
	from    string
	obj     client.Object
	deleted bool
	// err ends the stream it came from (for example Forbidden).
	err error
}

// watchInto lists the objects list and opts select, sends each, then
// watches from that list's resourceVersion and sends every change, until
// ctx ends. A watch the server closes (timeouts, a compacted
// resourceVersion) is resumed by listing again. Errors a retry cannot fix
// (Forbidden, NotFound of the kind) are sent once and end the stream.
func watchInto(ctx context.Context, c client.WithWatch, from string, list client.ObjectList, opts []client.ListOption, out chan<- update) {
	send := func(u update) bool {
		u.from = from
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l, opts...); err != nil {
			if permanent(err) {
				send(update{err: err})
				return
			}
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			send(update{err: err})
			return
		}
		for _, it := range items {
			if !send(update{obj: it.(client.Object)}) {
				return
			}
		}
		raw := &metav1.ListOptions{ResourceVersion: l.GetResourceVersion()}
		w, err := c.Watch(ctx, l, append(append([]client.ListOption(nil), opts...), &client.ListOptions{Raw: raw})...)
		if err != nil {
			if permanent(err) {
				send(update{err: err})
				return
			}
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		if !drain(ctx, w, send) {
			w.Stop()
			return
		}
		w.Stop()
	}
}

// drain forwards a watch's events until it closes or fails; false means
// ctx ended.
func drain(ctx context.Context, w watch.Interface, send func(update) bool) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-w.ResultChan():
			if !ok {
				return true
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if obj, ok := ev.Object.(client.Object); ok && !send(update{obj: obj}) {
					return false
				}
			case watch.Deleted:
				if obj, ok := ev.Object.(client.Object); ok && !send(update{obj: obj, deleted: true}) {
					return false
				}
			case watch.Error:
				return true // list again
			}
		}
	}
}

func permanent(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitContext bounds a wait by timeout (zero: no bound).
func waitContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// timeoutError explains a wait that ran out, and that the job goes on.
func timeoutError(kind, ns, name string, timeout time.Duration) error {
	return fmt.Errorf("gave up waiting after %s; %s %s/%s goes on (kubectl -n %s get %s %s -w)",
		timeout, kind, ns, name, ns, kindResource(kind), name)
}

func kindResource(kind string) string {
	switch kind {
	case "BackupJob":
		return "backupjob"
	case "RestoreJob":
		return "restorejob"
	}
	return kind
}
