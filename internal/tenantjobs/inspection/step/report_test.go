package step

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// fullManifest is the largest manifest a Counter makes: every list at its
// bound, every name at ManifestMaxName bytes.
func fullManifest() driverv1alpha1.BackupManifest {
	name := func(kind string, i int) string {
		s := fmt.Sprintf("%s-%02d-", kind, i)
		return s + strings.Repeat("x", driverv1alpha1.ManifestMaxName-len(s))
	}
	m := driverv1alpha1.BackupManifest{Revision: 1000, CompactedRevision: 900, Keys: 100000, DBSizeBytes: 1 << 30}
	for k := range driverv1alpha1.ManifestMaxKeyspaces {
		ks := driverv1alpha1.KeyspaceManifest{Prefix: "/" + name("p", k)[1:], Objects: 20000, Namespaces: 16}
		for i := range driverv1alpha1.ManifestMaxResources {
			ks.Resources = append(ks.Resources, driverv1alpha1.ObjectCount{Name: name("r", i), Count: int64(1000 - i)})
		}
		for i := range driverv1alpha1.ManifestMaxNamespaces {
			ks.TopNamespaces = append(ks.TopNamespaces, driverv1alpha1.ObjectCount{Name: name("n", i), Count: int64(500 - i)})
		}
		for i := range 2 * driverv1alpha1.ManifestMaxNamespaces {
			ks.NamespaceNames = append(ks.NamespaceNames, name("n", i))
		}
		m.Keyspaces = append(m.Keyspaces, ks)
	}
	return m
}

// TestReportLineFitsTheTerminationMessage: the largest manifest, with the
// longest message, still makes one line of at most report.MaxLine bytes
// that ParseReport accepts; the lists lose tail entries (never part of a
// NamespaceNames list, which would read as namespaces gone), Truncated is
// set, and the report it was made from is left untouched.
func TestReportLineFitsTheTerminationMessage(t *testing.T) {
	m := fullManifest()
	r := NewReport(m, nil)
	r.Message = strings.Repeat("é", 3000)
	line := r.Line()
	if strings.Count(line, "\n") != 1 || len(line) > report.MaxLine {
		t.Fatalf("report is %d bytes (%d lines), want one line of at most %d", len(line), strings.Count(line, "\n"), report.MaxLine)
	}
	got, err := ParseReport(line)
	if err != nil {
		t.Fatal(err)
	}
	g := got.Manifest
	if !g.Truncated || len(g.Keyspaces) == 0 || g.Revision != m.Revision || g.Keys != m.Keys {
		t.Fatalf("shrunk manifest %+v", g)
	}
	for i, k := range g.Keyspaces {
		if len(k.NamespaceNames) != 0 && len(k.NamespaceNames) != 16 {
			t.Fatalf("keyspace %d lists %d of its 16 namespaces by name", i, len(k.NamespaceNames))
		}
		if len(k.Resources) > 0 && k.Resources[0] != m.Keyspaces[i].Resources[0] {
			t.Fatalf("keyspace %d lost its largest resource: %+v", i, k.Resources)
		}
	}
	if !reflect.DeepEqual(*r.Manifest, m) {
		t.Fatalf("Line changed the report's manifest")
	}

	small := NewReport(driverv1alpha1.BackupManifest{Revision: 5, Keys: 3, DBSizeBytes: 20480, Keyspaces: []driverv1alpha1.KeyspaceManifest{{
		Prefix: "/registry", Objects: 2, Namespaces: 1, Resources: []driverv1alpha1.ObjectCount{{Name: "namespaces", Count: 1}}, NamespaceNames: []string{"default"}}}}, nil)
	if got, err := ParseReport(small.Line()); err != nil || !reflect.DeepEqual(got, small) || got.Manifest.Truncated {
		t.Fatalf("a small report does not round-trip: %+v, %v", got, err)
	}
	refused := NewReport(driverv1alpha1.BackupManifest{}, fmt.Errorf("%w: %s", s3object.ErrCorrupt, strings.Repeat("x", 5000)))
	if refused.Outcome != report.Refused || refused.Reason != stagingstep.ReasonArtifactCorrupt || refused.ExitCode() != report.ExitRefused || refused.Manifest != nil {
		t.Fatalf("a corrupt object reports %+v", refused)
	}
	if got, err := ParseReport(refused.Line()); err != nil || !reflect.DeepEqual(got, refused) {
		t.Fatalf("a refusal does not round-trip: %+v, %v", got, err)
	}
	// JSON writes a control character in six bytes: a message within
	// report.MaxMessage can still be too long for the line.
	escaped := NewReport(fullManifest(), nil)
	escaped.Message = strings.Repeat("\x01<", report.MaxMessage/2)
	if line := escaped.Line(); len(line) > report.MaxLine {
		t.Fatalf("a message of control characters makes a %d-byte report", len(line))
	} else if got, err := ParseReport(line); err != nil {
		t.Fatal(err)
	} else if len(got.Manifest.Keyspaces) != driverv1alpha1.ManifestMaxKeyspaces {
		t.Fatalf("the message's escapes cost %d of the %d keyspaces", driverv1alpha1.ManifestMaxKeyspaces-len(got.Manifest.Keyspaces), driverv1alpha1.ManifestMaxKeyspaces)
	}
}

// TestParseReportRefusesHostileMessages: the termination message comes
// from a Pod in a tenant's namespace; anything but one report within the
// manifest's bounds is refused.
func TestParseReportRefusesHostileMessages(t *testing.T) {
	good := `{"outcome":"Inspected","reason":"Inspected","manifest":{"inspectedAt":null,"revision":9,"keys":3,"dbSizeBytes":20480,` +
		`"keyspaces":[{"prefix":"/registry","objects":2,"namespaces":1,"resources":[{"name":"namespaces","count":1}],"namespaceNames":["default"]}]}}`
	if _, err := ParseReport(good); err != nil {
		t.Fatalf("the well-formed report is refused: %v", err)
	}
	swap := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q is not in the report", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	longList := func(field string, n int) string {
		var items []string
		for i := range n {
			items = append(items, fmt.Sprintf(`{"name":"r%d","count":1}`, i))
		}
		return swap(`"resources":[{"name":"namespaces","count":1}]`, `"`+field+`":[`+strings.Join(items, ",")+`]`)
	}
	for name, msg := range map[string]string{
		"oversized":             good + strings.Repeat(" ", report.MaxLine),
		"two objects":           good + "\n" + good,
		"unknown field":         swap(`"keys":3`, `"keys":3,"extra":1`),
		"unknown keyspace key":  swap(`"objects":2`, `"objects":2,"owner":"me"`),
		"negative keys":         swap(`"keys":3`, `"keys":-3`),
		"negative count":        swap(`"count":1`, `"count":-1`),
		"count above objects":   swap(`"count":1`, `"count":99`),
		"negative objects":      swap(`"objects":2`, `"objects":-2`),
		"objects above keys":    swap(`"objects":2`, `"objects":20`),
		"zero revision":         swap(`"revision":9`, `"revision":0`),
		"compacted above":       swap(`"revision":9`, `"revision":9,"compactedRevision":10`),
		"signed by the Pod":     swap(`"keys":3`, `"keys":3,"signature":"abc"`),
		"dated by the Pod":      swap(`"inspectedAt":null`, `"inspectedAt":"2026-01-01T00:00:00Z"`),
		"too many resources":    longList("resources", driverv1alpha1.ManifestMaxResources+1),
		"too many namespaces":   longList("topNamespaces", driverv1alpha1.ManifestMaxNamespaces+1),
		"long name":             swap(`"name":"namespaces"`, `"name":"`+strings.Repeat("n", 64)+`"`),
		"empty name":            swap(`"name":"namespaces"`, `"name":""`),
		"prefix not a path":     swap(`"prefix":"/registry"`, `"prefix":"registry"`),
		"no manifest":           `{"outcome":"Inspected","reason":"Inspected"}`,
		"refusal with manifest": swap(`"outcome":"Inspected","reason":"Inspected"`, `"outcome":"Refused","reason":"ArtifactCorrupt"`),
		"unknown outcome":       `{"outcome":"Maybe","reason":"Transient"}`,
		"no reason":             `{"outcome":"Refused"}`,
		"cut short":             good[:60],
		"not JSON":              "panic: runtime error",
		"empty":                 "",
	} {
		if r, err := ParseReport(msg); err == nil {
			t.Errorf("%s: ParseReport accepted %+v", name, r)
		}
	}
}
