package rehearsal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// createStrategy creates the admin's Etcd strategy with its StrategyPolicy
// (plain http allowed: the suite's S3 server) and BackupClass.
func createStrategy(c client.Client) {
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	for _, obj := range []client.Object{
		&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true}},
		&strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
				S3: &strategyv1alpha1.EtcdS3Template{Bucket: testBucket, Endpoint: testEndpoint, Key: testPrefix, ForcePathStyle: &fps,
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret}}}}}},
		&backupsv1alpha1.BackupClass{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"}}}}},
	} {
		if err := c.Create(context.Background(), obj); err != nil {
			panic(err)
		}
	}
}

var nsCounter int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("rh%d-%d", time.Now().UnixNano()%100000, nsCounter)
	if err := k.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// deployApp creates what the chart and the platform would have: the S3
// credentials Secret, the EtcdCluster and the HelmRelease (not suspended).
func deployApp(t *testing.T, ns string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testSecret},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(s3Creds.AccessKeyID), "AWS_SECRET_ACCESS_KEY": []byte(s3Creds.SecretAccessKey)}})).To(Succeed())
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": "3.6.11", "replicas": int64(3), "storage": map[string]any{"size": "4Gi"}}}}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	u.SetNamespace(ns)
	u.SetName(clusterName)
	g.Expect(k.Create(ctx, u)).To(Succeed())
	g.Expect(k.Create(ctx, &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterName},
		Spec: helmv2.HelmReleaseSpec{Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "etcd",
				SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}}}})).To(Succeed())
}

// liveEtcd starts the namespace's live etcd (a real one) holding a
// Kubernetes keyspace: namespaces a, b and c with three pods each and a
// configmap in a.
func liveEtcd(t *testing.T, ns string) *clientv3.Client {
	t.Helper()
	cli, url := testenv.StartEtcd(t)
	for _, n := range []string{"a", "b", "c"} {
		put(t, cli, "/registry/namespaces/"+n)
		for i := range 3 {
			put(t, cli, fmt.Sprintf("/registry/pods/%s/p%d", n, i))
		}
	}
	put(t, cli, "/registry/configmaps/a/cm")
	lives.Store(ns, url)
	return cli
}

func put(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, "{}"); err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, cli *clientv3.Client, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
}

// revision is the live etcd's revision (a read: it does not move it).
func revision(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "\x00probe")
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

// backupOf snapshots the live etcd into S3 and records a Ready Backup of
// it as the driver does (signed); it returns the Backup and its object's
// bytes.
func backupOf(t *testing.T, ns, name string, cli *clientv3.Client) (*backupsv1alpha1.Backup, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	fps := true
	snap := name + "-snap"
	rec := artifact.Record{SnapshotName: snap, EtcdVersion: "3.6.11", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: testBucket, Endpoint: testEndpoint, Key: testPrefix + ns + "/", ForcePathStyle: &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret}}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	key := artifact.ObjectKey(testPrefix+ns+"/", snap)
	putObject(t, key, data)
	g := backupsv1alpha1.DefaultApplicationAPIGroup
	sg := strategyv1alpha1.GroupVersion.Group
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: "Etcd", Name: clusterName},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &sg, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"},
			TakenAt:        metav1.Now(), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI(testBucket, key), SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}},
	}
	if err := provenance.Seal(context.Background(), testKeys, b); err != nil {
		t.Fatal(err)
	}
	return b, data
}

func putObject(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := s3c.PutObject(context.Background(), testBucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// create creates obj (a Backup's status too: Backups have no status
// subresource).
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func dryRun(ns, name, backup string) *backupsv1alpha1.RestoreJob {
	return &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup},
			Options: &runtime.RawExtension{Raw: []byte(`{"dryRun":true}`)}}}
}

// waitEnd waits for the RestoreJob to end and returns it.
func waitEnd(t *testing.T, ns, name string) *backupsv1alpha1.RestoreJob {
	t.Helper()
	rj := &backupsv1alpha1.RestoreJob{}
	NewWithT(t).Eventually(func() backupsv1alpha1.RestoreJobPhase {
		_ = k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj)
		return rj.Status.Phase
	}).WithTimeout(3 * time.Minute).WithPolling(200 * time.Millisecond).Should(Or(
		Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), Equal(backupsv1alpha1.RestoreJobPhaseFailed)))
	return rj
}

func readyOf(rj *backupsv1alpha1.RestoreJob) metav1.Condition {
	for _, c := range rj.Status.Conditions {
		if c.Type == backupsv1alpha1.ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}

// reportOf is rj's report, from the driver's record on it (verified).
func reportOf(t *testing.T, rj *backupsv1alpha1.RestoreJob) *driverv1alpha1.RehearsalReport {
	t.Helper()
	rec, ok, ignored, err := rehearsalrecord.Read(context.Background(), testKeys, rj)
	if err != nil || !ok || rec.Report == nil {
		t.Fatalf("no report recorded on RestoreJob %s/%s (err %v, ignored %q): %v", rj.Namespace, rj.Name, err, ignored, rj.Annotations)
	}
	return rec.Report
}

// keyedJobName is the rehearsal Job's name for rj.
func keyedJobName(rj *backupsv1alpha1.RestoreJob) string {
	_, key, _ := testKeys.Active(context.Background())
	return tenantjobs.KeyedName("etcd-rehearsal-", key, "etcd-backup-driver rehearsal job", rj.UID)
}

func changeOf(rep *driverv1alpha1.RehearsalReport, name string) *driverv1alpha1.CountChange {
	for i := range rep.Resources {
		if rep.Resources[i].Name == name {
			return &rep.Resources[i]
		}
	}
	return nil
}
