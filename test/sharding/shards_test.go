package sharding

import (
	"context"
	batchv1 "k8s.io/api/batch/v1"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// tenantIn creates a tenant whose namespace is pinned to shard s.
func tenantIn(t *testing.T, name, s string) *platform.Tenant {
	t.Helper()
	tn := plat.NewTenant(t, name)
	pin(t, tn, s)
	return tn
}

// pin labels tn's namespace with shard s.
func pin(t *testing.T, tn *platform.Tenant, s string) {
	t.Helper()
	ns := &corev1.Namespace{}
	tn.G.Expect(env.Client.Get(tn.Ctx, client.ObjectKey{Name: tn.NS}, ns)).To(Succeed())
	patch := client.MergeFrom(ns.DeepCopy())
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[shard.Label] = s
	tn.G.Expect(env.Client.Patch(tn.Ctx, ns, patch)).To(Succeed())
	// The admission policy reads namespaces from the API server's own
	// cache: wait until it labels with the new shard (a dry run).
	tn.G.Eventually(platform.ShardLabelled(tn.Ctx, env.Client, tn.NS, s)).WithTimeout(policyWait).Should(Succeed())
}

// inNamespaces selects writes in any of the tenants' namespaces.
func inNamespaces(tenants ...*platform.Tenant) func(write) bool {
	return func(w write) bool {
		for _, tn := range tenants {
			if w.Namespace == tn.NS {
				return true
			}
		}
		return false
	}
}

// reconciledIn selects writes in any of the tenants' namespaces other than
// a sweeper's relabelling of a tenant's cluster: the policy labels a
// cluster by its namespace's name before a test pins the namespace, and
// the shard that label names moves it.
func reconciledIn(tenants ...*platform.Tenant) func(write) bool {
	in := inNamespaces(tenants...)
	return func(w write) bool {
		sweep := w.Verb == "patch" && (w.Kind == "EtcdCluster" || w.Kind == "HelmRelease" || w.Kind == "PersistentVolumeClaim")
		return in(w) && !sweep
	}
}

// labelsOf lists the shard labels of the tenant's BackupJobs, Backups and
// EtcdSnapshots.
func labelsOf(g Gomega, tn *platform.Tenant) []string {
	var out []string
	var jobs backupsv1alpha1.BackupJobList
	var backups backupsv1alpha1.BackupList
	var snaps etcdv1alpha2.EtcdSnapshotList
	for _, l := range []client.ObjectList{&jobs, &backups, &snaps} {
		g.Expect(env.Client.List(context.Background(), l, client.InNamespace(tn.NS))).To(Succeed())
	}
	for _, o := range jobs.Items {
		out = append(out, "BackupJob "+o.Labels[shard.Label])
	}
	for _, o := range backups.Items {
		out = append(out, "Backup "+o.Labels[shard.Label])
	}
	for _, o := range snaps.Items {
		out = append(out, "EtcdSnapshot "+o.Labels[shard.Label])
	}
	return out
}

// Two shards over namespaces pinned to each: every backup succeeds, each
// shard's replica writes only in its own namespaces (the shard-1 replica
// never touches a BackupJob of a shard-0 namespace, nor the reverse), and
// what the driver creates carries its shard. Moving a namespace to the
// other shard (its label) moves its objects there, its cluster's included,
// and the next backup is the new shard's.
func TestEachShardReconcilesOnlyItsOwn(t *testing.T) {
	g := NewWithT(t)
	s0 := startReplica(t, "shard-0", 0, false, nil)
	s1 := startReplica(t, "shard-1", 1, false, nil)
	// Shard 2 owns none of the tenants, but its sweeper moves their
	// clusters when the policy labelled them for shard 2 by their names.
	startReplica(t, "shard-2", 2, false, nil)
	a0, b0 := tenantIn(t, "zero-a", "0"), tenantIn(t, "zero-b", "0")
	a1, b1 := tenantIn(t, "one-a", "1"), tenantIn(t, "one-b", "1")
	for _, tn := range []*platform.Tenant{a0, a1, b0, b1} {
		tn.Backup("first", "")
	}
	g.Expect(s1.writes.of(reconciledIn(a0, b0))).To(BeEmpty(), "shard 1 wrote in shard 0's namespaces")
	g.Expect(s0.writes.of(reconciledIn(a1, b1))).To(BeEmpty(), "shard 0 wrote in shard 1's namespaces")
	g.Expect(s0.writes.of(inNamespaces(a0))).NotTo(BeEmpty())
	g.Expect(s1.writes.of(inNamespaces(b1))).NotTo(BeEmpty())
	for tn, want := range map[*platform.Tenant]string{a0: "0", b0: "0", a1: "1", b1: "1"} {
		g.Expect(labelsOf(g, tn)).To(ConsistOf("BackupJob "+want, "Backup "+want, "EtcdSnapshot "+want), tn.NS)
	}

	// An admin moves a0 to shard 1: shard 0's sweeper relabels its
	// objects, and its next backup is shard 1's alone.
	pin(t, a0, "1")
	g.Eventually(func(g Gomega) {
		g.Expect(labelsOf(g, a0)).To(ConsistOf("BackupJob 1", "Backup 1", "EtcdSnapshot 1"))
		g.Expect(clusterLabels(g, a0)).To(HaveEach(HaveSuffix(" 1")))
		// The sweeper moves the Jobs the driver made there (the first
		// Backup's inspection) too: a relabel after the count below would
		// read as shard 0 still writing.
		g.Expect(jobLabels(g, a0)).To(HaveEach(HaveSuffix(" 1")))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	before := len(s0.writes.of(reconciledIn(a0)))
	a0.Backup("second", "")
	g.Expect(s0.writes.of(reconciledIn(a0))).To(HaveLen(before), "shard 0 still writes in a namespace it gave away")
	g.Expect(s1.writes.of(inNamespaces(a0))).NotTo(BeEmpty())
}

// jobLabels lists the shard labels of the Jobs the driver made in the
// tenant's namespace.
func jobLabels(g Gomega, tn *platform.Tenant) []string {
	var jobs batchv1.JobList
	g.Expect(env.Client.List(context.Background(), &jobs, client.InNamespace(tn.NS),
		client.MatchingLabels{"app.kubernetes.io/part-of": "etcd-backup-driver"})).To(Succeed())
	var out []string
	for _, j := range jobs.Items {
		out = append(out, "Job "+j.Labels[shard.Label])
	}
	return out
}
