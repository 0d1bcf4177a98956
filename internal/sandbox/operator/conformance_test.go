package operator_test

// Conformance of the stand-in operator: each test states one behaviour of
// the real etcd-operator (github.com/cozystack/etcd-operator at
// a371f0c1257a8a9342bdbf91ae1c719f97989cc2), names the upstream file it is
// read from, and checks that the stand-in does the same against the
// operator's own CRDs, with kube-controller-manager's garbage collector and
// Job controller running.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// Upstream: controllers/etcdcluster_controller.go (Reconcile's first-reconcile
// init, setProgressDeadline) and the CRD's default progressDeadlineSeconds
// (api/v1alpha2/etcdcluster_types.go): the spec is latched into
// status.observed with a cluster token and a progress deadline 600s out.
func TestLatchesSpecWithProgressDeadline(t *testing.T) {
	tn := newTenant(t)
	c := tn.cluster("etcd", 1)
	tn.g.Expect(tn.get(c).Spec.ProgressDeadlineSeconds).To(HaveValue(Equal(etcdv1alpha2.DefaultProgressDeadlineSeconds)), "the CRD defaults it")
	tn.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.ClusterToken).NotTo(BeEmpty())
		g.Expect(c.Status.Observed).NotTo(BeNil())
		g.Expect(c.Status.Observed.Replicas).To(Equal(int32(1)))
		g.Expect(c.Status.Observed.Version).To(Equal("3.6.11"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	if c.Status.ProgressDeadline != nil { // cleared again once reconciled
		tn.g.Expect(c.Status.ProgressDeadline.Time).To(BeTemporally("~", c.CreationTimestamp.Add(600*time.Second), 30*time.Second))
	}
	tn.awaitHealthy(c)
	progressing := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionProgressing)
	tn.g.Expect(progressing.Reason).To(Equal("Reconciled"))
	tn.g.Expect(c.Status.ProgressDeadline).To(BeNil(), "cleared once the target is reached")
}

// Upstream: controllers/etcdcluster_controller.go (bootstrap,
// tryDiscoverCluster, scaleUp, completePendingMember, tryPromoteLearner,
// updateStatus) and controllers/helpers.go (clusterLabels, memberLabels):
// one seed member founds the cluster; the cluster is Available=True /
// ClusterDiscovered as soon as the seed answers MemberList, with
// readyMembers still 0; the others join one at a time as learners and are
// promoted; readyMembers is counted once they all exist, and the cluster
// ends QuorumHealthy with every member a voter.
func TestDiscoveredBeforeMembersAreReady(t *testing.T) {
	tn := newTenant(t)
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	tn.g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(tn.ctx, &etcdv1alpha2.EtcdClusterList{}, client.InNamespace(tn.ns))
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	c := tn.cluster("etcd", 3, func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"cozystack.io/service": "etcd"}}
	})
	type seen struct {
		reason string
		ready  int32
		id     string
	}
	var history []seen
	deadline := time.After(time.Minute)
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			o := ev.Object.(*etcdv1alpha2.EtcdCluster)
			if cd := meta.FindStatusCondition(o.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable); cd != nil {
				history = append(history, seen{cd.Reason, o.Status.ReadyMembers, o.Status.ClusterID})
				done = cd.Reason == etcdv1alpha2.ReasonQuorumHealthy && o.Status.ReadyMembers == 3
			}
		case <-deadline:
			t.Fatalf("no QuorumHealthy with 3 ready members; saw %+v", history)
		}
	}
	tn.g.Expect(history[0].reason).To(Equal(etcdv1alpha2.ReasonClusterDiscovered), "%+v", history)
	tn.g.Expect(history[0].ready).To(BeZero(), "discovered before any member counts as ready: %+v", history)
	tn.g.Expect(history[0].id).To(MatchRegexp("^[0-9a-f]{16}$"))

	members := tn.members(c)
	tn.g.Expect(members).To(HaveLen(3))
	seeds := 0
	for _, m := range members {
		tn.g.Expect(metav1.IsControlledBy(&m, tn.get(c))).To(BeTrue())
		tn.g.Expect(m.Name).To(HavePrefix("etcd-"))
		tn.g.Expect(m.Finalizers).To(ContainElement(etcdmember.Finalizer))
		tn.g.Expect(m.Labels).To(HaveKeyWithValue(etcdmember.InstanceLabel, "etcd"))
		tn.g.Expect(m.Status.IsVoter).To(BeTrue(), m.Name)
		if m.Spec.Bootstrap {
			seeds++
		}
	}
	tn.g.Expect(seeds).To(Equal(1))

	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	list, err := cli.MemberList(tn.ctx)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(list.Members).To(HaveLen(3))
	for _, m := range list.Members {
		tn.g.Expect(m.IsLearner).To(BeFalse())
	}
}

// Upstream: controllers/etcdmember_controller.go (ensurePVC, handleDeletion)
// and controllers/helpers.go: each member owns a PVC data-<member> labelled
// app.kubernetes.io/instance=<cluster> and the cluster's additionalMetadata;
// the cluster has no finalizer, members carry member-cleanup; deleting the
// cluster removes members and PVCs through owner references alone (the
// garbage collector), and the member processes stop.
func TestMemberPVCsGoWithTheClusterThroughOwnerReferences(t *testing.T) {
	tn := newTenant(t)
	c := tn.awaitHealthy(tn.cluster("etcd", 3, func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.Storage = &etcdv1alpha2.StorageSpec{Size: quantity("2Gi")}
		c.Spec.AdditionalMetadata = &etcdv1alpha2.AdditionalMetadata{Labels: map[string]string{"cozystack.io/service": "etcd"}}
	}))
	tn.g.Expect(c.Finalizers).To(BeEmpty())
	members := map[types.UID]string{}
	for _, m := range tn.members(c) {
		members[m.UID] = m.Name
	}
	pvcs := tn.pvcs("etcd")
	tn.g.Expect(pvcs).To(HaveLen(3))
	for _, p := range pvcs {
		owner := metav1.GetControllerOf(&p)
		tn.g.Expect(owner).NotTo(BeNil())
		tn.g.Expect(owner.Kind).To(Equal("EtcdMember"))
		tn.g.Expect(p.Name).To(Equal("data-" + members[owner.UID]))
		tn.g.Expect(p.Labels).To(HaveKeyWithValue("cozystack.io/service", "etcd"))
		tn.g.Expect(p.Labels).To(HaveKeyWithValue(etcdmember.ClusterLabel, "etcd"))
		tn.g.Expect(p.Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"))
	}

	tn.g.Expect(k8s.Delete(tn.ctx, c)).To(Succeed())
	t0 := time.Now()
	tn.g.Eventually(func() int { return len(tn.members(c)) }).WithTimeout(30 * time.Second).Should(BeZero())
	t.Logf("members gone after %s", time.Since(t0))
	tn.g.Eventually(func() int { return len(tn.members(c)) + len(tn.pvcs("etcd")) }).WithTimeout(30*time.Second).Should(BeZero(),
		"the garbage collector deletes members, then their PVCs")
	t.Logf("pvcs gone after %s", time.Since(t0))
	tn.g.Expect(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))).To(BeEmpty(), "member processes stopped")
	tn.g.Eventually(func() error {
		return k8s.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "etcd-sandbox-endpoints"}, &corev1.ConfigMap{})
	}).WithTimeout(10 * time.Second).Should(MatchError(ContainSubstring("not found")))
}

// Upstream: controllers/etcdcluster_controller.go (Reconcile's pre-bootstrap
// fan-out, updateStatus's Paused branch): a cluster created with replicas 0
// is never bootstrapped (no member, no PVC) and reports Paused; scaling it
// up bootstraps it then.
func TestReplicasZeroIsNeverBootstrapped(t *testing.T) {
	tn := newTenant(t)
	c := tn.awaitAvailable(tn.cluster("etcd", 0), metav1.ConditionFalse, "Paused", 30*time.Second)
	tn.g.Expect(c.Status.ClusterID).To(BeEmpty())
	tn.g.Consistently(func() int { return len(tn.members(c)) + len(tn.pvcs("etcd")) }).WithTimeout(2 * time.Second).Should(BeZero())

	c.Spec.Replicas = int32p(1)
	tn.g.Expect(k8s.Update(tn.ctx, c)).To(Succeed())
	tn.awaitHealthy(c)
	tn.g.Expect(c.Status.ClusterID).NotTo(BeEmpty())
}

// Upstream: controllers/etcdcluster_controller.go (handleDeadlineExceeded):
// a cluster that has not formed by status.progressDeadline is
// Available=False and Progressing=False with reason BootstrapFailed, and
// stays so (the operator stops acting; delete and re-create it).
func TestBootstrapFailsAtTheProgressDeadline(t *testing.T) {
	tn := newTenant(t)
	op.Faults.FailBootstrap(types.NamespacedName{Namespace: tn.ns, Name: "etcd"}, 1)
	c := tn.cluster("etcd", 3, func(c *etcdv1alpha2.EtcdCluster) { c.Spec.ProgressDeadlineSeconds = int32p(3) })
	tn.g.Consistently(func() string { return tn.get(c).Status.ClusterID }).WithTimeout(2 * time.Second).Should(BeEmpty())
	c = tn.awaitAvailable(c, metav1.ConditionFalse, etcdv1alpha2.ReasonBootstrapFailed, 30*time.Second)
	progressing := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionProgressing)
	tn.g.Expect(progressing.Status).To(Equal(metav1.ConditionFalse))
	tn.g.Expect(progressing.Reason).To(Equal(etcdv1alpha2.ReasonBootstrapFailed))
	tn.g.Consistently(func() string {
		return meta.FindStatusCondition(tn.get(c).Status.Conditions, etcdv1alpha2.ClusterConditionAvailable).Reason
	}).WithTimeout(2*time.Second).Should(Equal(etcdv1alpha2.ReasonBootstrapFailed), "final")

	// Deleting and re-creating it is the way out: the next incarnation
	// bootstraps.
	tn.g.Expect(k8s.Delete(tn.ctx, c)).To(Succeed())
	tn.g.Eventually(func() int { return len(tn.members(c)) }).WithTimeout(30 * time.Second).Should(BeZero())
	tn.awaitHealthy(tn.cluster("etcd", 1))
}

// Upstream: controllers/etcdcluster_controller.go (handleDeadlineExceeded,
// the steady-state branch): a formed cluster that misses a new target is
// Available=False/DeadlineExceeded until its spec changes, which retries.
func TestFormedClusterMissingItsTargetIsDeadlineExceeded(t *testing.T) {
	tn := newTenant(t)
	c := tn.awaitHealthy(tn.cluster("etcd", 1, func(c *etcdv1alpha2.EtcdCluster) { c.Spec.ProgressDeadlineSeconds = int32p(3) }))
	op.Faults.FailJoin(client.ObjectKeyFromObject(c), 1)
	c.Spec.Replicas = int32p(2)
	tn.g.Expect(k8s.Update(tn.ctx, c)).To(Succeed())
	c = tn.awaitAvailable(c, metav1.ConditionFalse, etcdv1alpha2.ReasonDeadlineExceeded, 30*time.Second)
	tn.g.Expect(c.Status.ClusterID).NotTo(BeEmpty())

	c.Spec.Replicas = int32p(1)
	tn.g.Expect(k8s.Update(tn.ctx, c)).To(Succeed())
	tn.awaitHealthy(c)
	tn.g.Eventually(func() []etcdmember.EtcdMember { return tn.members(c) }).WithTimeout(30 * time.Second).Should(HaveLen(1))
}

// Upstream: controllers/etcdsnapshot_controller.go and
// controllers/snapshot_job.go: a snapshot is Pending, then a Job
// <snapshot>-snapshot owned by it (backoffLimit 3, activeDeadlineSeconds,
// S3 keys from the credentials Secret through non-optional secretKeyRefs)
// and Started/JobCreated. Without the Secret the Pod cannot start and the
// snapshot waits (it does not fail); once the Secret exists the agent
// (internal/agent/snapshot.go) streams the snapshot to <key><name>.db and
// the snapshot is Complete/SnapshotStored with the artifact's URI, size and
// sha256.
func TestSnapshotWaitsForItsSecretThenStoresTheArtifact(t *testing.T) {
	tn := newTenant(t)
	c := tn.awaitHealthy(tn.cluster("etcd", 1))
	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	tn.g.Expect(kvdata.Set{Prefix: "/conf", N: 200, Size: 128, Gen: "one"}.Write(tn.ctx, cli)).To(Succeed())

	s := tn.snapshot("first", "etcd", tn.ns+"/etcd/")
	tn.awaitSnapshotReason(s, etcdv1alpha2.SnapshotPhaseStarted, "JobCreated")
	var job batchv1.Job
	tn.g.Expect(k8s.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "first-snapshot"}, &job)).To(Succeed())
	tn.g.Expect(metav1.IsControlledBy(&job, s)).To(BeTrue())
	tn.g.Expect(job.Spec.BackoffLimit).To(HaveValue(Equal(int32(3))))
	tn.g.Expect(job.Spec.ActiveDeadlineSeconds).To(HaveValue(Equal(int64(jobDeadline / time.Second))))
	tn.g.Expect(job.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", credsSecret)))
	tn.g.Eventually(func() string { return tn.agentWaitingReason("first-snapshot") }).WithTimeout(20 * time.Second).Should(Equal("CreateContainerConfigError"))
	tn.g.Expect(tn.getSnapshot(s).Status.Phase).To(Equal(etcdv1alpha2.SnapshotPhaseStarted), "waits, does not fail")

	tn.secret()
	s = tn.awaitSnapshotReason(s, etcdv1alpha2.SnapshotPhaseComplete, "SnapshotStored")
	key := tn.ns + "/etcd/first.db"
	tn.g.Expect(s.Status.Artifact.URI).To(Equal("s3://" + bucket + "/" + key))
	obj, err := tn.s3().GetObject(tn.ctx, bucket, key, minio.GetObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	h := sha256.New()
	n, err := io.Copy(h, obj)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(s.Status.Artifact.SizeBytes).To(Equal(n))
	tn.g.Expect(s.Status.Artifact.Checksum).To(Equal("sha256:" + hex.EncodeToString(h.Sum(nil))))
	tn.g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(&job), &job)).To(Succeed())
	tn.g.Expect(job.Status.Succeeded).To(Equal(int32(1)), "the Job controller counted the Pod")
}

// Upstream: controllers/snapshot_job.go (activeDeadlineSeconds) and
// controllers/etcdsnapshot_controller.go (jobFailed): with its credentials
// Secret missing the snapshot hangs until the Job's deadline, then the Job
// controller fails the Job (DeadlineExceeded) and the snapshot is
// Failed/JobFailed.
func TestSnapshotWithoutSecretFailsOnlyAtTheJobDeadline(t *testing.T) {
	tn := newTenant(t)
	tn.awaitHealthy(tn.cluster("etcd", 1))
	started := time.Now()
	s := tn.snapshot("orphan", "etcd", "")
	tn.g.Consistently(func() etcdv1alpha2.SnapshotPhase { return tn.getSnapshot(s).Status.Phase }).
		WithTimeout(jobDeadline / 2).Should(BeElementOf(etcdv1alpha2.SnapshotPhase(""), etcdv1alpha2.SnapshotPhasePending, etcdv1alpha2.SnapshotPhaseStarted))
	s = tn.awaitSnapshotReason(s, etcdv1alpha2.SnapshotPhaseFailed, "JobFailed")
	tn.g.Expect(time.Since(started)).To(BeNumerically(">=", jobDeadline))
	var job batchv1.Job
	tn.g.Expect(k8s.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: "orphan-snapshot"}, &job)).To(Succeed())
	tn.g.Expect(job.Status.Conditions).To(ContainElement(And(HaveField("Type", batchv1.JobFailed), HaveField("Reason", "DeadlineExceeded"))))
}

// Upstream: controllers/etcdsnapshot_controller.go: a snapshot of a cluster
// that does not exist fails at once with ClusterNotFound.
func TestSnapshotOfMissingClusterFailsAtOnce(t *testing.T) {
	tn := newTenant(t)
	tn.awaitSnapshotReason(tn.snapshot("nothing", "absent", ""), etcdv1alpha2.SnapshotPhaseFailed, "ClusterNotFound")
}

// Upstream: controllers/helpers.go (restoreForSeed), controllers/
// etcdmember_controller.go (restoreInitContainers) and
// internal/agent/restore.go: only the seed carries the restore; its
// credentials Secret missing keeps it from starting
// (CreateContainerConfigError) without failing; once the Secret exists the
// seed restores the exact object and the other members join it.
func TestRestoreWaitsForItsSecretAndRestoresTheSnapshot(t *testing.T) {
	src := newTenant(t)
	src.secret()
	sc := src.awaitHealthy(src.cluster("etcd", 1))
	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(sc))...)
	src.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	data := kvdata.Set{Prefix: "/conf", N: 500, Size: 256, Gen: "restored"}
	src.g.Expect(data.Write(src.ctx, cli)).To(Succeed())
	snap := src.awaitSnapshotReason(src.snapshot("golden", "etcd", "golden/"), etcdv1alpha2.SnapshotPhaseComplete, "SnapshotStored")
	key := strings.TrimPrefix(snap.Status.Artifact.URI, "s3://"+bucket+"/")

	tn := newTenant(t)
	c := tn.cluster("etcd", 3, restoreFrom(key))
	tn.g.Eventually(func() string { return tn.seedReadyReason(c) }).WithTimeout(20 * time.Second).Should(Equal("CreateContainerConfigError"))
	tn.g.Expect(tn.get(c).Status.ClusterID).To(BeEmpty())

	tn.secret()
	c = tn.awaitHealthy(c)
	restoring := 0
	for _, m := range tn.members(c) {
		if m.Spec.Restore != nil {
			restoring++
			tn.g.Expect(m.Spec.Bootstrap).To(BeTrue(), "only the seed restores")
			tn.g.Expect(m.Spec.Restore.Source.S3.Key).To(Equal(key))
		}
	}
	tn.g.Expect(restoring).To(Equal(1))
	restored, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer restored.Close()
	tn.g.Expect(data.Check(tn.ctx, restored)).To(Succeed())
}

// Upstream: internal/agent/restore.go (the free-space pre-flight and
// resolveEtcdutl): the restore needs twice the snapshot's size free on the
// member volume (spec.storage.size) and an etcd with etcdutl (3.5+); either
// failing crash-loops the seed and the cluster ends BootstrapFailed.
func TestRestoreNeedsRoomAndEtcdutl(t *testing.T) {
	tn := newTenant(t)
	tn.secret()
	key := "big/object.db"
	payload := bytes.Repeat([]byte("x"), 3<<20)
	_, err := tn.s3().PutObject(tn.ctx, bucket, key, bytes.NewReader(payload), int64(len(payload)), minio.PutObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())

	for name, tc := range map[string]struct {
		mutate func(*etcdv1alpha2.EtcdCluster)
		want   string
	}{
		"small-volume": {func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Storage = &etcdv1alpha2.StorageSpec{Size: quantity("5Mi")} },
			"needs 6291456 bytes, the volume (spec.storage.size) has 5242880"},
		"old-etcd": {func(c *etcdv1alpha2.EtcdCluster) { c.Spec.Version = "3.4.30" }, "ships no etcdutl"},
	} {
		c := tn.cluster(name, 1, restoreFrom(key), tc.mutate, func(c *etcdv1alpha2.EtcdCluster) { c.Spec.ProgressDeadlineSeconds = int32p(4) })
		tn.g.Eventually(func() string { return tn.seedReadyMessage(c) }).WithTimeout(20*time.Second).Should(ContainSubstring(tc.want), name)
		tn.awaitAvailable(c, metav1.ConditionFalse, etcdv1alpha2.ReasonBootstrapFailed, 30*time.Second)
	}
}

func restoreFrom(key string) func(*etcdv1alpha2.EtcdCluster) {
	return func(c *etcdv1alpha2.EtcdCluster) {
		c.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.RestoreSource{
			S3: &etcdv1alpha2.S3Source{Endpoint: s3.URL, Bucket: bucket, Key: key, ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: credsSecret}},
		}}}
	}
}

func (tn *tenant) snapshot(name, cluster, prefix string) *etcdv1alpha2.EtcdSnapshot {
	tn.t.Helper()
	s := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{
			ClusterRef: corev1.LocalObjectReference{Name: cluster},
			Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
				Endpoint: s3.URL, Bucket: bucket, Key: prefix, ForcePathStyle: true,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: credsSecret},
			}},
		},
	}
	tn.g.Expect(k8s.Create(tn.ctx, s)).To(Succeed())
	return s
}

func (tn *tenant) getSnapshot(s *etcdv1alpha2.EtcdSnapshot) *etcdv1alpha2.EtcdSnapshot {
	tn.t.Helper()
	tn.g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
	return s
}

func (tn *tenant) awaitSnapshotReason(s *etcdv1alpha2.EtcdSnapshot, phase etcdv1alpha2.SnapshotPhase, reason string) *etcdv1alpha2.EtcdSnapshot {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		g.Expect(s.Status.Phase).To(Equal(phase))
		cd := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha2.SnapshotConditionReady)
		g.Expect(cd).NotTo(BeNil())
		g.Expect(cd.Reason).To(Equal(reason))
	}).WithTimeout(jobDeadline + time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
	return s
}

// agentWaitingReason is why the snapshot Job's Pod has not started.
func (tn *tenant) agentWaitingReason(job string) string {
	var pods corev1.PodList
	tn.g.Expect(k8s.List(tn.ctx, &pods, client.InNamespace(tn.ns), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil {
				return cs.State.Waiting.Reason
			}
		}
	}
	return ""
}

func (tn *tenant) seedReadyCondition(c *etcdv1alpha2.EtcdCluster) *metav1.Condition {
	for _, m := range tn.members(c) {
		if m.Spec.Bootstrap {
			return meta.FindStatusCondition(m.Status.Conditions, etcdmember.ConditionReady)
		}
	}
	return nil
}

func (tn *tenant) seedReadyReason(c *etcdv1alpha2.EtcdCluster) string {
	if cd := tn.seedReadyCondition(c); cd != nil {
		return cd.Reason
	}
	return ""
}

func (tn *tenant) seedReadyMessage(c *etcdv1alpha2.EtcdCluster) string {
	if cd := tn.seedReadyCondition(c); cd != nil {
		return cd.Message
	}
	return ""
}

func (tn *tenant) s3() *minio.Client {
	tn.t.Helper()
	c, err := objstore.New(objstore.Location{Endpoint: s3.URL, ForcePathStyle: true}, creds.AccessKeyID, creds.SecretAccessKey)
	tn.g.Expect(err).NotTo(HaveOccurred())
	return c
}
