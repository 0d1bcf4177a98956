package restore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	pointrun "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay/run"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// pointBase is a base Backup of a restore to a point, made of real data:
// a real etcd's snapshot, stored in the suite's S3 server and recorded as
// this driver records a Backup it took and inspected (signed, with a
// signed manifest at the snapshot's revision), and the chain of changes
// after it in the same bucket.
type pointBase struct {
	backup *backupsv1alpha1.Backup
	base   changelog.Base
	chain  changelog.Store
}

// newPointBase snapshots a real etcd holding keys (key, value, ...) as
// Backup name of ns, taken at takenAt.
func newPointBase(t *testing.T, ns, name string, takenAt time.Time, kv ...string) pointBase {
	t.Helper()
	ctx := context.Background()
	cli, _ := testenv.StartEtcd(t)
	for i := 0; i+1 < len(kv); i += 2 {
		if _, err := cli.Put(ctx, kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	data, base := pointchain.Snapshot(ctx, t, cli)
	// The application's own prefix: chains of every test's bases are
	// apart, whatever their revisions.
	prefix := ns + "/etcd/"
	fps := true
	rec := artifact.Record{SnapshotName: name, EtcdVersion: "3.6.11", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: testBucket, Endpoint: testEndpoint, Key: prefix, ForcePathStyle: &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret}}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	key := artifact.ObjectKey(prefix, name)
	putObject(key, data)
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{ApplicationRef: appRef(), StrategyRef: strategyRef(),
			TakenAt: metav1.NewTime(takenAt), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI(testBucket, key), SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}},
	}
	if err := provenance.Seal(ctx, testKeys, b); err != nil {
		t.Fatal(err)
	}
	m := driverv1alpha1.BackupManifest{Revision: base.Revision, Keys: int64(len(kv) / 2), DBSizeBytes: int64(len(data)), InspectedAt: metav1.Now()}
	if err := provenance.SealManifest(ctx, testKeys, b, &m); err != nil {
		t.Fatal(err)
	}
	if err := artifact.SetManifest(b, &m); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	store := changelog.Store{S3: s3object.Store{Policy: policy, AllowHTTP: true},
		Creds:  s3object.Credentials{AccessKeyID: s3Creds.AccessKeyID, SecretAccessKey: s3Creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: testEndpoint, Bucket: testBucket, ForcePathStyle: true},
		Chain:  changelog.ChainPrefix(strings.TrimSuffix(prefix, "/"), base.Revision)}
	return pointBase{backup: b, base: base, chain: store}
}

// upload stores the chain after the base: one segment per group.
func (p pointBase) upload(t *testing.T, groups ...[]changelog.Revision) []pointchain.Segment {
	return pointchain.Upload(context.Background(), t, p.chain, p.base, groups...)
}

// staged is what playStaging's run of the staging step left.
type staged struct {
	job  *batchv1.Job
	code int
	rep  stagingstep.Report
	file string
}

// playStaging plays the Pod of the restore's staging Job (the suite runs
// no Pods): the real staging step (etcd-stage, stagingstep.Main) runs
// with the restore container's arguments against the suite's S3 server,
// staging into a folder of the test's, and the Job ends as the Job
// controller ends it for that exit code (65 fails it at once, by the
// podFailurePolicy), its Pod's termination message the step's report.
// The staging Job's endpoint policy is the driver's (the suite's driver
// allows no loopback), the Pod's network here is the test's: loopback is
// allowed.
func playStaging(t *testing.T, ns, name string) staged {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	job := stagingJobOf(t, ns, name)
	var c corev1.Container
	for _, ctr := range job.Spec.Template.Spec.Containers {
		if ctr.Name == "stage" {
			c = ctr
		}
	}
	dir := t.TempDir()
	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--out="):
			a = "--out=" + filepath.Join(dir, filepath.Base(strings.TrimPrefix(a, "--out=")))
		case strings.HasPrefix(a, "--termination-log="), strings.HasPrefix(a, "--allowed-endpoint-cidrs="):
			continue
		}
		args = append(args, a)
	}
	args = append(args, "--termination-log="+filepath.Join(dir, "termination-log"), "--allowed-endpoint-cidrs=127.0.0.0/8")
	env := func(k string) string {
		return map[string]string{s3object.AccessKeyIDKey: s3Creds.AccessKeyID, s3object.SecretAccessKeyKey: s3Creds.SecretAccessKey}[k]
	}
	var stdout, stderr bytes.Buffer
	code := stagingstep.MainWith(ctx, args, env, &stdout, &stderr, pointrun.Staging)
	rep, err := stagingstep.ParseReport(stdout.String())
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr.String())
	out := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--out="); ok {
			out = v
		}
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-pod", Labels: job.Spec.Template.Labels},
		Spec: *job.Spec.Template.Spec.DeepCopy()}
	g.Expect(k.Create(ctx, pod)).To(Succeed())
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "stage", Image: c.Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Message: stdout.String()}}}}
	g.Expect(k.Status().Update(ctx, pod)).To(Succeed())

	now := metav1.Now()
	job.Status.StartTime = &now
	switch code {
	case report.ExitSucceeded:
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now}}
	case report.ExitRefused:
		msg := "Container stage for pod staging exited with a non-zero exit code 65 matching FailJob rule at index 0"
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, Message: msg, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy, Message: msg, LastTransitionTime: now, LastProbeTime: now}}
	default:
		t.Fatalf("the staging step exited %d: %s", code, stdout.String())
	}
	g.Expect(k.Status().Update(ctx, job)).To(Succeed())
	return staged{job: job, code: code, rep: rep, file: out}
}

// stagedKeys are the keys the staged file holds, and its revision.
func stagedKeys(t *testing.T, file string) ([]string, int64) {
	t.Helper()
	kvs, rev := pointchain.Keys(t, file)
	var keys []string
	for k := range kvs {
		keys = append(keys, k)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
	return keys, rev
}
