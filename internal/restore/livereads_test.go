package restore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// liveReads records every read the controller makes past the cache, per
// namespace, as "GET Kind name" or "LIST Kind": each is an API request.
var liveReads = &readLog{byNS: map[string][]string{}}

type readLog struct {
	mu   sync.Mutex
	byNS map[string][]string
}

func (l *readLog) add(ns, entry string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byNS[ns] = append(l.byNS[ns], entry)
}

func (l *readLog) of(ns string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.byNS[ns]...)
}

// countingReader is the API server reader of the suite's controller,
// logging into liveReads.
type countingReader struct{ client.Reader }

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	liveReads.add(key.Namespace, fmt.Sprintf("GET %s %s", kindName(obj), key.Name))
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	liveReads.add(o.Namespace, "LIST "+strings.TrimSuffix(kindName(list), "List"))
	return c.Reader.List(ctx, list, opts...)
}

func kindName(obj any) string {
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}
