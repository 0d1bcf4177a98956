package sharding

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// newNamespace creates a namespace, pinned to a shard when pin is not
// empty (the namespace's own shard label).
func newNamespace(t *testing.T, prefix, pin string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	if pin != "" {
		ns.Labels = map[string]string{shard.Label: pin}
	}
	NewWithT(t).Expect(env.Client.Create(context.Background(), ns)).To(Succeed())
	return ns
}

// awaitPolicy waits until the API server, which loads a new policy in the
// background, applies the suite's admission policy.
func awaitPolicy(t *testing.T) {
	t.Helper()
	probe := newNamespace(t, "probe", "")
	NewWithT(t).Eventually(platform.ShardLabelled(context.Background(), env.Client, probe.Name, strconv.Itoa(shard.Of(probe, shards)))).
		WithTimeout(policyWait).Should(Succeed())
}

// backupJob is a BackupJob of the tenant's application.
func backupJob(ns, name string) *backupsv1alpha1.BackupJob {
	return &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupJobSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: platform.ClassName},
	}
}

// The chart's MutatingAdmissionPolicy, on the real kube-apiserver, labels
// what tenants create with the shard internal/shard.Of computes: from the
// namespace's UID, or from the namespace's own label when it names a shard.
// A tenant's own label on the object does not survive, nor does removing
// it on an update.
func TestAdmissionPolicyLabelsTenantObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	awaitPolicy(t)

	seen := map[int]bool{}
	for i := range 12 {
		pin := ""
		switch i {
		case 0:
			pin = "2"
		case 1:
			pin = "7" // names no shard: the UID decides
		}
		ns := newNamespace(t, "policy", pin)
		want := shard.Of(ns, shards)
		seen[want] = true
		if i == 0 {
			g.Expect(want).To(Equal(2))
		}
		job := backupJob(ns.Name, "tenant")
		job.Labels = map[string]string{shard.Label: strconv.Itoa((want + 1) % shards)}
		g.Expect(env.Client.Create(ctx, job)).To(Succeed())
		g.Expect(job.Labels).To(HaveKeyWithValue(shard.Label, strconv.Itoa(want)), "namespace %s uid %s labels %v", ns.Name, ns.UID, ns.Labels)

		plan := &backupsv1alpha1.Plan{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nightly"},
			Spec: backupsv1alpha1.PlanSpec{Schedule: backupsv1alpha1.PlanSchedule{Cron: "0 3 * * *"},
				ApplicationRef: job.Spec.ApplicationRef, BackupClassName: platform.ClassName}}
		g.Expect(env.Client.Create(ctx, plan)).To(Succeed())
		g.Expect(plan.Labels).To(HaveKeyWithValue(shard.Label, strconv.Itoa(want)))
		patch := client.MergeFrom(plan.DeepCopy())
		delete(plan.Labels, shard.Label)
		g.Expect(env.Client.Patch(ctx, plan, patch)).To(Succeed())
		g.Expect(plan.Labels).To(HaveKeyWithValue(shard.Label, strconv.Itoa(want)), "an update keeps the label")
	}
	// Twelve random UIDs land in more than one of three shards unless the
	// policy and Of both collapse to one value.
	g.Expect(len(seen)).To(BeNumerically(">", 1), "shards seen: %v", seen)
}
