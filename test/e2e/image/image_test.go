package image

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

const ns = "tenant-image"

// deployTenant makes namespace ns with an Etcd application deployed
// through a HelmRelease of charts/etcd, and the admin's strategy, its
// StrategyPolicy (policy) and BackupClass, all named class, with the S3
// credentials Secret; it waits for the cluster to be healthy.
func deployTenant(g *WithT, ns, class string, policy driverv1alpha1.StrategyPolicySpec) {
	ctx := context.Background()
	fps := true
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: policy},
		&strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: strategyv1alpha1.EtcdSpec{
			Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: sandbox.DefaultBucket, Endpoint: sb.S3URL, ForcePathStyle: &fps,
				Key:                  "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/",
				CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "etcd-backup-s3"},
			}}},
		}},
		&backupsv1alpha1.BackupClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: backupsv1alpha1.BackupClassSpec{
			Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &strategyv1alpha1.GroupVersion.Group, Kind: "Etcd", Name: class},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}},
		}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-backup-s3"}, StringData: map[string]string{
			objstore.AccessKeyIDKey: sb.S3Credentials.AccessKeyID, objstore.SecretAccessKeyKey: sb.S3Credentials.SecretAccessKey,
		}},
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}},
		&helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}, Spec: helmv2.HelmReleaseSpec{
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack-apps"},
			}},
			Values: &apiextensionsv1.JSON{Raw: mustJSON(map[string]any{"replicas": 1})},
		}},
	} {
		g.Expect(sb.Client.Create(ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
	awaitHealthy(g, ns)
}

// The demo's path with the driver and the staging step running from the
// image: the driver's container is what the chart asks for (user 65532,
// read-only root filesystem, no privilege escalation, no capabilities, the
// memory limit, the chart's arguments); a backup lands in S3; a restore
// reads the live revision through the client Service's name (so its
// RevisionRaised reason is RevisionRaised, not RevisionBumpedBlind, which
// it would be if the container could not reach etcd), stages from the
// image as user 65532 on its claim, and the backed-up data is back.
func TestBackupAndRestoreRunFromTheImage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	inspected := inspectDriver(t)
	g.Expect(inspected.Config.User).To(Equal("65532:65532"))
	g.Expect(inspected.HostConfig.ReadonlyRootfs).To(BeTrue())
	g.Expect(inspected.HostConfig.SecurityOpt).To(ContainElement("no-new-privileges"))
	g.Expect(inspected.HostConfig.CapDrop).To(ContainElements("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_SETUID", "CAP_NET_RAW"), "every default capability dropped")
	g.Expect(inspected.HostConfig.CapAdd).To(BeEmpty())
	g.Expect(inspected.HostConfig.Memory).To(BeEquivalentTo(256<<20), "the chart's memory limit")
	g.Expect(inspected.ImageName).To(Equal(sb.Containers.Image))
	g.Expect(inspected.Image).To(Equal(trimSHA(sb.Containers.ImageID)))
	g.Expect(inspected.Path).To(Equal("/manager"))
	g.Expect(inspected.Args).To(Equal(sb.DriverContainer.Args), "the chart's arguments (sandbox.DriverPod), as they are")
	g.Expect(inspected.Args).To(ContainElements(
		"--leader-elect=true", "--namespace=etcd-backup-driver", "--leader-election-namespace=etcd-backup-driver",
		"--provenance-secret=etcd-backup-driver-provenance", "--staging-image="+sb.Containers.Image))

	deployTenant(g, ns, "image", driverv1alpha1.StrategyPolicySpec{}) // https only
	awaitHealthy(g, ns)

	backedUp := kvdata.Set{Prefix: "/sentinel", N: 2000, Size: 256, Gen: "backed-up"}
	g.Expect(backedUp.Write(ctx, etcd(t, g, ns))).To(Succeed())
	job := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"}, Spec: backupsv1alpha1.BackupJobSpec{
		ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}, BackupClassName: "image",
	}}
	g.Expect(sb.Client.Create(ctx, job)).To(Succeed())
	g.Eventually(func() backupsv1alpha1.BackupJobPhase {
		g.Expect(sb.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		return job.Status.Phase
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(
		BeElementOf(backupsv1alpha1.BackupJobPhaseSucceeded, backupsv1alpha1.BackupJobPhaseFailed))
	g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseSucceeded), job.Status.Message)

	live := kvdata.Set{Prefix: "/sentinel", N: 2000, Size: 256, Gen: "live"}
	g.Expect(live.Write(ctx, etcd(t, g, ns))).To(Succeed())
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: job.Status.BackupRef.Name}}}
	g.Expect(sb.Client.Create(ctx, rj)).To(Succeed())
	g.Eventually(func() backupsv1alpha1.RestoreJobPhase {
		g.Expect(sb.Client.Get(ctx, client.ObjectKeyFromObject(rj), rj)).To(Succeed())
		return rj.Status.Phase
	}).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(
		BeElementOf(backupsv1alpha1.RestoreJobPhaseSucceeded, backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	raised := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionRaised)), raised.Message)

	var pods corev1.PodList
	g.Expect(sb.Client.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{backupsv1alpha1.StagingLabel})).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty(), "the staging Job's Pod")
	for _, p := range pods.Items {
		g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded))
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			g.Expect(st.ImageID).To(Equal(sb.Containers.ImageID), "container %s of %s ran from the image", st.Name, p.Name)
		}
	}

	awaitHealthy(g, ns)
	g.Expect(backedUp.Check(ctx, etcd(t, g, ns))).To(Succeed())
}

func awaitHealthy(g *WithT, ns string) {
	g.Eventually(func(g Gomega) {
		var c etcdv1alpha2.EtcdCluster
		g.Expect(sb.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd"}, &c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(etcdv1alpha2.ReasonQuorumHealthy), cond.Message)
		g.Expect(c.Status.ReadyMembers).To(BeEquivalentTo(1))
	}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
}

func etcd(t *testing.T, g *WithT, ns string) *clientv3.Client {
	cli, err := etcdproc.Client(sb.Fleet.Endpoints(client.ObjectKey{Namespace: ns, Name: "etcd"})...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
