package sharding

import (
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// clusterLabels are the shard labels of the tenant's EtcdCluster,
// HelmRelease and member PVCs.
func clusterLabels(g Gomega, tn *platform.Tenant) []string {
	out := []string{"EtcdCluster " + tn.Cluster().Labels[shard.Label], "HelmRelease " + tn.HelmRelease().Labels[shard.Label]}
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(env.Client.List(tn.Ctx, &pvcs, client.InNamespace(tn.NS), client.MatchingLabels{"app.kubernetes.io/instance": "etcd"})).To(Succeed())
	for _, p := range pvcs.Items {
		out = append(out, "PersistentVolumeClaim "+p.Labels[shard.Label])
	}
	return out
}

// A tenant's cluster (EtcdCluster, HelmRelease, member PVCs) is labelled
// by the admission policy like the tenant's own objects, so a shard caches
// only its tenants' clusters. When the labels lag behind the namespace (it
// was moved while the shard that held it is down, so nothing relabels
// them), the namespace's new shard does not hold its cluster in its cache;
// it must still back it up and restore it in place, not take "not in my
// cache" for "gone": the restore purges and re-creates the one cluster,
// and the re-created one carries the new shard's label.
func TestShardRestoresAClusterLabelledForAnother(t *testing.T) {
	g := NewWithT(t)
	awaitPolicy(t)
	tn := plat.NewTenant(t, "stray")
	was := tn.Cluster().Labels[shard.Label]
	g.Expect(was).NotTo(BeEmpty(), "the policy labels the tenant's EtcdCluster")
	g.Expect(clusterLabels(g, tn)).To(ConsistOf("EtcdCluster "+was, "HelmRelease "+was,
		"PersistentVolumeClaim "+was, "PersistentVolumeClaim "+was, "PersistentVolumeClaim "+was))
	// What is not the tenant's etcd is left alone.
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "data-db-0",
		Labels: map[string]string{"app.kubernetes.io/instance": "db"}}, Spec: tn.Get(&corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: "data-etcd-0"}}).(*corev1.PersistentVolumeClaim).Spec}
	other.Spec.VolumeName = ""
	tn.Create(other)
	g.Expect(other.Labels).NotTo(HaveKey(shard.Label), "a PVC of another workload")
	n, err := strconv.Atoi(was)
	g.Expect(err).NotTo(HaveOccurred())
	now := strconv.Itoa((n + 1) % shards)
	pin(t, tn, now)
	// Only the new shard runs: nothing moves the cluster's labels.
	r := startReplica(t, "shard-"+now, (n+1)%shards, false, nil)

	b := tn.Backup("before", "")
	rj := tn.Restore("restore", b.Name, "")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
	g.Expect(tn.Cluster().Annotations).To(HaveKeyWithValue(backupsv1alpha1.RestoredByAnnotation, string(rj.UID)))
	g.Expect(tn.Cluster().Labels).To(HaveKeyWithValue(shard.Label, now), "the re-created cluster is the new shard's")
	clusterWrite := func(verb string) func(write) bool {
		return func(w write) bool { return w.Verb == verb && w.Kind == "EtcdCluster" && w.Namespace == tn.NS }
	}
	g.Expect(r.writes.of(clusterWrite("delete"))).To(HaveLen(1), "purges")
	g.Expect(r.writes.of(clusterWrite("create"))).To(HaveLen(1), "re-creates")
}
