package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		in   string
		same bool
	}{
		{"etcd", true},
		{"restore-from-the-nightly-backup.2026-06-01", true},
		{strings.Repeat("x", 63), true},
		{long, false},
		{"restore-from-the-nightly-backup-of-the-tenant-control-plane.2026-06-01T00", false},
		{"-leading", false},
		{"has space", false},
	} {
		got := LabelValue(tc.in)
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q is not a label value: %v", tc.in, got, errs)
		}
		if (got == tc.in) != tc.same {
			t.Errorf("LabelValue(%q) = %q, want unchanged=%v", tc.in, got, tc.same)
		}
		if LabelValue(tc.in) != got {
			t.Errorf("LabelValue(%q) is not deterministic", tc.in)
		}
	}
	if LabelValue(long) == LabelValue(long+"b") {
		t.Error("distinct long values map to one label value")
	}
}

func TestDNSLabelAndSuffix(t *testing.T) {
	for _, in := range []string{
		"nightly", "restore-from-the-nightly-backup.2026-06-01", strings.Repeat("r", 253), "UPPER.case", "..", "",
	} {
		for _, got := range []string{DNSLabel(48, in, "safety"), WithSuffix(48, in, "0123456789")} {
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 || len(got) > 48 {
				t.Errorf("from %q: %q is not a DNS label of <= 48 characters: %v", in, got, errs)
			}
		}
	}
	if got := DNSLabel(63, "plain", "name"); got != "plain-name" {
		t.Errorf("a name that fits is kept: %q", got)
	}
	if got := WithSuffix(63, "job", "abc"); got != "job-abc" {
		t.Errorf("a name that fits is kept: %q", got)
	}
	if DNSLabel(20, "a.b") == DNSLabel(20, "a-b") {
		t.Error("a dotted and a dashed name collide")
	}
}

func TestSubdomain(t *testing.T) {
	for _, parts := range [][]string{
		{"tenant", "restore.v1"}, {strings.Repeat("n", 63), strings.Repeat("j", 253)}, {"A_B"},
	} {
		got := Subdomain(253, parts...)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("Subdomain(%q) = %q: %v", parts, got, errs)
		}
	}
	if got := Subdomain(253, "tenant", "restore.v1"); got != "tenant-restore.v1" {
		t.Errorf("a subdomain that fits is kept: %q", got)
	}
}
