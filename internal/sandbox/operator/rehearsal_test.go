package operator_test

// The sandbox's part of a dry-run restore (issue 33): the rehearsal Job,
// built by rehearsal.Build, runs on the kubelet stand-in as the real
// etcd-stage against the real Job controller and a real S3 server: it
// stages the snapshot, boots a throwaway etcd in the Pod and reads it back.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"time"

	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal"
	rehearsalstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// A rehearsal Job of a real snapshot completes with a Rehearsed report at
// the staged revision (floor + staging's margin) with the snapshot's
// Kubernetes counts, its emptyDir left empty; the same object recorded
// with another sha256 ends the Job Failed by its podFailurePolicy.
func TestRehearsalJobBootsTheSnapshot(t *testing.T) {
	tn := newTenant(t)
	tn.secret()
	c := tn.awaitHealthy(tn.cluster("etcd", 1))
	cli, err := etcdproc.Client(op.Fleet.Endpoints(client.ObjectKeyFromObject(c))...)
	tn.g.Expect(err).NotTo(HaveOccurred())
	defer cli.Close()
	for _, k := range []string{"/registry/namespaces/a", "/registry/namespaces/b", "/registry/pods/a/p1", "/registry/pods/b/p1", "/registry/pods/b/p2"} {
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
	key := tn.ns + "/etcd/rehearsed.db"
	up, err := minio.New(strings.TrimPrefix(s3.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(creds.AccessKeyID, creds.SecretAccessKey, ""), BucketLookup: minio.BucketLookupPath})
	tn.g.Expect(err).NotTo(HaveOccurred())
	_, err = up.PutObject(tn.ctx, bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(body)

	// The Job's owner must exist, or the garbage collector removes it.
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "dry"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "b"},
			Options: &runtime.RawExtension{Raw: []byte(`{"dryRun":true}`)}}}
	tn.g.Expect(k8s.Create(tn.ctx, rj)).To(Succeed())
	owner := metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: rj.Name, UID: rj.UID}
	const floor = 5000
	run := func(name, sha string) (*batchv1.Job, rehearsalstep.Report) {
		t.Helper()
		job := rehearsal.Build(rehearsal.Spec{
			JobName: name, Namespace: tn.ns, RestoreJobName: rj.Name, RestoreJobUID: string(rj.UID), Image: "sandbox.invalid/etcd-backup-driver:test",
			Object: stagingstep.Object{Endpoint: s3.URL, Bucket: bucket, Key: key, PathStyle: true, SecretName: credsSecret,
				Size: int64(len(body)), SHA256: sha},
			LiveRevision: floor, Deadline: 2 * time.Minute, AllowedEndpointCIDRs: []string{"127.0.0.0/8"}, AllowHTTP: true,
		}, owner)
		tn.g.Expect(k8s.Create(tn.ctx, job)).To(Succeed())
		tn.g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			out, _ := tenantjobs.OutcomeOf(job)
			g.Expect(out).NotTo(Equal(tenantjobs.Running))
		}, 2*time.Minute).Should(Succeed())
		pods := tn.jobPods(job)
		tn.g.Expect(pods).To(HaveLen(1))
		tn.g.Expect(pods[0].Spec.NodeName).To(Equal(operator.NodeName))
		st := pods[0].Status.ContainerStatuses
		tn.g.Expect(st).To(HaveLen(1))
		tn.g.Expect(st[0].State.Terminated).NotTo(BeNil())
		r, err := rehearsalstep.ParseReport(st[0].State.Terminated.Message)
		tn.g.Expect(err).NotTo(HaveOccurred())
		workDir := filepath.Join(podsDir, tn.ns, pods[0].Name+"-"+string(pods[0].UID), "volumes", "work")
		entries, err := os.ReadDir(workDir)
		tn.g.Expect(err).NotTo(HaveOccurred(), "the emptyDir is a folder of the Pod's")
		tn.g.Expect(entries).To(BeEmpty(), "the staged file and the throwaway etcd's data were removed")
		return job, r
	}

	job, r := run("rehearse-good", hex.EncodeToString(sum[:]))
	out, msg := tenantjobs.OutcomeOf(job)
	tn.g.Expect(out).To(Equal(tenantjobs.Succeeded), msg)
	tn.g.Expect(r.Outcome).To(Equal(rehearsalstep.OutcomeRehearsed), r.Message)
	tn.g.Expect(r.Revision).To(BeEquivalentTo(floor + stagingstep.DefaultMargin))
	tn.g.Expect(r.Keys).To(BeEquivalentTo(5))
	tn.g.Expect(r.Keyspaces).To(HaveLen(1))
	tn.g.Expect(r.Keyspaces[0].NamespaceNames).To(Equal([]string{"a", "b"}))
	tn.g.Expect(r.Keyspaces[0].Resources).To(ContainElement(driverv1alpha1.ObjectCount{Name: "pods", Count: 3}))

	job, r = run("rehearse-changed", strings.Repeat("0", 64))
	out, msg = tenantjobs.OutcomeOf(job)
	tn.g.Expect(out).To(Equal(tenantjobs.Refused), msg)
	tn.g.Expect(r.Outcome).To(Equal(report.Refused))
	tn.g.Expect(r.Reason).To(BeEquivalentTo(stagingstep.ReasonArtifactChanged))
}
