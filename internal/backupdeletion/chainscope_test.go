package backupdeletion

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/plankeeper"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// Retention pruning a Backup of a Plan deletes its chain with it (the
// retention deletes the Backup; its finalizer deletes the rest), and keeps
// the chain of the Backup it keeps.
func TestRetentionDeletesThePrunedBackupsChain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	class := &backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
		}}},
	}
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, class))).To(Succeed())
	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly", Annotations: map[string]string{planpolicy.RetentionKeepLast: "1"}},
		Spec: backupsv1alpha1.PlanSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: "etcd", Schedule: backupsv1alpha1.PlanSchedule{Cron: "@yearly"}},
	}
	g.Expect(env.Client.Create(ctx, plan)).To(Succeed())
	t0 := time.Now().Add(-2 * time.Hour)
	old := newFixture(g, ns, "nightly-1", driverv1alpha1.DeletionPolicyDelete)
	oldChain := chained(g, old, 100, t0, plan.Name)
	kept := newFixture(g, ns, "nightly-2", driverv1alpha1.DeletionPolicyDelete)
	keptChain := chained(g, kept, 200, t0.Add(time.Hour), plan.Name)
	h := newHarness()
	for _, f := range []*fixture{old, kept} {
		g.Expect(h.reconcile(f.backup)).To(Succeed()) // the finalizer
	}

	keeper := &plankeeper.Reconciler{Client: env.Client, APIReader: env.Client, Recorder: events.NewFakeRecorder(100),
		Clock: clock.RealClock{}, Keys: keys}
	_, err := keeper.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(plan)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.backup), old.backup)).To(Succeed())
	g.Expect(old.backup.DeletionTimestamp).NotTo(BeNil(), "retention deletes the older Backup")

	g.Expect(h.reconcile(old.backup)).To(Succeed())
	g.Expect(gone(g, old.backup)).To(BeTrue())
	g.Expect(existing(g, append(oldChain, old.key)...)).To(BeEmpty())
	g.Expect(gone(g, kept.backup)).To(BeFalse())
	g.Expect(existing(g, append(keptChain, kept.key)...)).To(HaveLen(4))
}

// recordingBroker stands in for the credential broker (credbroker.Broker,
// tested on MinIO in its package) of a brokered strategy: it hands the
// platform's key for the keys it is asked about, and records them.
type recordingBroker struct{ asked []string }

func (b *recordingBroker) DeletionKey(_ context.Context, _, _, _, key string) (s3object.Credentials, bool, error) {
	b.asked = append(b.asked, key)
	return s3object.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, true, nil
}

// With a brokered strategy, the broker is asked for the chain's folder as
// well as the snapshot: it hands a key only for what lies in the tenant's
// scope.
func TestTheBrokerIsAskedForTheChainsFolder(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(g)
	f := newFixture(g, ns, "b-brokered", driverv1alpha1.DeletionPolicyDelete)
	chain := chained(g, f, 100, time.Now(), "")
	h := newHarness()
	broker := &recordingBroker{}
	h.r.Broker = broker
	deleteBackup(g, h, f.backup)

	g.Expect(h.reconcile(f.backup)).To(Succeed())
	g.Expect(broker.asked).To(Equal([]string{f.key, ns + "/etcd/changes/100/"}))
	g.Expect(existing(g, append(chain, f.key)...)).To(BeEmpty())
}

// A tenant who edits the revision in a Backup's manifest (it can write
// the Backup) cannot point its deletion at another Backup's chain: the
// revision counts only as the driver signed it, and an edited manifest
// has no chain at all.
func TestAnEditedRevisionCannotDeleteAnotherChain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(g)
	createSecret(g, ns)
	t0 := time.Now().Add(-time.Hour)
	forged := newFixture(g, ns, "b-forged", driverv1alpha1.DeletionPolicyDelete)
	forgedChain := chained(g, forged, 100, t0, "")
	victim := newFixture(g, ns, "b-victim", driverv1alpha1.DeletionPolicyDelete)
	victimChain := chained(g, victim, 200, t0.Add(time.Minute), "")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(forged.backup), forged.backup)).To(Succeed())
	m := artifact.Manifest(forged.backup)
	m.Revision = 200
	g.Expect(artifact.SetManifest(forged.backup, m)).To(Succeed())
	g.Expect(env.Client.Update(ctx, forged.backup)).To(Succeed())
	h := newHarness()

	deleteBackup(g, h, forged.backup)
	g.Expect(h.reconcile(forged.backup)).To(Succeed())

	g.Expect(gone(g, forged.backup)).To(BeTrue())
	g.Expect(existing(g, forged.key)).To(BeEmpty(), "its own snapshot, which its signature vouches for, goes")
	g.Expect(existing(g, victimChain...)).To(Equal(victimChain))
	g.Expect(existing(g, forgedChain...)).To(Equal(forgedChain), "with its manifest edited it has no chain the driver can vouch for")
}
