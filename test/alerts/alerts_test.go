package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/util/teststorage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/contentdrop"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/freshness"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// forgedLabel marks the Backups this test's Verifier rejects, standing in
// for a failed provenance check.
const forgedLabel = "test.etcd-backup-driver/forged"

func ptr[T any](v T) *T { return &v }

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// history is what the test drives the driver through, scraped once a
// minute for half an hour of the driver's (fake) clock: applications in
// every freshness state from the start, then, ten minutes before the end,
// a failed BackupJob and a failed RestoreJob.
type history struct {
	end    time.Time
	points []point
}

func TestAlertsOnRealMetrics(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()

	// The driver's clock runs two hours ahead of the API server's, so a
	// Plan created now is two hours old to the driver and to the rules.
	end := time.Now().Add(2 * time.Hour).Truncate(time.Minute)
	clk := clocktesting.NewFakeClock(end.Add(-30 * time.Minute))

	// A brokered strategy on a real MinIO whose platform credential has a
	// key of its own, with no policy: what a tenant holding a stripped key
	// of an earlier release could have minted.
	s3, err := testenv.StartMinIO()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = s3.Stop() }()
	platformID, platformSecret, err := s3.AddPlatformUser("etcd-backup-platform", "etcd-backups")
	g.Expect(err).NotTo(HaveOccurred())
	platformAdmin, err := brokerminio.NewAdmin(s3.Endpoint, platformID, platformSecret, nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = platformAdmin.AddServiceAccount(context.Background(), brokerminio.NewServiceAccount{Name: "minted"})
	g.Expect(err).NotTo(HaveOccurred())

	o := manager.DefaultOptions()
	o.MetricsAddr, o.ProbeAddr = freeAddr(t), "0"
	o.AllowedEndpointCIDRs = []string{"127.0.0.1/32"}
	o.LeaderElect, o.LeaderElectionNamespace = true, "default"
	o.SkipControllerNameValidation = true
	o.Clock = clk
	o.ProvenanceRefresh = 200 * time.Millisecond
	// An image for the point-in-time capture (no kubelet runs it: the
	// test writes what the capture would report); the inspection, which
	// the image would turn on too, stays off as before.
	o.StagingImage = "registry.example/etcd-backup-driver:test"
	o.DisabledControllers = append(o.DisabledControllers, "backupinspection")
	o.BackupVerifier = func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		if b.Labels[forgedLabel] == "true" {
			return time.Time{}, false, nil
		}
		return freshness.TrustReadyPhase(b)
	}
	mgr, err := manager.New(env.Config, o)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	}()
	g.Eventually(mgr.Elected()).WithTimeout(60 * time.Second).Should(BeClosed())

	c := env.Client
	create := func(objs ...client.Object) {
		for _, obj := range objs {
			g.Expect(c.Create(ctx, obj)).To(Succeed(), "%T %s", obj, obj.GetName())
		}
	}
	for _, ns := range []string{"tenant-fresh", "tenant-stale", "tenant-missing", "tenant-noplan", "tenant-forged", "tenant-drill", "tenant-capture"} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	// The class the Plans name binds Etcd applications to the Etcd
	// strategy s3: the Plans are the driver's.
	create(&backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-default"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
		}}},
	})
	// tenant-forged also sets the content-drop hold on its own Backup,
	// as any tenant can: the alert counts only holds the driver placed.
	tenantHeld := etcdBackup("tenant-forged", "real", end.Add(-3*time.Hour), nil)
	tenantHeld.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "forged"}
	create(
		etcdPlan("tenant-fresh", "daily", "@daily"), etcdBackup("tenant-fresh", "recent", end.Add(-2*time.Hour), nil),
		etcdPlan("tenant-stale", "daily", "@daily"), etcdBackup("tenant-stale", "old", end.Add(-40*time.Hour), nil),
		etcdPlan("tenant-missing", "hourly", "@hourly"),
		etcdBackup("tenant-noplan", "old", end.Add(-30*time.Hour), nil),
		tenantHeld,
		etcdBackup("tenant-forged", "forged", end.Add(-time.Minute), map[string]string{forgedLabel: "true"}),
	)
	// A later Backup of tenant-fresh dropped content: the driver holds
	// this one from retention, with its signed mark (the test is the
	// platform admin, who can read the key).
	keys := &provenance.Keyring{Reader: c, Namespace: o.Namespace, Name: o.ProvenanceSecret}
	held := etcdBackup("tenant-fresh", "before-drop", end.Add(-5*time.Hour), nil)
	create(held)
	unheld := held.DeepCopy()
	g.Expect(contentdrop.Hold(ctx, keys, held, "recent")).To(Succeed())
	g.Expect(c.Patch(ctx, held, client.MergeFrom(unheld))).To(Succeed())
	// Two Plans drill (yearly, so no drill starts here): "never" has had
	// no successful rehearsal within its window of an hour since it was
	// created (to the driver, two hours ago); "rehearsed" had one.
	never, rehearsed := etcdPlan("tenant-drill", "never", "@daily"), etcdPlan("tenant-drill", "rehearsed", "@daily")
	for _, p := range []*backupsv1alpha1.Plan{never, rehearsed} {
		p.Annotations = map[string]string{planpolicy.DrillSchedule: "0 0 1 1 *", planpolicy.DrillWindow: "1h"}
		create(p)
	}
	// As if a drill had succeeded 50 minutes before the end: the record
	// the driver would have written, signed with its key (the test is the
	// platform admin, who can read it); the write is an event of its own,
	// and the Plan judges again.
	lastGood := end.Add(-50 * time.Minute)
	rec, err := planrecord.Encode(ctx, keys, rehearsed, planrecord.Record{LastSuccessfulRehearsalTime: &metav1.Time{Time: lastGood}})
	g.Expect(err).NotTo(HaveOccurred())
	unchanged := rehearsed.DeepCopy()
	rehearsed.Annotations[planrecord.Annotation] = rec
	g.Expect(c.Patch(ctx, rehearsed, client.MergeFrom(unchanged))).To(Succeed())
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL("http://" + o.MetricsAddr + "/metrics")
		return series(s, "etcd_backup_driver_plan_last_successful_rehearsal_timestamp_seconds", "plan", "rehearsed"), err
	}).WithTimeout(30 * time.Second).Should(Equal(float64(lastGood.Unix())))

	// tenant-capture turned point-in-time capture on; its capture last
	// reported a change 40 minutes before the scrapes begin, more than
	// the 60 s the StrategyPolicy allows.
	lagging := captureLagging(ctx, g, c, keys, end.Add(-2*time.Hour), end.Add(-70*time.Minute))
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL("http://" + o.MetricsAddr + "/metrics")
		return series(s, "etcd_backup_driver_capture_max_lag_seconds", "plan", lagging), err
	}).WithTimeout(30 * time.Second).Should(Equal(60.0))

	// Two of them back up with strategy s3 using the same S3 access key
	// (their Secrets exist before the strategy: a namespace whose Secret
	// is missing when the strategy is first read is only read again at
	// the resync interval).
	for _, ns := range []string{"tenant-fresh", "tenant-stale"} {
		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-creds"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": "copied-everywhere", "AWS_SECRET_ACCESS_KEY": "copied-secret"}})
	}
	create(&strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "s3"}, Spec: strategyv1alpha1.EtcdSpec{
		Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
			Bucket: "etcd-backups", Endpoint: "https://s3.example.com", CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "s3-creds"}}}}}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: "platform-s3"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": platformID, "AWS_SECRET_ACCESS_KEY": platformSecret}})
	create(&strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "brokered"}, Spec: strategyv1alpha1.EtcdSpec{
		Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
			Bucket: "etcd-backups", Endpoint: s3.Endpoint, Key: "{{ .Application.metadata.namespace }}/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "unused"}}}}}})
	create(&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "brokered"}, Spec: driverv1alpha1.StrategyPolicySpec{
		AllowHTTPEndpoint: true,
		CredentialBroker: &driverv1alpha1.CredentialBroker{Provider: driverv1alpha1.CredentialBrokerMinIO,
			AdminSecretRef: driverv1alpha1.SecretReference{Name: "platform-s3"}}}})

	url := "http://" + o.MetricsAddr + "/metrics"
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL(url)
		return series(s, "etcd_backup_driver_shared_credentials_namespaces", "strategy", "s3"), err
	}).WithTimeout(30 * time.Second).Should(Equal(2.0))
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL(url)
		return series(s, "etcd_backup_driver_credential_broker_platform_keys", "policy", "inherited"), err
	}).WithTimeout(30 * time.Second).Should(Equal(1.0))
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL(url)
		return series(s, "etcd_backup_driver_plan_rehearsal_overdue", "plan", "never"), err
	}).WithTimeout(30 * time.Second).Should(Equal(1.0))
	// The collector serves every application once the caches have the objects.
	g.Eventually(func() (int, error) {
		s, err := scrapeURL(url)
		return len(s["etcd_backup_driver_last_success_timestamp_seconds"].GetMetric()), err
	}).WithTimeout(30 * time.Second).Should(Equal(5))

	h := history{end: end}
	record := func(from, to int) {
		for m := from; m <= to; m++ {
			clk.SetTime(end.Add(time.Duration(m) * time.Minute))
			s, err := scrapeURL(url)
			g.Expect(err).NotTo(HaveOccurred())
			h.points = append(h.points, point{at: clk.Now(), s: s, up: 1})
		}
	}
	record(-30, -11)

	// Failures, through the real controllers: a BackupJob whose class has
	// no strategy for Etcd, and a RestoreJob with malformed options.
	group := strategyv1alpha1.GroupVersion.Group
	create(&backupsv1alpha1.BackupClass{
		ObjectMeta: metav1.ObjectMeta{Name: "postgres-only"},
		Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
			Application: backupsv1alpha1.ApplicationSelector{Kind: "Postgres"},
			StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: "Etcd", Name: "s3"},
		}}},
	})
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-fresh", Name: "wrong-class"},
		Spec:       backupsv1alpha1.BackupJobSpec{ApplicationRef: etcdApp(), BackupClassName: "postgres-only"},
	}
	restore := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-fresh", Name: "malformed"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "recent"},
			Options: &runtime.RawExtension{Raw: []byte(`{"safetySnapshot":"yes"}`)}},
	}
	create(job, restore)
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Status.Phase).To(Equal(backupsv1alpha1.BackupJobPhaseFailed))
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(restore), restore)).To(Succeed())
		g.Expect(restore.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	// And the provenance key Secret is lost (the driver made it at start).
	keySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ProvenanceSecret}}
	g.Expect(c.Delete(ctx, keySecret)).To(Succeed())
	g.Eventually(func() (float64, error) {
		s, err := scrapeURL(url)
		if err != nil || len(s["etcd_backup_driver_provenance_key_lost"].GetMetric()) == 0 {
			return 0, err
		}
		return s["etcd_backup_driver_provenance_key_lost"].GetMetric()[0].GetGauge().GetValue(), nil
	}).WithTimeout(30 * time.Second).Should(Equal(1.0))
	record(-10, 0)

	ruleSet := renderedRules(t)
	g.Expect(ruleSet).To(HaveLen(14))

	t.Run("each alert fires for the application or failure it is about, and only then", func(t *testing.T) {
		g := NewWithT(t)
		firing := evaluate(t, ruleSet, h.points, end)
		g.Expect(firing).To(ConsistOf(
			`EtcdBackupStale{application="etcd",namespace="tenant-stale"}`,
			`EtcdBackupMissing{application="etcd",namespace="tenant-missing",plan="hourly"}`,
			`EtcdBackupTooOld{application="etcd",namespace="tenant-noplan"}`,
			`EtcdBackupUnverified{application="etcd",namespace="tenant-forged"}`,
			`EtcdBackupContentDrop{application="etcd",namespace="tenant-fresh"}`,
			`EtcdBackupFailing{reason="NoMatchingStrategy"}`,
			`EtcdRestoreFailed{reason="MalformedOptions"}`,
			`EtcdBackupProvenanceKeyLost`,
			`EtcdBackupSharedCredentials{strategy="s3"}`,
			`EtcdBackupBrokerPlatformKeys{strategy="brokered"}`,
			`EtcdBackupRehearsalOverdue{namespace="tenant-drill",plan="never"}`,
			`EtcdBackupPointInTimeLagging{namespace="tenant-capture",plan="pitr"}`,
		))
	})

	t.Run("a driver that is not scraped, or leads nowhere, is reported", func(t *testing.T) {
		g := NewWithT(t)
		var down []point
		for _, p := range h.points {
			p := p
			if p.at.After(end.Add(-15 * time.Minute)) {
				// From then on: every scrape fails (Prometheus records
				// up 0 and no samples), or the replica stands by.
				p.up = 0
				p.s = scrape{}
			}
			down = append(down, p)
		}
		g.Expect(evaluate(t, ruleSet, down, end)).To(ContainElement(`EtcdBackupDriverDown`))

		var standby []point
		for _, p := range h.points {
			p := p
			if p.at.After(end.Add(-15 * time.Minute)) {
				p.edit = func(s *sample) {
					if s.lbls.Get("__name__") == "leader_election_master_status" {
						s.value = 0
					}
				}
			}
			standby = append(standby, p)
		}
		g.Expect(evaluate(t, ruleSet, standby, end)).To(ContainElement(`EtcdBackupDriverNoLeader`))
	})

	t.Run("the dashboard queries only metrics the driver serves", func(t *testing.T) {
		checkDashboard(t, h.points[len(h.points)-1].s)
	})
}

func etcdApp() backupsv1alpha1.TypedLocalObjectReference {
	return backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}
}

func etcdPlan(ns, name, cron string) *backupsv1alpha1.Plan {
	return &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupsv1alpha1.PlanSpec{ApplicationRef: etcdApp(), BackupClassName: "etcd-default",
			Schedule: backupsv1alpha1.PlanSchedule{Cron: cron}},
	}
}

func etcdBackup(ns, name string, takenAt time.Time, lbls map[string]string) *backupsv1alpha1.Backup {
	return &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: etcdApp(),
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr(strategyv1alpha1.GroupVersion.Group), Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.NewTime(takenAt),
			// Retain and a key the cleanup can resolve, should it run;
			// the Secret the shared-key check reads.
			DriverMetadata: map[string]string{"etcd-backup-driver.cozystack.io/deletion-policy": "Retain",
				"etcd.aenix.io/bucket": "etcd-backups", "etcd.aenix.io/endpoint": "https://s3.example.com",
				"etcd.aenix.io/credentials-secret-name": "s3-creds"},
		},
		Status: backupsv1alpha1.BackupStatus{
			Phase:    backupsv1alpha1.BackupPhaseReady,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://etcd-backups/" + ns + "/etcd/" + name + ".db", SizeBytes: 4 << 20},
		},
	}
}

// rule is one alerting rule as the chart renders it.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// renderedRules renders the driver chart's PrometheusRule with its default
// thresholds.
func renderedRules(t *testing.T) []rule {
	t.Helper()
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "etcd-backup-driver", Namespace: "ebd-system",
		Values: map[string]any{"prometheusRule": map[string]any{"enabled": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pr := chartrender.Find(objs, "PrometheusRule", "etcd-backup-driver")
	if pr == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	raw, err := json.Marshal(pr.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Groups []struct {
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	var out []rule
	for _, grp := range spec.Groups {
		out = append(out, grp.Rules...)
	}
	return out
}

var promParser = parser.NewParser(parser.Options{})

// evaluate stores points in a fresh TSDB and runs every rule once a minute
// over them with Prometheus's rule engine, as a Prometheus server would,
// `for` included. It returns the alerts firing at end, as
// name{labels} without the severity label.
// series is the value of the first series of family name whose label
// has value, or 0.
func series(s scrape, name, label, value string) float64 {
	for _, m := range s[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func evaluate(t *testing.T, ruleSet []rule, points []point, end time.Time) []string {
	t.Helper()
	db := teststorage.New(t)
	load(t, db, points)
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute, Parser: promParser})
	query := rules.EngineQueryFunc(engine, db)
	var firing []string
	for _, r := range ruleSet {
		expr, err := promParser.ParseExpr(r.Expr)
		if err != nil {
			t.Fatalf("%s: %v", r.Alert, err)
		}
		hold := time.Duration(0)
		if r.For != "" {
			d, err := time.ParseDuration(r.For)
			if err != nil {
				t.Fatalf("%s: for: %v", r.Alert, err)
			}
			hold = d
		}
		ar := rules.NewAlertingRule(r.Alert, expr, hold, 0, labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", false, nil)
		for ts := points[0].at; !ts.After(end); ts = ts.Add(time.Minute) {
			if _, err := ar.Eval(context.Background(), 0, ts, query, nil, 0); err != nil {
				t.Fatalf("%s at %s: %v", r.Alert, ts, err)
			}
		}
		for _, a := range ar.ActiveAlerts() {
			if a.State != rules.StateFiring {
				continue
			}
			var parts []string
			a.Labels.Range(func(l labels.Label) {
				if l.Name != "alertname" && l.Name != "severity" {
					parts = append(parts, fmt.Sprintf("%s=%q", l.Name, l.Value))
				}
			})
			sort.Strings(parts)
			name := r.Alert
			if len(parts) > 0 {
				name += "{" + strings.Join(parts, ",") + "}"
			}
			firing = append(firing, name)
			// Every summary renders with the alert's labels and value.
			if strings.Contains(a.Annotations.Get("summary"), "{{") {
				t.Errorf("%s: summary not rendered: %s", r.Alert, a.Annotations.Get("summary"))
			}
		}
	}
	return firing
}

// Grafana variables, replaced by plausible values so the expressions parse.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "${stale_factor}", "1.5", "$namespace", ".*", "$job", ".*")

// checkDashboard parses every expression of the chart's dashboard and
// checks that each metric it selects is in the driver's scrape (or is up,
// which Prometheus adds itself).
func checkDashboard(t *testing.T, s scrape) {
	g := NewWithT(t)
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "etcd-backup-driver", Namespace: "ebd-system",
		Values: map[string]any{"grafanaDashboard": map[string]any{"enabled": true}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	cm := chartrender.Find(objs, "ConfigMap", "etcd-backup-driver-dashboard")
	g.Expect(cm).NotTo(BeNil())
	data, _, _ := unstructuredString(cm.Object, "data", "etcd-backup-driver.json")
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	g.Expect(yaml.Unmarshal([]byte(data), &dash)).To(Succeed())
	served := s.names()
	served["up"] = true
	registered := registeredNames()
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			expr, err := promParser.ParseExpr(grafanaVars.Replace(tg.Expr))
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s", p.Title, tg.Expr)
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(vs.Name, "_bucket"), "_sum"), "_count")
					g.Expect(served[vs.Name] || registered[base]).To(BeTrue(), "panel %q queries %s, which the driver does not serve", p.Title, vs.Name)
				}
				return nil
			})
		}
	}
	g.Expect(exprs).To(BeNumerically(">=", 10))
	g.Expect(regexp.MustCompile(`\$\w+`).FindAllString(grafanaVars.Replace(data), -1)).To(BeEmpty(), "every Grafana variable is known to the test")
}

// registeredNames lists the metrics registered on controller-runtime's
// registry (which the driver serves), including vectors that have no
// series yet, such as the restore duration before any restore ended.
func registeredNames() map[string]bool {
	ch := make(chan *prometheus.Desc)
	go func() { metrics.Registry.(*prometheus.Registry).Describe(ch); close(ch) }()
	out := map[string]bool{}
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := re.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}
