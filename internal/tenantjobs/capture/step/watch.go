package step

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// received is one message of the watch stream and when it arrived.
type received struct {
	resp *pb.WatchResponse
	err  error
	at   time.Time
}

// watch is one watch of the whole keyspace, read straight from its gRPC
// stream: one goroutine receives a message at a time and hands it over
// unbuffered, so a busy capture holds the etcd back instead of buffering
// what it sends.
type watch struct {
	stream   pb.Watch_WatchClient
	msgs     chan received
	cancel   context.CancelFunc
	deadline *time.Timer
}

// openWatch watches every key from revision from, with fragmentation on
// (the etcd splits a large response into messages of at most its request
// limit) and requiring a leader (a member cut off from its cluster ends
// the watch rather than going quiet). Unless created is called within
// timeout, the watch ends: an etcd that cannot be reached, or refuses the
// certificate, is retried and then reported, never waited for in silence.
func openWatch(ctx context.Context, cli *clientv3.Client, from int64, timeout time.Duration, now func() time.Time) (*watch, error) {
	sctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	deadline := time.AfterFunc(timeout, cancel)
	stream, err := pb.NewWatchClient(cli.ActiveConnection()).Watch(sctx)
	if err != nil {
		deadline.Stop()
		cancel()
		return nil, fmt.Errorf("open the watch: %w", err)
	}
	create := &pb.WatchCreateRequest{Key: []byte{0}, RangeEnd: []byte{0}, StartRevision: from, Fragment: true}
	if err := stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: create}}); err != nil {
		deadline.Stop()
		cancel()
		return nil, fmt.Errorf("open the watch: %w", err)
	}
	w := &watch{stream: stream, msgs: make(chan received), cancel: cancel, deadline: deadline}
	go func() {
		for {
			resp, err := stream.Recv()
			select {
			case w.msgs <- received{resp: resp, err: err, at: now()}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return w, nil
}

// requestProgress asks the etcd to say its revision once the watch has
// received everything up to it.
func (w *watch) requestProgress() error {
	req := &pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}}
	if err := w.stream.Send(req); err != nil {
		return fmt.Errorf("request the watch's progress: %w", err)
	}
	return nil
}

// created says the etcd created the watch: it lives on.
func (w *watch) created() { w.deadline.Stop() }

func (w *watch) close() {
	w.deadline.Stop()
	w.cancel()
}
