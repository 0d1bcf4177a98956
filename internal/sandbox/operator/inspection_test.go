package operator_test

// The sandbox's part of a Backup's inspection (issue 33): the driver's
// inspection Job, built by inspection.Build, runs on the kubelet stand-in
// as the real etcd-stage against the real Job controller and a real S3
// server, with its emptyDir as a folder of the Pod's.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// An inspection Job of a real snapshot in the sandbox's S3 completes, and
// its Pod's termination message is the manifest InspectFile reads from
// the same bytes; the same object recorded with another sha256 ends the
// Job Failed by its podFailurePolicy, at once, with a Refused report.
func TestInspectionJobReportsTheManifest(t *testing.T) {
	tn := newTenant(t)
	tn.secret()
	c := tn.awaitHealthy(tn.cluster("etcd", 1))
	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	for _, k := range []string{
		"/registry/namespaces/default", "/registry/namespaces/a", "/registry/namespaces/b",
		"/registry/pods/a/p1", "/registry/pods/a/p2", "/registry/pods/b/p1", "/registry/minions/n1",
		"/registry/services/specs/default/kubernetes", "/tenant_cp/namespaces/default", "/tenant_cp/configmaps/default/c",
	} {
		_, err := cli.Put(tn.ctx, k, "v")
		tn.g.Expect(err).NotTo(HaveOccurred())
	}
	rc, err := cli.Snapshot(tn.ctx)
	tn.g.Expect(err).NotTo(HaveOccurred())
	var snap bytes.Buffer
	_, err = snap.ReadFrom(rc)
	rc.Close()
	tn.g.Expect(err).NotTo(HaveOccurred())
	body := snap.Bytes()

	// What the Pod must report: InspectFile of the same database, read here.
	db := filepath.Join(t.TempDir(), "db")
	tn.g.Expect(os.WriteFile(db, body[:len(body)-sha256.Size], 0o600)).To(Succeed())
	want, err := inspectionstep.InspectFile(db)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(want.Keys).To(BeEquivalentTo(10))
	tn.g.Expect(want.Keyspaces).To(HaveLen(2))
	tn.g.Expect(want.Keyspaces[0].Prefix).To(Equal("/registry"))
	tn.g.Expect(want.Keyspaces[0].Resources).To(ContainElement(driverv1alpha1.ObjectCount{Name: "pods", Count: 3}))

	key := tn.ns + "/etcd/inspected.db"
	up, err := minio.New(strings.TrimPrefix(s3.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""), BucketLookup: minio.BucketLookupPath})
	tn.g.Expect(err).NotTo(HaveOccurred())
	_, err = up.PutObject(tn.ctx, bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(body)

	backup := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "inspected"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			TakenAt:        metav1.Now(),
		},
	}
	tn.g.Expect(k8s.Create(tn.ctx, backup)).To(Succeed())
	run := func(name, sha string) (*batchv1.Job, corev1.Pod) {
		t.Helper()
		job := inspection.Build(inspection.Spec{
			Namespace: tn.ns, JobName: name, BackupName: backup.Name, BackupUID: backup.UID, Image: "sandbox.invalid/etcd-backup-driver:test",
			Object: stagingstep.Object{Endpoint: s3.URL, Bucket: bucket, Key: key, PathStyle: true, SecretName: credsSecret,
				Size: int64(len(body)), SHA256: sha},
			Deadline: 2 * time.Minute, AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true,
		})
		tn.g.Expect(k8s.Create(tn.ctx, job)).To(Succeed())
		tn.g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			out, _ := tenantjobs.OutcomeOf(job)
			g.Expect(out).NotTo(Equal(tenantjobs.Running))
		}, time.Minute).Should(Succeed())
		pods := tn.jobPods(job)
		tn.g.Expect(pods).To(HaveLen(1), "one Pod: it completed, or FailJob ended the Job without a retry")
		return job, pods[0]
	}

	job, pod := run("inspect-good", "sha256:"+hex.EncodeToString(sum[:]))
	out, msg := tenantjobs.OutcomeOf(job)
	tn.g.Expect(out).To(Equal(tenantjobs.Succeeded), msg)
	tn.g.Expect(pod.Spec.NodeName).To(Equal(operator.NodeName))
	var r inspectionstep.Report
	err = tenantjobs.ReportOf(&pod, inspection.ContainerName, &r)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(r.Outcome).To(Equal(inspectionstep.OutcomeInspected))
	tn.g.Expect(*r.Manifest).To(Equal(want))
	workDir := filepath.Join(podsDir, tn.ns, pod.Name+"-"+string(pod.UID), "volumes", "work")
	entries, err := os.ReadDir(workDir)
	tn.g.Expect(err).NotTo(HaveOccurred(), "the emptyDir is a folder of the Pod's")
	tn.g.Expect(entries).To(BeEmpty(), "the download was removed")

	job, pod = run("inspect-changed", strings.Repeat("0", 64))
	out, msg = tenantjobs.OutcomeOf(job)
	tn.g.Expect(out).To(Equal(tenantjobs.Refused), msg)
	tn.g.Expect(jobCondition(job, batchv1.JobFailed)).To(HaveField("Reason", batchv1.JobReasonPodFailurePolicy))
	r = inspectionstep.Report{}
	err = tenantjobs.ReportOf(&pod, inspection.ContainerName, &r)
	tn.g.Expect(err).NotTo(HaveOccurred())
	tn.g.Expect(r.Outcome).To(Equal(report.Refused))
	tn.g.Expect(r.Reason).To(Equal(stagingstep.ReasonArtifactChanged))
	tn.g.Expect(r.Manifest).To(BeNil())
}
