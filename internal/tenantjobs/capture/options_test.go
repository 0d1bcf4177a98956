package capture

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

func goodOptions() Options {
	return Options{
		EtcdEndpoints: []string{"https://etcd-client.tenant-a.svc:2379"},
		EtcdCert:      "/etc/etcd/tls.crt", EtcdKey: "/etc/etcd/tls.key", EtcdCA: "/etc/etcd/ca.crt",
		Endpoint: "https://s3.example.com", Bucket: "backups", Region: "eu-1", PathStyle: true,
		AllowedEndpointCIDRs: []string{"10.0.0.0/8"}, Prefix: "tenant-a/etcd",
		Base:            changelog.Base{Revision: 42, SHA256: strings.Repeat("ab", 32)},
		SegmentInterval: 5 * time.Second, SegmentBytes: 1 << 20, TerminationLog: "/tmp/log",
		Progress: ProgressRecord{Namespace: "tenant-a", Name: "etcd-capture-x", TokenFile: "/var/run/token", CAFile: "/var/run/ca.crt"},
	}
}

// The driver's arguments parse back into the options it built.
func TestArgsParseBack(t *testing.T) {
	o := goodOptions()
	got, err := Parse(o.Args(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("parsed %+v\nbuilt  %+v", got, o)
	}
	plain := o
	plain.EtcdEndpoints, plain.EtcdCert, plain.EtcdKey, plain.EtcdCA = []string{"http://127.0.0.1:2379"}, "", "", ""
	if _, err := Parse(plain.Args(), io.Discard); err != nil {
		t.Fatalf("a sandbox's plain etcd: %v", err)
	}
}

// Options the capture cannot run with are refused as arguments.
func TestValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"no etcd", func(o *Options) { o.EtcdEndpoints = nil }},
		{"https without a certificate", func(o *Options) { o.EtcdCert, o.EtcdKey, o.EtcdCA = "", "", "" }},
		{"a certificate without its CA", func(o *Options) { o.EtcdCA = "" }},
		{"http with a certificate", func(o *Options) { o.EtcdEndpoints = []string{"http://etcd:2379"} }},
		{"an endpoint with a path", func(o *Options) { o.EtcdEndpoints = []string{"https://etcd:2379/v3"} }},
		{"no bucket", func(o *Options) { o.Bucket = "" }},
		{"a prefix climbing out", func(o *Options) { o.Prefix = "tenant-a/../tenant-b" }},
		{"an absolute prefix", func(o *Options) { o.Prefix = "/tenant-a" }},
		{"no base revision", func(o *Options) { o.Base.Revision = 0 }},
		{"a base sha256 in capitals", func(o *Options) { o.Base.SHA256 = strings.Repeat("AB", 32) }},
		{"segments every 100 ms", func(o *Options) { o.SegmentInterval = 100 * time.Millisecond }},
		{"segments above the format's room", func(o *Options) { o.SegmentBytes = MaxSegmentBytes + 1 }},
		{"a record without a token", func(o *Options) { o.Progress.TokenFile = "" }},
		{"a token without a record", func(o *Options) { o.Progress.Name = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := goodOptions()
			tc.edit(&o)
			if err := o.Validate(); !errors.Is(err, stagingstep.ErrArguments) {
				t.Fatalf("Validate = %v, want ErrArguments", err)
			}
		})
	}
	if _, err := Parse([]string{"--bucket=b", "stray"}, io.Discard); !errors.Is(err, stagingstep.ErrArguments) {
		t.Fatalf("a stray argument: %v", err)
	}
	for _, bad := range []string{"name-only", "/name", "ns/", "ns/a/b"} {
		args := append(goodOptions().Args(), "--progress="+bad)
		if _, err := Parse(args, io.Discard); !errors.Is(err, stagingstep.ErrArguments) {
			t.Fatalf("--progress=%s: %v", bad, err)
		}
	}
}

// A report reads back as written; a message that is not one whole
// report is refused.
func TestReportParsesStrictly(t *testing.T) {
	at := time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC)
	r := Report{Envelope: report.Envelope{Outcome: OutcomeGap, Reason: ReasonCompacted, Message: strings.Repeat("m", 3*report.MaxMessage)}, BaseRevision: 42, Segments: 3, Newest: 99, NewestTime: &at}
	got, err := ParseReport(r.Line())
	if err != nil {
		t.Fatal(err)
	}
	if got.ExitCode() != ExitGap || got.Newest != 99 || len(got.Message) > report.MaxMessage {
		t.Fatalf("read back %+v", got)
	}
	for _, bad := range []string{
		"", "{}", `{"outcome":"Gap"}`, `{"outcome":"Maybe","reason":"x","segments":0}`,
		r.Line() + r.Line(), strings.Replace(r.Line(), `"segments"`, `"extra":1,"segments"`, 1),
		strings.Replace(r.Line(), `"newest":99`, `"newest":7`, 1),
	} {
		if _, err := ParseReport(bad); err == nil {
			t.Fatalf("ParseReport(%q) accepted it", bad)
		}
	}
}
