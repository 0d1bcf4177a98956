// Package kubewrites makes writes shaped like a Kubernetes control
// plane's to its etcd, for benchmarks of what captures and replays them:
// the keys kube-apiserver uses and values encoded as it stores them
// (protobuf, "k8s\x00" envelope). The mix, per 100 writes, follows a
// small busy cluster: 50 node Lease renewals, 20 Pod status updates, 15
// Events created (with a one-hour etcd lease, as kube-apiserver attaches
// them), 10 EndpointSlice updates, 5 Pods deleted and created again.
package kubewrites

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// Write is one write: a put of Value to Key (attached to an etcd lease of
// LeaseTTL seconds when it is not 0), or a delete.
type Write struct {
	Key      string
	Value    []byte
	Delete   bool
	LeaseTTL int64
}

// Writes are n writes of the mix, the same for the same seed.
func Writes(seed uint64, n int) []Write {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 39)), ser: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), at: time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)}
	out := make([]Write, 0, n)
	for i := 0; len(out) < n; i++ {
		g.at = g.at.Add(100 * time.Millisecond)
		switch k := i % 100; {
		case k < 50:
			out = append(out, g.lease(i))
		case k < 70:
			out = append(out, g.pod(i, false))
		case k < 85:
			out = append(out, g.event(i))
		case k < 95:
			out = append(out, g.slice(i))
		default:
			p := g.pod(i, true)
			out = append(out, Write{Key: p.Key, Delete: true})
			if len(out) < n {
				out = append(out, p)
			}
		}
	}
	return out
}

type gen struct {
	rng *rand.Rand
	ser runtime.Serializer
	at  time.Time
	rv  int
}

func (g *gen) encode(key string, obj runtime.Object) Write {
	var b bytes.Buffer
	if err := g.ser.Encode(obj, &b); err != nil {
		panic(err)
	}
	return Write{Key: key, Value: b.Bytes()}
}

func (g *gen) meta(name, ns string) metav1.ObjectMeta {
	g.rv++
	return metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(fmt.Sprintf("3d5b0f1e-%04x-4b1e-9c5a-0242ac120002", g.rng.IntN(65536))),
		ResourceVersion: fmt.Sprint(g.rv), CreationTimestamp: metav1.NewTime(g.at.Add(-time.Hour)),
		Labels: map[string]string{"app.kubernetes.io/name": "web", "pod-template-hash": "7c9d8b6f5"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: ptr.To(metav1.NewTime(g.at)), FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}}`)}}}}
}

func (g *gen) lease(i int) Write {
	node := fmt.Sprintf("node-%02d", i%50)
	l := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease", ResourceVersion: fmt.Sprint(i)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(g.at))}}
	return g.encode("/registry/leases/kube-node-lease/"+node, l)
}

func (g *gen) pod(i int, fresh bool) Write {
	name := fmt.Sprintf("web-7c9d8b6f5-%05d", i%200)
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: g.meta(name, fmt.Sprintf("team-%d", i%7)),
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node-%02d", i%50), Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1.27.3",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.%d.%d", i%50, g.rng.IntN(250)), HostIP: fmt.Sprintf("192.168.0.%d", i%50),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(g.at)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, RestartCount: int32(g.rng.IntN(3)), Image: "registry.example.com/web:1.27.3",
				ContainerID: fmt.Sprintf("containerd://%016x%016x", g.rng.Uint64(), g.rng.Uint64())}}}}
	if fresh {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	}
	return g.encode("/registry/pods/"+p.Namespace+"/"+name, p)
}

func (g *gen) event(i int) Write {
	ns := fmt.Sprintf("team-%d", i%7)
	name := fmt.Sprintf("web-7c9d8b6f5-%05d.%016x", i%200, g.rng.Uint64())
	e := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: fmt.Sprint(i)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: fmt.Sprintf("web-7c9d8b6f5-%05d", i%200), APIVersion: "v1"},
		Reason:         "Pulled", Message: `Container image "registry.example.com/web:1.27.3" already present on machine`, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet", Host: fmt.Sprintf("node-%02d", i%50)}, FirstTimestamp: metav1.NewTime(g.at), LastTimestamp: metav1.NewTime(g.at), Count: 1}
	w := g.encode("/registry/events/"+ns+"/"+name, e)
	w.LeaseTTL = 3600
	return w
}

func (g *gen) slice(i int) Write {
	ns := fmt.Sprintf("team-%d", i%7)
	s := &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}, ObjectMeta: g.meta("web-x7k2p", ns), AddressType: discoveryv1.AddressTypeIPv4}
	for j := range 6 {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", j, g.rng.IntN(250))},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(g.rng.IntN(10) > 0)}, NodeName: ptr.To(fmt.Sprintf("node-%02d", j))})
	}
	s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}
	return g.encode("/registry/endpointslices/"+ns+"/web-x7k2p", s)
}

// Apply makes ws in the etcd cli reaches, one request each (Writer).
func Apply(ctx context.Context, cli *clientv3.Client, ws []Write) error {
	x := NewWriter(cli)
	for i, w := range ws {
		if _, err := x.Write(ctx, w); err != nil {
			return fmt.Errorf("write %d (%s): %w", i, w.Key, err)
		}
	}
	return nil
}

// Writer makes writes one at a time, one request each; Events share a
// lease of their TTL granted every 600 writes (a minute of them), as
// kube-apiserver reuses its leases.
type Writer struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	n     int
}

// NewWriter writes to the etcd cli reaches.
func NewWriter(cli *clientv3.Client) *Writer { return &Writer{cli: cli} }

// Write makes w and returns the revision it committed, 0 when it
// changed nothing (a delete of a key that is not there).
func (x *Writer) Write(ctx context.Context, w Write) (int64, error) {
	i := x.n
	x.n++
	switch {
	case w.Delete:
		r, err := x.cli.Delete(ctx, w.Key)
		if err != nil || r.Deleted == 0 {
			return 0, err
		}
		return r.Header.Revision, nil
	case w.LeaseTTL != 0:
		if x.lease == 0 || i%600 == 0 {
			l, err := x.cli.Grant(ctx, w.LeaseTTL)
			if err != nil {
				return 0, err
			}
			x.lease = l.ID
		}
		r, err := x.cli.Put(ctx, w.Key, string(w.Value), clientv3.WithLease(x.lease))
		if err != nil {
			return 0, err
		}
		return r.Header.Revision, nil
	}
	r, err := x.cli.Put(ctx, w.Key, string(w.Value))
	if err != nil {
		return 0, err
	}
	return r.Header.Revision, nil
}
