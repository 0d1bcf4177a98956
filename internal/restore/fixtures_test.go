package restore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// ---- fixtures ---------------------------------------------------------------

const (
	testBucket = "bkt"
	testPrefix = "tenant/etcd/"
	testSecret = "s3-creds"
	testApp    = "etcd"
)

// testEndpoint is the S3 server's URL, set by TestMain.
var testEndpoint string

// testClaims reads claims as the driver does (test client).
var testClaims claim.Store

// createStrategy creates the admin's Etcd strategy, its StrategyPolicy
// (plain http allowed: the suite's S3 server) and BackupClass: every
// namespace's backups go to testBucket under testPrefix, so Backups this
// driver did not sign are admitted there and only there.
func createStrategy(c client.Client) {
	ctx := context.Background()
	fps := true
	group := strategyv1alpha1.GroupVersion.Group
	for _, obj := range []client.Object{
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec:       driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true},
		},
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{
				S3: &strategyv1alpha1.EtcdS3Template{Bucket: testBucket, Endpoint: testEndpoint, Key: testPrefix, ForcePathStyle: &fps,
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret}}}}},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"},
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			}}},
		},
	} {
		if err := c.Create(ctx, obj); err != nil {
			panic(err)
		}
	}
}

var nsCounter int

func newNamespace(t *testing.T) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("r%d-%d", time.Now().UnixNano()%100000, nsCounter)
	if err := k.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func strategyRef() backupsv1alpha1.TypedLocalObjectReference {
	g := strategyv1alpha1.GroupVersion.Group
	return backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: strategyv1alpha1.EtcdStrategyKind, Name: "default"}
}

func appRef() backupsv1alpha1.TypedLocalObjectReference {
	g := backupsv1alpha1.DefaultApplicationAPIGroup
	return backupsv1alpha1.TypedLocalObjectReference{APIGroup: &g, Kind: "Etcd", Name: testApp}
}

// ourBackup is a Ready Backup as this driver records it (signed), taken by
// snapshot snap, whose object is in S3 with the recorded size and checksum.
func ourBackup(ns, name, snap string) *backupsv1alpha1.Backup {
	b := unsignedBackup(ns, name, snap)
	if err := provenance.Seal(context.Background(), testKeys, b); err != nil {
		panic(err)
	}
	return b
}

// unsignedBackup is ourBackup without the driver's signature, as a tenant
// (or the Cozystack driver) would write it.
func unsignedBackup(ns, name, snap string) *backupsv1alpha1.Backup {
	return unsignedBackupAt(ns, name, snap, testEndpoint)
}

// unsignedBackupAt is unsignedBackup recording another S3 endpoint (the
// object is stored on the suite's server all the same).
func unsignedBackupAt(ns, name, snap, endpoint string) *backupsv1alpha1.Backup {
	fps := true
	rec := artifact.Record{SnapshotName: snap, EtcdVersion: "3.6.11", Destination: strategyv1alpha1.EtcdS3Template{
		Bucket: testBucket, Endpoint: endpoint, Key: testPrefix, ForcePathStyle: &fps,
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: testSecret},
	}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		panic(err)
	}
	key := artifact.ObjectKey(testPrefix, snap)
	data := testenv.Snapshot(2, snap)
	putObject(key, data)
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.BackupSpec{ApplicationRef: appRef(), StrategyRef: strategyRef(),
			TakenAt: metav1.Now(), DriverMetadata: rec.DriverMetadata()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: artifact.URI(testBucket, key), SizeBytes: int64(len(data)), Checksum: testenv.Checksum(data)}},
	}
}

func putObject(key string, data []byte) {
	if _, err := s3c.PutObject(context.Background(), testBucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		panic(err)
	}
}

// startOperator plays the etcd-operator and Flux in ns until the test ends.
func startOperator(t *testing.T, ns string) *testenv.Operator {
	return testenv.StartOperator(t, k, ns, s3c)
}

// liveCluster is a chart-rendered EtcdCluster with Helm metadata and spec
// fields only the unstructured capture carries (the upstream CRD prunes
// fields it does not know, so they are real upstream ones).
func liveCluster(ns string, extra string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"version":  "3.6.11",
			"replicas": int64(3),
			"storage":  map[string]any{"size": "4Gi"},
			"additionalMetadata": map[string]any{
				"labels":      map[string]any{"tenant": "t1"},
				"annotations": map[string]any{"extra": extra},
			},
		},
	}}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	u.SetNamespace(ns)
	u.SetName(clusterName)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.toolkit.fluxcd.io/name": testApp, "helm.toolkit.fluxcd.io/namespace": ns})
	u.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "etcd", "meta.helm.sh/release-namespace": ns})
	return u
}

func helmRelease(ns string, suspended bool) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testApp},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart: "etcd", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "cozystack"}}},
			Suspend: suspended,
		},
	}
}

func memberPVC(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{instanceLabel: clusterName}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

type appOpts struct {
	noHelmRelease bool
	hrSuspended   bool
	extra         string
	notAvailable  bool
	noSecret      bool
	// noCluster deploys everything but the EtcdCluster and its PVCs.
	noCluster bool
	// mutate changes the live cluster before it is created.
	mutate func(*unstructured.Unstructured)
}

// deployApp creates what the chart, the platform and the operator would
// have: the S3 credentials Secret, a healthy three-member EtcdCluster, its
// PVCs and the HelmRelease.
func deployApp(t *testing.T, ns string, o appOpts) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	if !o.noSecret {
		g.Expect(k.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: testSecret},
			Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte(s3Creds.AccessKeyID), "AWS_SECRET_ACCESS_KEY": []byte(s3Creds.SecretAccessKey)}})).To(Succeed())
	}
	if !o.noCluster {
		c := liveCluster(ns, o.extra)
		if o.mutate != nil {
			o.mutate(c)
		}
		g.Expect(k.Create(ctx, c)).To(Succeed())
		if !o.notAvailable {
			setClusterHealthy(g, c)
		}
		for i := range 3 {
			g.Expect(k.Create(ctx, memberPVC(ns, fmt.Sprintf("data-etcd-%d", i)))).To(Succeed())
		}
	}
	if !o.noHelmRelease {
		hr := helmRelease(ns, o.hrSuspended)
		g.Expect(k.Create(ctx, hr)).To(Succeed())
	}
}

func setClusterHealthy(g Gomega, u *unstructured.Unstructured) {
	g.Expect(testenv.MarkHealthy(context.Background(), k, client.ObjectKeyFromObject(u))).To(Succeed())
}

func newRestoreJob(ns, name, backup string, options string) *backupsv1alpha1.RestoreJob {
	rj := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup}},
	}
	if options != "" {
		rj.Spec.Options = &runtime.RawExtension{Raw: []byte(options)}
	}
	return rj
}

// ---- assertions -------------------------------------------------------------

func getJob(g Gomega, ns, name string) *backupsv1alpha1.RestoreJob {
	rj := &backupsv1alpha1.RestoreJob{}
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rj)).To(Succeed())
	return rj
}

func waitPhase(t *testing.T, ns, name string, phase backupsv1alpha1.RestoreJobPhase) *backupsv1alpha1.RestoreJob {
	t.Helper()
	var rj *backupsv1alpha1.RestoreJob
	NewWithT(t).Eventually(func(g Gomega) {
		rj = getJob(g, ns, name)
		g.Expect(rj.Status.Phase).To(Equal(phase), "status: %+v", rj.Status)
		g.Expect(rj.Finalizers).To(BeEmpty())
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

func waitReason(t *testing.T, ns, name string, reason backupsv1alpha1.RestoreReason) *backupsv1alpha1.RestoreJob {
	t.Helper()
	var rj *backupsv1alpha1.RestoreJob
	NewWithT(t).Eventually(func(g Gomega) {
		rj = getJob(g, ns, name)
		g.Expect(readyReason(rj)).To(Equal(string(reason)), "status: %+v", rj.Status)
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return rj
}

func condition(rj *backupsv1alpha1.RestoreJob, t string) *metav1.Condition {
	return meta.FindStatusCondition(rj.Status.Conditions, t)
}

func getCluster(g Gomega, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: clusterName}, u)).To(Succeed())
	return u
}

func getHR(g Gomega, ns string) *helmv2.HelmRelease {
	hr := &helmv2.HelmRelease{}
	g.Expect(k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: testApp}, hr)).To(Succeed())
	return hr
}

func claimHolder(g Gomega, ns string) *claim.Holder {
	h, err := testClaims.Get(context.Background(), claim.Target{Namespace: ns, Cluster: clusterName})
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

// leaseCount counts the claims on ns's cluster (in the driver's namespace)
// and any Lease in ns itself.
func leaseCount(g Gomega, ns string) int {
	var own, driver coordinationv1.LeaseList
	g.Expect(k.List(context.Background(), &own, client.InNamespace(ns))).To(Succeed())
	g.Expect(k.List(context.Background(), &driver, client.InNamespace(testenv.DriverNamespace),
		client.MatchingLabels{claim.TargetNamespaceLabel: ns})).To(Succeed())
	return len(own.Items) + len(driver.Items)
}

// getCapture reads rj's capture from the driver's namespace.
func getCapture(g Gomega, rj *backupsv1alpha1.RestoreJob) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := k.Get(context.Background(), client.ObjectKey{Namespace: testenv.DriverNamespace, Name: captureName(rj)}, cm)
	return cm, err
}

// bootstrapKey is the S3 key the cluster boots from: its S3 source's, or
// the one its staging claim's file was staged from.
func bootstrapKey(u *unstructured.Unstructured) string {
	if key, ok, _ := unstructured.NestedString(u.Object, "spec", "bootstrap", "restore", "source", "s3", "key"); ok {
		return key
	}
	claim, _, _ := unstructured.NestedString(u.Object, "spec", "bootstrap", "restore", "source", "pvc", "claimName")
	sub, _, _ := unstructured.NestedString(u.Object, "spec", "bootstrap", "restore", "source", "pvc", "subPath")
	pvc := &corev1.PersistentVolumeClaim{}
	if claim == "" || k.Get(context.Background(), client.ObjectKey{Namespace: u.GetNamespace(), Name: claim}, pvc) != nil {
		return ""
	}
	return strings.TrimPrefix(pvc.Annotations[stagingjob.SourceAnnotation(sub)], "s3://"+testBucket+"/")
}

func anyJobReports(ctx context.Context, ns string, reason backupsv1alpha1.RestoreReason) bool {
	var jobs backupsv1alpha1.RestoreJobList
	if k.List(ctx, &jobs, client.InNamespace(ns)) != nil {
		return false
	}
	for i := range jobs.Items {
		if readyReason(&jobs.Items[i]) == string(reason) {
			return true
		}
	}
	return false
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// strategyS3 is a rendered destination, briefly.
type strategyS3 struct{ Bucket, Endpoint, Key, Secret string }

func toTemplates(in []strategyS3) []strategyv1alpha1.EtcdS3Template {
	var out []strategyv1alpha1.EtcdS3Template
	for _, d := range in {
		out = append(out, strategyv1alpha1.EtcdS3Template{Bucket: d.Bucket, Endpoint: d.Endpoint, Key: d.Key,
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: d.Secret}})
	}
	return out
}

// revisionTable plays the live clusters' revisions in the suite (there is
// no real etcd behind the suite's EtcdClusters): a namespace's entry, or
// defaultLiveRevision. A namespace marked hung plays an etcd that does not
// answer: each read waits out the reader's 10 s timeout (or its context).
type revisionTable struct {
	mu      sync.Mutex
	revs    map[string]int64
	errs    map[string]error
	hung    map[string]bool
	reading map[string]int
}

const defaultLiveRevision = 4242

var testRevisions = &revisionTable{revs: map[string]int64{}, errs: map[string]error{}, hung: map[string]bool{}, reading: map[string]int{}}

func (t *revisionTable) Revision(ctx context.Context, ns string) (int64, error) {
	t.mu.Lock()
	if t.hung[ns] {
		t.reading[ns]++
		t.mu.Unlock()
		defer func() {
			t.mu.Lock()
			t.reading[ns]--
			t.mu.Unlock()
		}()
		select {
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
		}
		return 0, fmt.Errorf("connect to etcd at etcd-client.%s.svc:2379: context deadline exceeded", ns)
	}
	defer t.mu.Unlock()
	if err := t.errs[ns]; err != nil {
		return 0, err
	}
	if r, ok := t.revs[ns]; ok {
		return r, nil
	}
	return defaultLiveRevision, nil
}

func (t *revisionTable) fail(ns string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs[ns] = err
}

func (t *revisionTable) set(ns string, rev int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.revs[ns] = rev
}

func (t *revisionTable) hang(ns string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hung[ns] = true
}

// readsWaiting is how many reads of hung namespaces are waiting now.
func (t *revisionTable) readsWaiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.reading {
		n += c
	}
	return n
}
