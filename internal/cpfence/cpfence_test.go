package cpfence

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := kamajiv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func tcp(ns, name, ds string) *kamajiv1alpha1.TenantControlPlane {
	return &kamajiv1alpha1.TenantControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kamajiv1alpha1.TenantControlPlaneSpec{DataStore: ds}}
}

func namespace(name, etcd string) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if etcd != "" {
		n.Labels = map[string]string{EtcdNamespaceLabel: etcd}
	}
	return n
}

func TestFindMatchesOnlyThisEtcd(t *testing.T) {
	objs := []client.Object{
		&kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"},
			Spec:   kamajiv1alpha1.DataStoreSpec{Driver: "etcd", Endpoints: []string{"etcd-client.tenant-a.svc:2379"}},
			Status: kamajiv1alpha1.DataStoreStatus{UsedBy: []string{"tenant-a-child/by-usedby", "tenant-b/listed"}}},
		&kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: "fqdn"},
			Spec: kamajiv1alpha1.DataStoreSpec{Driver: "etcd", Endpoints: []string{"https://etcd-client.tenant-a.svc.cluster.local:2379"}}},
		// Look-alikes: another namespace whose name starts the same, and
		// another port.
		&kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: "tenant-ab"},
			Spec: kamajiv1alpha1.DataStoreSpec{Driver: "etcd", Endpoints: []string{"etcd-client.tenant-ab.svc:2379"}}},
		&kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: "port"},
			Spec: kamajiv1alpha1.DataStoreSpec{Driver: "etcd", Endpoints: []string{"etcd-client.tenant-a.svc:2380"}}},
		// Cozystack's namespaces: a child of tenant-a without an etcd of
		// its own, a grandchild, and tenants that do not share tenant-a's.
		namespace("tenant-a-child", "tenant-a"), namespace("tenant-a-child-x", "tenant-a"),
		namespace("tenant-b", "tenant-b"), namespace("tenant-c", ""), namespace("tenant-ab", "tenant-ab"),
		tcp("tenant-a", "by-spec", "tenant-a"),
		tcp("tenant-a-child", "by-usedby", ""),
		tcp("tenant-a-child-x", "by-fqdn", "fqdn"),
		tcp("tenant-ab", "neighbour", "tenant-ab"),
		tcp("tenant-a", "port", "port"),
		// Other tenants naming tenant-a's DataStore, or listed by it.
		tcp("tenant-b", "intruder", "tenant-a"),
		tcp("tenant-b", "listed", ""),
		tcp("tenant-c", "unlabelled", "fqdn"),
		tcp("gone", "no-namespace", "tenant-a"),
	}
	stale := tcp("tenant-a-child", "fenced-earlier", "elsewhere")
	stale.Annotations = map[string]string{backupsv1alpha1.FencedByAnnotation: "uid-1"}
	forged := tcp("tenant-b", "forged-fence", "elsewhere")
	forged.Annotations = map[string]string{backupsv1alpha1.FencedByAnnotation: "uid-1"}
	objs = append(objs, stale, forged)
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build()
	got, err := Find(context.Background(), c, &Sharing{}, c, "tenant-a", "uid-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tenant-a-child-x/by-fqdn", "tenant-a-child/by-usedby", "tenant-a-child/fenced-earlier", "tenant-a/by-spec"}
	if names := got.Names(); !slices.Equal(names, want) {
		t.Fatalf("found %v, want %v", names, want)
	}
	// Without a way to read namespaces, only the tenant's own.
	got, err = Find(context.Background(), c, nil, nil, "tenant-a", "uid-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := got.Names(); !slices.Equal(names, []string{"tenant-a/by-spec"}) {
		t.Fatalf("found %v without namespace reads", names)
	}
}

// With a record, what the restore fenced is what the record holds: found
// wherever its namespace's label says it now belongs, while a control
// plane carrying the fence annotation that the record does not hold (the
// annotation is on the tenant's object) is neither found for it nor taken
// as fenced by it; one re-created under a recorded name is not the one
// recorded.
func TestARecordedFenceIsFoundWhateverTheLabelsSay(t *testing.T) {
	fenced := func(t0 *kamajiv1alpha1.TenantControlPlane, uid types.UID) *kamajiv1alpha1.TenantControlPlane {
		t0.Annotations = map[string]string{backupsv1alpha1.FencedByAnnotation: "uid-1"}
		t0.UID = uid
		return t0
	}
	objs := []client.Object{
		&kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"},
			Spec: kamajiv1alpha1.DataStoreSpec{Driver: "etcd", Endpoints: []string{"etcd-client.tenant-a.svc:2379"}}},
		// The child lost its label after the fence; the late one gained it.
		namespace("child", ""), namespace("late", "tenant-a"), namespace("other", ""),
		fenced(tcp("tenant-a", "own", "tenant-a"), "u-own"),
		fenced(tcp("child", "cp", "tenant-a"), "u-child"),
		tcp("late", "cp", "tenant-a"),
		fenced(tcp("other", "forged", "elsewhere"), "u-forged"),
		fenced(tcp("child", "recreated", "tenant-a"), "u-new"),
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build()
	rec := &Record{Planes: []Ref{{"tenant-a", "own", "u-own"}, {"child", "cp", "u-child"}, {"child", "recreated", "u-old"}}}
	got, err := Find(context.Background(), c, &Sharing{}, c, "tenant-a", "uid-1", rec)
	if err != nil {
		t.Fatal(err)
	}
	if names := got.Names(); !slices.Equal(names, []string{"child/cp", "late/cp", "tenant-a/own"}) {
		t.Fatalf("found %v", names)
	}
	var lifted []string
	for _, x := range got.FencedBy("uid-1") {
		lifted = append(lifted, Key(x))
	}
	if !slices.Equal(lifted, []string{"child/cp", "tenant-a/own"}) {
		t.Fatalf("fenced by the restore: %v", lifted)
	}
}

// A namespace's label is read once a minute at most, however many
// control planes and restores ask.
func TestSharingReadsANamespaceOncePerTTL(t *testing.T) {
	c := &countingGets{Reader: fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(namespace("child", "parent")).Build()}
	var s Sharing
	for range 5 {
		ok, err := s.Shares(context.Background(), c, "child", "parent")
		if err != nil || !ok {
			t.Fatalf("child shares parent's etcd: %t, %v", ok, err)
		}
		if ok, _ := s.Shares(context.Background(), c, "child", "other"); ok {
			t.Fatal("child does not share other's etcd")
		}
	}
	if c.gets != 1 {
		t.Fatalf("%d reads of the namespace, want 1", c.gets)
	}
}

type countingGets struct {
	client.Reader
	gets int
}

func (c *countingGets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func TestFenceKeepsTheTenantsPriorPermissions(t *testing.T) {
	ctx := context.Background()
	t0 := tcp("ns", "cp", "ds")
	t0.Spec.WritePermissions = kamajiv1alpha1.WritePermissions{BlockDelete: true}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(t0).Build()
	get := func() *kamajiv1alpha1.TenantControlPlane {
		out := &kamajiv1alpha1.TenantControlPlane{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cp"}, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if err := Fence(ctx, c, get(), "dead-restore"); err != nil {
		t.Fatal(err)
	}
	// A second restore takes over a fence left behind: the prior record
	// stays the tenant's, not "read-only".
	if err := Fence(ctx, c, get(), "uid-2"); err != nil {
		t.Fatal(err)
	}
	cur := get()
	if !Fenced(cur) || FencedBy(cur) != "uid-2" {
		t.Fatalf("not fenced by uid-2: %+v", cur)
	}
	if Lift(ctx, c, cur, "someone-else") != nil || !Fenced(get()) {
		t.Fatal("a fence is lifted only by its owner")
	}
	if err := Lift(ctx, c, get(), "uid-2"); err != nil {
		t.Fatal(err)
	}
	cur = get()
	if cur.Spec.WritePermissions != (kamajiv1alpha1.WritePermissions{BlockDelete: true}) {
		t.Fatalf("prior permissions not restored: %+v", cur.Spec.WritePermissions)
	}
	for _, a := range []string{backupsv1alpha1.FencedByAnnotation, backupsv1alpha1.PriorWritePermissionsAnnotation} {
		if _, ok := cur.Annotations[a]; ok {
			t.Fatalf("annotation %s left behind", a)
		}
	}
}

func TestAcknowledgedNeedsKamajisWord(t *testing.T) {
	x := tcp("ns", "cp", "ds")
	x.Spec.WritePermissions = readOnly
	for status, want := range map[string]bool{"": false, "Ready": false, "WriteLimited": true, "NotReady": true, "Sleeping": true} {
		x.Status.KubernetesResources.Version.Status = status
		if Acknowledged(x) != want {
			t.Errorf("status %q: acknowledged %t, want %t", status, !want, want)
		}
	}
	x.Spec.WritePermissions = kamajiv1alpha1.WritePermissions{BlockCreate: true}
	x.Status.KubernetesResources.Version.Status = "WriteLimited"
	if Acknowledged(x) {
		t.Error("a partial fence is not the restore's fence")
	}
}

func TestRestartDeletesOnlyRecordedPodsAndWaitsForANewReadyOne(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	x := tcp("ns", "cp", "ds")
	pod := func(name string, uid types.UID, ready bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, Labels: map[string]string(PodLabels("cp"))}}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		return p
	}
	old := pod("old", "u-old", true)
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(x, &old).Build()
	if RestartProgress(x, []corev1.Pod{old}, now) != NotRestarted {
		t.Fatal("nothing recorded yet")
	}
	if err := Restart(ctx, c, x, []corev1.Pod{old}, now); err != nil {
		t.Fatal(err)
	}
	var left corev1.PodList
	_ = c.List(ctx, &left)
	if len(left.Items) != 0 {
		t.Fatalf("old Pod not deleted: %v", left.Items)
	}
	cases := []struct {
		name string
		pods []corev1.Pod
		at   time.Time
		want Progress
	}{
		{"old still there", []corev1.Pod{old}, now, Restarting},
		{"no Pod yet", nil, now, Restarting},
		{"new Pod not ready", []corev1.Pod{pod("new", "u-new", false)}, now, Restarting},
		{"new Pod ready", []corev1.Pod{pod("new", "u-new", true)}, now, Restarted},
		{"too late", nil, now.Add(RestartTimeout), RestartTimedOut},
	}
	for _, tc := range cases {
		if got := RestartProgress(x, tc.pods, tc.at); got != tc.want {
			t.Errorf("%s: progress %d, want %d", tc.name, got, tc.want)
		}
	}
}
