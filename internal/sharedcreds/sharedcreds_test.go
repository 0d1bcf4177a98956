package sharedcreds_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

const secretName = "s3-creds"

// key is an S3 key pair.
type key struct{ id, secret string }

func newKey() key {
	return key{id: "AKIA" + strings.ToUpper(rand.String(16)), secret: rand.String(40)}
}

// fixture is one test's strategy (with a BackupClass of the same name) and
// the keys its tenants were given.
type fixture struct {
	t        *testing.T
	g        *WithT
	ctx      context.Context
	strategy string
	keys     []key
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, g: NewWithT(t), ctx: context.Background(), strategy: "s3-" + rand.String(6)}
	group := strategyv1alpha1.GroupVersion.Group
	f.create(
		&driverv1alpha1.StrategyPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: f.strategy},
			Spec:       driverv1alpha1.StrategyPolicySpec{AllowHTTPEndpoint: true},
		},
		&strategyv1alpha1.Etcd{
			ObjectMeta: metav1.ObjectMeta{Name: f.strategy},
			Spec: strategyv1alpha1.EtcdSpec{Template: strategyv1alpha1.EtcdTemplate{
				Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
					Bucket: "etcd-backups", Endpoint: "http://127.0.0.1:9000",
					Key:                  "{{ .Application.metadata.namespace }}/etcd/",
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: secretName},
				}}}},
		},
		&backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: f.strategy},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: f.strategy},
			}}},
		},
	)
	return f
}

// on makes f report to t (a subtest).
func (f *fixture) on(t *testing.T) { f.t, f.g = t, NewWithT(t) }

func (f *fixture) create(objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		f.g.Expect(env.Client.Create(f.ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

// tenantWithJob is a namespace holding k whose BackupJob names the
// strategy's class: the driver learns of it from the BackupJob flow.
func (f *fixture) tenantWithJob(k key) string {
	ns := f.tenant(k)
	f.create(
		&appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd"}},
		&backupsv1alpha1.BackupJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "now"},
			Spec: backupsv1alpha1.BackupJobSpec{BackupClassName: f.strategy,
				ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}},
		},
	)
	return ns
}

// tenantWithBackup is a namespace holding k and a Backup of the strategy
// (taken before the driver started): the driver finds it at a resync.
func (f *fixture) tenantWithBackup(k key) string {
	ns := f.tenant(k)
	group := strategyv1alpha1.GroupVersion.Group
	f.create(&backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "earlier"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: strategyv1alpha1.EtcdStrategyKind, Name: f.strategy},
			TakenAt:        metav1.Now(),
			DriverMetadata: map[string]string{
				artifact.MetaBucket: "etcd-backups", artifact.MetaEndpoint: "http://127.0.0.1:9000",
				artifact.MetaCredentialsName: secretName, artifact.MetaSnapshotName: "earlier",
			},
		},
	})
	return ns
}

func (f *fixture) tenant(k key) string {
	ns := "tenant-" + rand.String(6)
	f.keys = append(f.keys, k)
	f.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName},
		StringData: map[string]string{s3object.AccessKeyIDKey: k.id, s3object.SecretAccessKeyKey: k.secret}})
	return ns
}

// setKey puts k in ns's Secret.
func (f *fixture) setKey(ns string, k key) {
	f.t.Helper()
	f.keys = append(f.keys, k)
	var s corev1.Secret
	f.g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s)).To(Succeed())
	s.Data = map[string][]byte{s3object.AccessKeyIDKey: []byte(k.id), s3object.SecretAccessKeyKey: []byte(k.secret)}
	f.g.Expect(env.Client.Update(f.ctx, &s)).To(Succeed())
}

// condition is the strategy's SharedCredentials condition, nil if none.
func (f *fixture) condition(g Gomega) *metav1.Condition {
	var s strategyv1alpha1.Etcd
	g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Name: f.strategy}, &s)).To(Succeed())
	return meta.FindStatusCondition(s.Status.Conditions, strategyv1alpha1.EtcdConditionSharedCredentials)
}

// eventually waits for the condition to have status and reason and
// returns it.
func (f *fixture) eventually(status metav1.ConditionStatus, reason string) *metav1.Condition {
	f.t.Helper()
	var c *metav1.Condition
	f.g.Eventually(func(g Gomega) {
		c = f.condition(g)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status), c.Message)
		g.Expect(c.Reason).To(Equal(reason))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return c
}

// metric is the strategy's etcd_backup_driver_shared_credentials_namespaces
// value (-1 without a series) and the whole scrape.
func (f *fixture) metric() (float64, string) {
	f.t.Helper()
	resp, err := http.Get(metricsURL)
	f.g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	f.g.Expect(err).NotTo(HaveOccurred())
	re := regexp.MustCompile(`(?m)^etcd_backup_driver_shared_credentials_namespaces\{strategy="` + f.strategy + `"\} (\S+)$`)
	m := re.FindStringSubmatch(string(body))
	if m == nil {
		return -1, string(body)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	f.g.Expect(err).NotTo(HaveOccurred())
	return v, string(body)
}

// status runs `kubectl etcd-backup status -A` and returns its output.
func status(t *testing.T) string {
	var out, errOut bytes.Buffer
	code := ebdctl.Main("kubectl etcd-backup", []string{"status", "-A", "--kubeconfig", kubeconfig, "--terminal", "no"},
		ebdctl.Streams{Out: &out, ErrOut: &errOut})
	if code != ebdctl.ExitOK {
		t.Fatalf("status -A: exit %d: %s", code, errOut.String())
	}
	return out.String() + errOut.String()
}

// events are the Events about the strategy, by reason.
func (f *fixture) events(g Gomega) map[string]int {
	var list eventsv1.EventList
	g.Expect(env.Client.List(f.ctx, &list)).To(Succeed())
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.Kind == "Etcd" && e.Regarding.Name == f.strategy {
			out[e.Reason]++
		}
	}
	return out
}

// forbidden are every key the fixture handed out and their plain SHA-256
// (hex and base64), none of which may appear anywhere the driver writes.
func (f *fixture) forbidden() []string {
	var out []string
	for _, k := range f.keys {
		for _, v := range []string{k.id, k.secret} {
			sum := sha256.Sum256([]byte(v))
			out = append(out, v, hex.EncodeToString(sum[:]), hex.EncodeToString(sum[:16]),
				base64.StdEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:]))
		}
	}
	return out
}

// noLeak checks the strategies, all Events, the metrics and the driver's
// log for the fixture's keys and their plain hashes.
func (f *fixture) noLeak() {
	f.t.Helper()
	var strategies strategyv1alpha1.EtcdList
	f.g.Expect(env.Client.List(f.ctx, &strategies)).To(Succeed())
	var events eventsv1.EventList
	f.g.Expect(env.Client.List(f.ctx, &events)).To(Succeed())
	var coreEvents corev1.EventList
	f.g.Expect(env.Client.List(f.ctx, &coreEvents)).To(Succeed())
	_, scrape := f.metric()
	places := map[string]string{"metrics": scrape, "log": logs.String()}
	for name, obj := range map[string]any{"strategies": strategies, "events": events, "core events": coreEvents} {
		raw, err := json.Marshal(obj)
		f.g.Expect(err).NotTo(HaveOccurred())
		places[name] = string(raw)
	}
	for place, text := range places {
		for _, v := range f.forbidden() {
			f.g.Expect(strings.Contains(text, v)).To(BeFalse(), "%s holds a key or its plain hash (%d bytes)", place, len(v))
		}
	}
	f.g.Expect(places["log"]).To(ContainSubstring("share an S3 access key"), "the log did record the finding")
}

func TestSharedAccessKeyIsReportedAndClears(t *testing.T) {
	f := newFixture(t)
	shared := newKey()
	viaJob := f.tenantWithJob(shared)
	viaBackup := f.tenantWithBackup(shared)
	own := f.tenantWithJob(newKey())

	c := f.eventually(metav1.ConditionTrue, strategyv1alpha1.EtcdReasonSharedAccessKey)
	f.g.Expect(c.Message).To(HavePrefix("2 namespaces share one S3 access key ("))
	f.g.Expect(c.Message).To(ContainSubstring(viaJob))
	f.g.Expect(c.Message).To(ContainSubstring(viaBackup))
	f.g.Expect(c.Message).NotTo(ContainSubstring(own))
	f.g.Expect(c.Message).To(ContainSubstring("docs/security.md"))
	f.g.Eventually(func() float64 { v, _ := f.metric(); return v }).Should(Equal(2.0))
	f.g.Expect(status(t)).To(ContainSubstring(fmt.Sprintf("strategy %s: 2 namespaces share one S3 access key", f.strategy)))
	f.g.Eventually(f.events).Should(HaveKeyWithValue(strategyv1alpha1.EtcdReasonSharedAccessKey, 1))

	t.Run("nothing is written again while nothing changes", func(t *testing.T) {
		g := NewWithT(t)
		var before strategyv1alpha1.Etcd
		g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Name: f.strategy}, &before)).To(Succeed())
		time.Sleep(3 * resync)
		var after strategyv1alpha1.Etcd
		g.Expect(env.Client.Get(f.ctx, client.ObjectKey{Name: f.strategy}, &after)).To(Succeed())
		g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "three resyncs found the same sharing and wrote nothing")
		g.Expect(f.events(g)).To(HaveKeyWithValue(strategyv1alpha1.EtcdReasonSharedAccessKey, 1))
	})

	t.Run("a Secret given a key of its own clears the condition", func(t *testing.T) {
		f.on(t)
		f.setKey(viaBackup, newKey())
		f.eventually(metav1.ConditionFalse, strategyv1alpha1.EtcdReasonCredentialsIsolated)
		f.g.Eventually(func() float64 { v, _ := f.metric(); return v }).Should(Equal(0.0))
		f.g.Expect(status(t)).NotTo(ContainSubstring("strategy " + f.strategy))
		f.g.Eventually(f.events).Should(HaveKeyWithValue(strategyv1alpha1.EtcdReasonCredentialsIsolated, 1))
	})

	t.Run("a deleted namespace drops out", func(t *testing.T) {
		f.on(t)
		f.setKey(viaBackup, shared)
		f.eventually(metav1.ConditionTrue, strategyv1alpha1.EtcdReasonSharedAccessKey)
		f.g.Expect(env.Client.Delete(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: viaBackup}})).To(Succeed())
		f.eventually(metav1.ConditionFalse, strategyv1alpha1.EtcdReasonCredentialsIsolated)
		f.g.Eventually(func() float64 { v, _ := f.metric(); return v }).Should(Equal(0.0))
	})

	t.Run("no key and no plain hash of one is written, exported or logged", func(t *testing.T) {
		f.on(t)
		f.noLeak()
	})
}

func TestDistinctKeysAreIsolated(t *testing.T) {
	f := newFixture(t)
	f.tenantWithJob(newKey())
	f.tenantWithBackup(newKey())
	c := f.eventually(metav1.ConditionFalse, strategyv1alpha1.EtcdReasonCredentialsIsolated)
	f.g.Expect(c.Message).To(ContainSubstring("no two namespaces"))
	// Both namespaces are known by then: the job's at once, the Backup's
	// at the next resync.
	time.Sleep(2 * resync)
	f.g.Expect(f.condition(f.g).Status).To(Equal(metav1.ConditionFalse))
	f.g.Eventually(func() float64 { v, _ := f.metric(); return v }).Should(Equal(0.0))
	f.g.Expect(status(t)).NotTo(ContainSubstring("strategy " + f.strategy))
	f.g.Expect(f.events(f.g)).To(BeEmpty(), "an isolated strategy is not worth an Event")
}
