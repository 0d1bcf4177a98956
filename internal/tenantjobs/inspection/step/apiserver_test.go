package step

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// TestManifestCountsWhatKubeAPIServerLists: a real kube-apiserver writes
// objects (namespaces, ConfigMaps, Secrets, Services, a custom resource) in
// several namespaces into its etcd; the manifest of that etcd's snapshot
// counts per resource what the API server lists, per namespace what it
// lists there, and the namespaces it lists. The key layout is the API
// server's own, not one written by hand.
func TestManifestCountsWhatKubeAPIServerLists(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k := env.Client
	made := map[string]int{}
	for ns, n := range map[string]int{"team-a": 3, "team-b": 2, "team-c": 1} {
		if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			objs := []client.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"k": "v"}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s-%d", i)}, StringData: map[string]string{"k": "v"}},
				&backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("b-%d", i)}, Spec: backupsv1alpha1.BackupSpec{
					ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
					StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}, TakenAt: metav1.Now()}},
			}
			if i == 0 {
				objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc"},
					Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})
			}
			for _, o := range objs {
				if err := k.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			made[ns] += len(objs)
		}
	}
	// One deleted again: a tombstone in the snapshot, not an object.
	if err := k.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cm-2"}}); err != nil {
		t.Fatal(err)
	}
	made["team-a"]--

	cli, err := etcdproc.Client(env.EtcdURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	m, err := InspectFile(saveDatabase(ctx, t, cli, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	// What etcd holds at the snapshot's revision, whatever the API server
	// wrote since (leases).
	all, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(m.Revision))
	if err != nil {
		t.Fatal(err)
	}
	registry, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(m.Revision))
	if err != nil {
		t.Fatal(err)
	}
	if m.Keys != all.Count || len(m.Keyspaces) != 1 || m.Keyspaces[0].Prefix != "/registry" || m.Keyspaces[0].Objects != registry.Count {
		t.Fatalf("manifest has %d keys and keyspaces %+v; etcd holds %d keys, %d under /registry/", m.Keys, m.Keyspaces, all.Count, registry.Count)
	}
	ks := m.Keyspaces[0]
	resources, namespaces := map[string]int64{}, map[string]int64{}
	for _, r := range ks.Resources {
		resources[r.Name] = r.Count
	}
	for _, n := range ks.TopNamespaces {
		namespaces[n.Name] = n.Count
	}

	listed := map[string]int{}
	var nsList corev1.NamespaceList
	for name, list := range map[string]client.ObjectList{
		"namespaces": &nsList, "configmaps": &corev1.ConfigMapList{}, "secrets": &corev1.SecretList{},
		"services/specs": &corev1.ServiceList{}, "backups.cozystack.io/backups": &backupsv1alpha1.BackupList{},
		// Cluster-scoped, in a group: its one name part follows the group's two.
		"apiextensions.k8s.io/customresourcedefinitions": crds(),
	} {
		if err := k.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		if resources[name] != int64(len(items)) {
			t.Errorf("manifest counts %d %s, the API server lists %d", resources[name], name, len(items))
		}
		for _, o := range items {
			a, err := meta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			listed[a.GetNamespace()]++
		}
	}
	for ns, want := range made {
		// The kube-apiserver's own ClusterIP repair loop may record an
		// Event on a Service it saw before its IPAddress (under load):
		// what etcd held in events at the snapshot counts too.
		events, err := cli.Get(ctx, "/registry/events/"+ns+"/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(m.Revision))
		if err != nil {
			t.Fatal(err)
		}
		if namespaces[ns] != int64(listed[ns])+events.Count || listed[ns] != want {
			t.Errorf("manifest counts %d objects in %s, the API server lists %d there and etcd held %d events, the test made %d",
				namespaces[ns], ns, listed[ns], events.Count, want)
		}
	}
	if ks.Namespaces != int64(len(nsList.Items)) || len(ks.NamespaceNames) != len(nsList.Items) {
		t.Errorf("manifest has %d namespaces (%v), the API server lists %d", ks.Namespaces, ks.NamespaceNames, len(nsList.Items))
	}
	for _, n := range nsList.Items {
		if !slices.Contains(ks.NamespaceNames, n.Name) {
			t.Errorf("namespace %s missing from the manifest's names %v", n.Name, ks.NamespaceNames)
		}
	}
}

func crds() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	return l
}
