package inspection

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) { env = e }))
}

var keys = provenance.StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": []byte(strings.Repeat("k", 32))}}

var loopback, _ = endpointpolicy.Parse(testenv.LoopbackCIDRs)

const image = "registry.example/etcd-backup-driver:test"

type harness struct {
	g   *WithT
	ctx context.Context
	ns  string
	r   *Reconciler
	rec *events.FakeRecorder
}

func newHarness(t *testing.T) *harness {
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inspect-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	rec := events.NewFakeRecorder(100)
	return &harness{g: g, ctx: ctx, ns: ns.Name, rec: rec, r: &Reconciler{
		Client: env.Client, APIReader: env.Client, Recorder: rec, Keys: keys, Policy: loopback, Image: image, MaxJobs: 100,
	}}
}

// backup creates a Ready Etcd Backup of plan "daily", signed as the backup
// path signs it, taken at minute min.
func (h *harness) backup(name string, min int) *backupsv1alpha1.Backup {
	rec := artifact.Record{SnapshotName: name, SnapshotUID: "uid-" + name, EtcdVersion: "3.6.11",
		DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://127.0.0.1:9000", Key: h.ns + "/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	h.g.Expect(err).NotTo(HaveOccurred())
	group := strategyv1alpha1.GroupVersion.Group
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: "daily"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "etcd-s3"},
			TakenAt:        metav1.NewTime(time.Date(2026, 12, 1, 2, min, 0, 0, time.UTC)),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/" + h.ns + "/etcd/" + name, SizeBytes: 4 << 20,
				Checksum: "sha256:" + strings.Repeat("ab", 32)}},
	}
	h.g.Expect(provenance.Seal(h.ctx, keys, b)).To(Succeed())
	h.g.Expect(env.Client.Create(h.ctx, b)).To(Succeed())
	return b
}

func reconcileRequest(b *backupsv1alpha1.Backup) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}
}

func (h *harness) reconcile(b *backupsv1alpha1.Backup) {
	_, err := h.r.Reconcile(h.ctx, reconcileRequest(b))
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
}

// job is the inspection Job the driver made for b.
func (h *harness) job(b *backupsv1alpha1.Backup) *batchv1.Job {
	name, err := h.r.jobName(h.ctx, b)
	h.g.Expect(err).NotTo(HaveOccurred())
	var j batchv1.Job
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &j)).To(Succeed())
	return &j
}

// finish plays the Job controller and the kubelet for j: a Pod of j whose
// container ended with the report's exit code and line, and j's final
// conditions. containers, when set, replaces the Pod's containers.
func (h *harness) finish(j *batchv1.Job, rep step.Report, containers []corev1.Container) {
	if containers == nil {
		containers = j.Spec.Template.Spec.Containers
	}
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, GenerateName: j.Name + "-",
			Labels:          map[string]string{batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: containers, Volumes: j.Spec.Template.Spec.Volumes},
	}
	h.g.Expect(env.Client.Create(h.ctx, pod)).To(Succeed())
	phase := corev1.PodSucceeded
	if rep.ExitCode() != 0 {
		phase = corev1.PodFailed
	}
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: containers[0].Name, Image: containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(rep.ExitCode()), Message: rep.Line()}},
	}}}
	h.g.Expect(env.Client.Status().Update(h.ctx, pod)).To(Succeed())

	now := metav1.Now()
	j.Status.StartTime = &now
	if rep.ExitCode() == 0 {
		j.Status.Succeeded, j.Status.CompletionTime = 1, &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}
	} else {
		msg := fmt.Sprintf("Container inspect exited with code %d matching FailJob rule at index 0", rep.ExitCode())
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, Message: msg, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, Message: msg, LastTransitionTime: now},
		}
	}
	h.g.Expect(env.Client.Status().Update(h.ctx, j)).To(Succeed())
}

// manifest is a manifest of one /registry keyspace holding pods and
// configmaps in the namespaces given (podsEach pods, 3 configmaps each).
func manifest(podsEach int64, namespaces ...string) driverv1alpha1.BackupManifest {
	ks := driverv1alpha1.KeyspaceManifest{Prefix: "/registry", Namespaces: int64(len(namespaces)), NamespaceNames: namespaces}
	pods, cms := podsEach*int64(len(namespaces)), 3*int64(len(namespaces))
	ks.Resources = []driverv1alpha1.ObjectCount{{Name: "pods", Count: pods}, {Name: "configmaps", Count: cms}, {Name: "namespaces", Count: int64(len(namespaces))}}
	ks.Objects = pods + cms + int64(len(namespaces))
	return driverv1alpha1.BackupManifest{Revision: 1000 + ks.Objects, Keys: ks.Objects + 10, DBSizeBytes: 1 << 20,
		Keyspaces: []driverv1alpha1.KeyspaceManifest{ks}}
}

func inspected(m driverv1alpha1.BackupManifest) step.Report {
	return step.NewReport(m, nil)
}
