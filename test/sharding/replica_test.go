package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// replica is one driver manager of the suite: a shard's leader or standby.
type replica struct {
	name   string
	writes *writeLog
	stop   context.CancelFunc
	done   chan struct{}
}

// startReplica runs the real driver manager as the chart runs shard index
// of shards, with leader election when elect is set, recording every write
// it makes. crash, when set, sees each write first and may kill the
// replica around it (see writeLog). The replica stops when the test ends.
func startReplica(t *testing.T, name string, index int, elect bool, crash func(w write) (kill bool)) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, stop: cancel, done: make(chan struct{})}
	r.writes = &writeLog{crash: crash, kill: cancel}
	o := manager.DefaultOptions()
	o.Namespace = testenv.DriverNamespace
	o.MetricsAddr, o.ProbeAddr = "0", "0"
	o.SkipControllerNameValidation = true
	o.AllowedEndpointCIDRs = []string{"127.0.0.1/32"}
	o.BackupDeadline, o.RestoreDeadline = 2*time.Minute, 2*time.Minute
	o.StagingImage = "etcd-backup-driver:sharding-test"
	o.S3CAFile = plat.CAFile
	o.Shard, o.Shards = index, shards
	o.ShardSweepInterval = time.Second
	o.LeaderElect, o.LeaderElectionNamespace = elect, testenv.DriverNamespace
	o.WrapClient = func(c client.Client) client.Client { return &recording{Client: c, log: r.writes} }
	mgr, err := manager.New(env.Config, o)
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	r.writes.scheme = mgr.GetScheme()
	go func() {
		defer close(r.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("replica %s: %v", name, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	ctrl.Log.Info("replica started", "replica", name, "shard", index)
	return r
}

// write is one API write a replica made (or was about to make).
type write struct {
	Verb, Kind, Namespace, Name string
	// Status is set for writes to the status subresource.
	Status bool
	// Phase is a RestoreJob's phase after the write.
	Phase string
}

func (w write) String() string {
	s := ""
	if w.Status {
		s = " status"
	}
	return fmt.Sprintf("%s %s%s %s/%s", w.Verb, w.Kind, s, w.Namespace, w.Name)
}

// errKilled is what a killed replica's writes return: it makes no more.
var errKilled = errors.New("replica killed")

// writeLog records a replica's writes. Once crash says kill, around a
// write that is applied, the replica's context is cancelled and every
// later write fails before it reaches the API server, as if the process
// had died right after that write.
type writeLog struct {
	mu     sync.Mutex
	list   []write
	scheme *runtime.Scheme
	crash  func(write) bool
	kill   context.CancelFunc
	dead   bool
}

// do runs apply for w unless the replica is dead, and records it.
func (l *writeLog) do(obj client.Object, w write, apply func() error) error {
	gvk, err := apiutil.GVKForObject(obj, l.scheme)
	if err == nil {
		w.Kind = gvk.Kind
	}
	w.Namespace, w.Name = obj.GetNamespace(), obj.GetName()
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return errKilled
	}
	l.mu.Unlock()
	if err := apply(); err != nil {
		return err
	}
	if rj, ok := obj.(*backupsv1alpha1.RestoreJob); ok {
		w.Phase = string(rj.Status.Phase)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, w)
	if l.crash != nil && l.crash(w) {
		l.dead = true
		l.kill()
		return errKilled
	}
	return nil
}

// of returns the recorded writes matching f.
func (l *writeLog) of(f func(write) bool) []write {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []write
	for _, w := range l.list {
		if f(w) {
			out = append(out, w)
		}
	}
	return out
}

// isDead reports whether the replica was killed.
func (l *writeLog) isDead() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dead
}

// recording is the client a replica's controllers write through.
type recording struct {
	client.Client
	log *writeLog
}

func (c *recording) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.log.do(obj, write{Verb: "create"}, func() error { return c.Client.Create(ctx, obj, opts...) })
}

func (c *recording) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.log.do(obj, write{Verb: "update"}, func() error { return c.Client.Update(ctx, obj, opts...) })
}

func (c *recording) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return c.log.do(obj, write{Verb: "patch"}, func() error { return c.Client.Patch(ctx, obj, p, opts...) })
}

func (c *recording) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.log.do(obj, write{Verb: "delete"}, func() error { return c.Client.Delete(ctx, obj, opts...) })
}

func (c *recording) Status() client.SubResourceWriter {
	return &recordingStatus{SubResourceWriter: c.Client.Status(), log: c.log}
}

// recordingStatus records status writes.
type recordingStatus struct {
	client.SubResourceWriter
	log *writeLog
}

func (s *recordingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.log.do(obj, write{Verb: "update", Status: true}, func() error { return s.SubResourceWriter.Update(ctx, obj, opts...) })
}

func (s *recordingStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.log.do(obj, write{Verb: "patch", Status: true}, func() error { return s.SubResourceWriter.Patch(ctx, obj, p, opts...) })
}
