// Package eventrecorder writes the driver's Events (events.k8s.io/v1)
// without client-go's event broadcaster. The broadcaster keeps every Event
// it sent in memory for six minutes (to correlate a series), so a burst of
// 1,000 backups held thousands of Events for minutes; the driver emits one
// Event per phase change that matters and needs no series. This recorder
// keeps nothing once an Event is written: a bounded queue, drained by a few
// workers, each Event created once.
package eventrecorder

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// QueueSize bounds the Events waiting to be written; past it an Event is
// dropped (and counted), never waited for: a reconcile must not block on
// its Events.
const QueueSize = 1024

// workers write Events concurrently, so a burst of backups does not wait
// on one round trip after another.
const workers = 4

// writeTimeout bounds one Event's create.
const writeTimeout = 10 * time.Second

// Recorder is a recorder.EventRecorder (controller-runtime) and a
// manager.Runnable: add it to the manager, which starts its workers on
// every replica. Events recorded before Start wait in the queue.
type Recorder struct {
	client     client.Client
	scheme     *runtime.Scheme
	controller string
	instance   string
	now        func() time.Time

	queue chan *eventsv1.Event
}

// New returns a Recorder that creates Events with c, naming controller as
// their reporting controller (and controller-<hostname> as the instance).
func New(c client.Client, scheme *runtime.Scheme, controller string) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{
		client: c, scheme: scheme, controller: controller,
		instance: textlimit.Cut(controller+"-"+host, 128),
		now:      time.Now,
		queue:    make(chan *eventsv1.Event, QueueSize),
	}
}

// Eventf records an Event about regarding.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.AnnotatedEventf(regarding, related, nil, eventtype, reason, action, note, args...)
}

// AnnotatedEventf records an Event about regarding with annotations.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	log := ctrl.Log.WithName("events")
	e, err := r.event(regarding, related, annotations, eventtype, reason, action, fmt.Sprintf(note, args...))
	if err != nil {
		log.Error(err, "Event not recorded", "reason", reason)
		return
	}
	select {
	case r.queue <- e:
	default:
		dropped.Inc()
		log.Info("Event queue full; Event dropped", "regarding", e.Regarding, "reason", reason, "note", e.Note)
	}
}

func (r *Recorder) event(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string) (*eventsv1.Event, error) {
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		return nil, fmt.Errorf("event type %q is neither Normal nor Warning", eventtype)
	}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		return nil, fmt.Errorf("reference the regarding object: %w", err)
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if relatedRef, err = reference.GetReference(r.scheme, related); err != nil {
			relatedRef = nil // the Event still says what happened to regarding
		}
	}
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := r.now()
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s.%x", textlimit.Cut(ref.Name, 200), now.UnixNano()),
			Namespace:   ns,
			Annotations: annotations,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              textlimit.Cut(action, 128),
		Reason:              textlimit.Cut(reason, 128),
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                textlimit.Note(note),
		Type:                eventtype,
	}, nil
}

// Start writes queued Events until ctx ends, then writes what is still
// queued for a moment longer, so the last Events of a stopping replica
// are not lost.
func (r *Recorder) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.drain(ctx)
		}()
	}
	wg.Wait()
	flush, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for {
		select {
		case e := <-r.queue:
			r.write(flush, e)
		default:
			return nil
		}
	}
}

// NeedLeaderElection is false: a replica that is not the leader may still
// record an Event (for example while it steps down).
func (r *Recorder) NeedLeaderElection() bool { return false }

func (r *Recorder) drain(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.queue:
			r.write(ctx, e)
		}
	}
}

func (r *Recorder) write(ctx context.Context, e *eventsv1.Event) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	if err := r.client.Create(ctx, e); err != nil {
		failed.Inc()
		ctrl.Log.WithName("events").Error(err, "write Event", "regarding", e.Regarding, "reason", e.Reason, "note", e.Note)
		return
	}
	written.Inc()
}
