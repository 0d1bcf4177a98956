package legacyvalues

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

func valid() Backup {
	return Backup{
		Enabled:         true,
		Schedule:        "0 2 * * *",
		DestinationPath: "s3://etcd-backups/tenants/a/",
		EndpointURL:     "https://s3.example.com:9000",
		S3AccessKey:     "AKIAEXAMPLE",
		S3SecretKey:     "secret/EXAMPLE",
	}
}

func TestConvertRules(t *testing.T) {
	opts := Options{Namespace: "tenant-a"}
	for _, tc := range []struct {
		name   string
		mutate func(*Backup, *Options)
		errs   []string // every one must appear
	}{
		{name: "valid", mutate: func(*Backup, *Options) {}},
		{name: "descriptor schedule", mutate: func(b *Backup, _ *Options) { b.Schedule = "@daily" }},
		{name: "schedule with time zone", mutate: func(b *Backup, _ *Options) { b.Schedule = "CRON_TZ=Europe/Berlin 0 2 * * *" }},
		{name: "bucket without prefix", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3://etcd-backups" }},
		{name: "not enabled", mutate: func(b *Backup, _ *Options) { b.Enabled = false }, errs: []string{"backup.enabled is not true"}},
		{name: "destination missing", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "" }, errs: []string{"backup.destinationPath is required"}},
		{name: "destination not s3", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "https://bucket/x" }, errs: []string{"must start with s3://"}},
		{name: "destination empty segment", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3://bucket/a//b" }, errs: []string{"must not contain an empty // segment"}},
		{name: "destination no bucket", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3:///x" }, errs: []string{"names no bucket"}},
		{name: "destination only scheme", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3://" }, errs: []string{"names no bucket"}},
		{name: "bad bucket", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3://Bad_Bucket/x" }, errs: []string{`bucket "Bad_Bucket" is not a valid S3 bucket name`}},
		{name: "endpoint missing", mutate: func(b *Backup, _ *Options) { b.EndpointURL = "" }, errs: []string{"backup.endpointURL is required"}},
		{name: "endpoint without scheme", mutate: func(b *Backup, _ *Options) { b.EndpointURL = "s3.example.com" }, errs: []string{"must be an http:// or https:// URL"}},
		{name: "access key missing", mutate: func(b *Backup, _ *Options) { b.S3AccessKey = "" }, errs: []string{"backup.s3AccessKey is required"}},
		{name: "secret key missing", mutate: func(b *Backup, _ *Options) { b.S3SecretKey = "" }, errs: []string{"backup.s3SecretKey is required"}},
		{name: "schedule missing", mutate: func(b *Backup, _ *Options) { b.Schedule = "" }, errs: []string{"backup.schedule is required"}},
		{name: "six-field schedule", mutate: func(b *Backup, _ *Options) { b.Schedule = "0 0 2 * * *" }, errs: []string{"has 6 fields"}},
		{name: "template braces", mutate: func(b *Backup, _ *Options) { b.DestinationPath = "s3://bucket/{{ .x }}" }, errs: []string{"backup.destinationPath contains template braces"}},
		{name: "namespace missing", mutate: func(_ *Backup, o *Options) { o.Namespace = "" }, errs: []string{"--namespace"}},
		{name: "bad app", mutate: func(_ *Backup, o *Options) { o.App = "Not_Valid" }, errs: []string{`--app "Not_Valid"`}},
		{
			name:   "all four required fields reported together",
			mutate: func(b *Backup, _ *Options) { *b = Backup{Enabled: true, Schedule: "@daily"} },
			errs:   []string{"destinationPath is required", "endpointURL is required", "s3AccessKey is required", "s3SecretKey is required"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b, o := valid(), opts
			tc.mutate(&b, &o)
			objs, err := Convert(b, o)
			if len(tc.errs) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(objs).NotTo(BeNil())
				return
			}
			g.Expect(objs).To(BeNil())
			for _, want := range tc.errs {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
			// Error messages never echo the keys.
			g.Expect(err.Error()).NotTo(ContainSubstring(valid().S3SecretKey))
		})
	}
}

func TestConvertBuildsReplacements(t *testing.T) {
	g := NewWithT(t)
	objs, err := Convert(valid(), Options{Namespace: "tenant-a"})
	g.Expect(err).NotTo(HaveOccurred())

	s3 := objs.Strategy.Spec.Template.Destination.S3
	g.Expect(objs.Strategy.Name).To(Equal("legacy-tenant-a-etcd"))
	g.Expect(s3.Bucket).To(Equal("etcd-backups"))
	g.Expect(s3.Key).To(Equal("tenants/a/"))
	g.Expect(s3.Endpoint).To(Equal("https://s3.example.com:9000"))
	g.Expect(s3.CredentialsSecretRef.Name).To(Equal(objs.Secret.Name))
	g.Expect(objs.Policy.Name).To(Equal(objs.Strategy.Name), "a StrategyPolicy applies to the strategy of its name")
	g.Expect(string(objs.Policy.Spec.DeletionPolicy)).To(Equal("Retain"))
	g.Expect(objs.Policy.Spec.AllowHTTPEndpoint).To(BeFalse(), "an https endpoint needs no allowance")

	g.Expect(objs.Secret.Namespace).To(Equal("tenant-a"))
	g.Expect(objs.Secret.StringData).To(Equal(map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret/EXAMPLE"}))

	cls := objs.BackupClass.Spec.Strategies
	g.Expect(cls).To(HaveLen(1))
	g.Expect(*cls[0].StrategyRef.APIGroup).To(Equal("strategy.backups.cozystack.io"))
	g.Expect(cls[0].StrategyRef.Kind).To(Equal("Etcd"))
	g.Expect(cls[0].StrategyRef.Name).To(Equal(objs.Strategy.Name))
	g.Expect(*cls[0].Application.APIGroup).To(Equal("apps.cozystack.io"))
	g.Expect(cls[0].Application.Kind).To(Equal("Etcd"))

	plan := objs.Plan
	g.Expect(plan.Namespace).To(Equal("tenant-a"))
	g.Expect(plan.Spec.BackupClassName).To(Equal(objs.BackupClass.Name))
	g.Expect(plan.Spec.ApplicationRef.Name).To(Equal("etcd"))
	g.Expect(plan.Spec.Schedule.Cron).To(Equal("0 2 * * *"))
	g.Expect(string(plan.Spec.Schedule.Type)).To(Equal("cron"))
}

func TestYAMLIsApplyOrdered(t *testing.T) {
	g := NewWithT(t)
	objs, err := Convert(valid(), Options{Namespace: "tenant-a", App: "etcd"})
	g.Expect(err).NotTo(HaveOccurred())
	out, err := objs.YAML()
	g.Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(out), "\n---\n")
	g.Expect(docs).To(HaveLen(5))
	var kinds []string
	for _, d := range docs {
		m := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(d), &m)).To(Succeed())
		g.Expect(m).NotTo(HaveKey("status"))
		g.Expect(m["metadata"]).NotTo(HaveKey("creationTimestamp"))
		kinds = append(kinds, m["kind"].(string))
	}
	g.Expect(kinds).To(Equal([]string{"Secret", "Etcd", "StrategyPolicy", "BackupClass", "Plan"}))
}

// The earlier release sent snapshots over the plain-http endpoint it was
// given: the replacement keeps doing so, and says so in its StrategyPolicy.
func TestAnHTTPEndpointKeepsWorking(t *testing.T) {
	g := NewWithT(t)
	b := valid()
	b.EndpointURL = "http://minio.storage:9000"
	objs, err := Convert(b, Options{Namespace: "tenant-a"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs.Policy.Spec.AllowHTTPEndpoint).To(BeTrue())
}

func TestParseValues(t *testing.T) {
	g := NewWithT(t)
	b, err := ParseValues([]byte("replicas: 3\nbackup:\n  enabled: true\n  schedule: '@daily'\n  destinationPath: s3://b/p\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b).To(Equal(Backup{Enabled: true, Schedule: "@daily", DestinationPath: "s3://b/p"}))
	_, err = ParseValues([]byte("replicas: 3\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no backup block")))
	_, err = ParseValues([]byte("backup: [\n"))
	g.Expect(err).To(HaveOccurred())
}
