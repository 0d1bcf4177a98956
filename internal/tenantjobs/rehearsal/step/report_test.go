package step

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

func TestArgsRoundTrip(t *testing.T) {
	o := Options{WorkDir: "/work", Staging: stagingstep.Options{Endpoint: "https://s3", Bucket: "b", Key: "k", Size: 4128,
		SHA256: strings.Repeat("ab", 32), BumpRevision: 7, AllowedEndpointCIDRs: []string{"10.0.0.0/8"}, TerminationLog: "/dev/termination-log"}}
	got, err := Parse(o.Args(), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	o.Staging.Out = "/work/rehearsal/staged.db"
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, o)
	}
	for name, args := range map[string][]string{
		"no work dir":       o.Staging.Args()[:0],
		"relative work dir": {"--work-dir=work"},
		"an --out":          append(o.Args(), "--out=/elsewhere"),
		"two work dirs":     append(o.Args(), "--work-dir=/b"),
	} {
		if _, err := Parse(args, &bytes.Buffer{}); !errors.Is(err, stagingstep.ErrArguments) {
			t.Errorf("%s: Parse = %v, want ErrArguments", name, err)
		}
	}
}

// fullKeyspace is a keyspace with every list at its bound and every name
// at its longest.
func fullKeyspace(i int) driverv1alpha1.KeyspaceManifest {
	name := func(p string, j int) string { return fmt.Sprintf("%s%02d-%s", p, j, strings.Repeat("x", 58)) }
	k := driverv1alpha1.KeyspaceManifest{Prefix: fmt.Sprintf("/ns_%d", i), Objects: 1 << 40, Namespaces: 16}
	for j := range driverv1alpha1.ManifestMaxResources {
		k.Resources = append(k.Resources, driverv1alpha1.ObjectCount{Name: name("r", j), Count: 1 << 30})
	}
	for j := range driverv1alpha1.ManifestMaxNamespaces {
		k.TopNamespaces = append(k.TopNamespaces, driverv1alpha1.ObjectCount{Name: name("n", j), Count: 1 << 30})
	}
	for j := range 2 * driverv1alpha1.ManifestMaxNamespaces {
		k.NamespaceNames = append(k.NamespaceNames, name("n", j))
	}
	return k
}

// The largest report the counter can produce fits the termination message
// once cut, says it was cut, keeps its largest entries and never keeps a
// partial list of namespace names; ParseReport reads it back and refuses
// anything malformed, oversized or beyond the manifest's bounds.
func TestReportFitsAndParsesStrictly(t *testing.T) {
	r := Report{Envelope: report.Envelope{Outcome: OutcomeRehearsed, Reason: ReasonRehearsed, Message: strings.Repeat("é", 3000)}, Revision: 10, CompactedRevision: 10, Keys: 5}
	for i := range driverv1alpha1.ManifestMaxKeyspaces {
		r.Keyspaces = append(r.Keyspaces, fullKeyspace(i))
	}
	line := r.Line()
	if len(line) > report.MaxLine || strings.Count(line, "\n") != 1 {
		t.Fatalf("report line is %d bytes", len(line))
	}
	got, err := ParseReport(line)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(got.Keyspaces) == 0 || len(got.Keyspaces[0].Resources) == 0 || got.Keyspaces[0].Resources[0].Name != r.Keyspaces[0].Resources[0].Name {
		t.Fatalf("cut report %+v", got)
	}
	for _, k := range got.Keyspaces {
		if n := len(k.NamespaceNames); n != 0 && n != 2*driverv1alpha1.ManifestMaxNamespaces {
			t.Fatalf("keyspace %s keeps %d of 16 namespace names", k.Prefix, n)
		}
	}
	if len(r.Keyspaces[0].Resources) != driverv1alpha1.ManifestMaxResources {
		t.Fatal("Line cut the caller's lists")
	}

	small := Report{Envelope: report.Envelope{Outcome: OutcomeRehearsed, Reason: ReasonRehearsed}, Revision: 10, CompactedRevision: 10, Keyspaces: []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Objects: 1}}}
	if got, err := ParseReport(small.Line()); err != nil || !reflect.DeepEqual(got, small) {
		t.Fatalf("ParseReport(small) = %+v, %v", got, err)
	}
	tooMany := small
	tooMany.Keyspaces = make([]driverv1alpha1.KeyspaceManifest, 5)
	negative := small
	negative.Keyspaces = []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Resources: []driverv1alpha1.ObjectCount{{Name: "pods", Count: -1}}}}
	for _, bad := range []string{
		"", "panic: boom", `{"outcome":"Rehearsed","reason":"Rehearsed"}`,
		`{"outcome":"Rehearsed","reason":"Rehearsed","revision":5,"compactedRevision":6}`,
		`{"outcome":"Maybe","reason":"x"}`, `{"outcome":"Refused"}`,
		`{"outcome":"Refused","reason":"x","extra":1}`,
		small.Line() + small.Line(), small.Line()[:30],
		mustMarshal(tooMany), mustMarshal(negative),
		`{"outcome":"Refused","reason":"x","message":"` + strings.Repeat("a", 3990) + `"}`,
	} {
		if r, err := ParseReport(bad); err == nil {
			t.Errorf("ParseReport(%.80q) = %+v, want an error", bad, r)
		}
	}
}

// mustMarshal is r's JSON without Line's cutting.
func mustMarshal(r Report) string {
	r.Keyspaces = append([]driverv1alpha1.KeyspaceManifest(nil), r.Keyspaces...)
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(b)
}
