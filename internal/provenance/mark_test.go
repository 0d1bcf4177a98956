package provenance

import (
	"context"
	"strings"
	"testing"
)

// A mark verifies only for the domain and body it was made for, under a
// key the keyring holds; it keeps verifying after the active key changes.
func TestMark(t *testing.T) {
	ctx := context.Background()
	mark, err := Mark(ctx, testKeys, "record\nns\nname\nuid", []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mark, "k1.k2.") {
		t.Fatalf("mark %q does not name its version and key", mark)
	}
	rotated := StaticKeys{ActiveID: "k3", Keys: map[string][]byte{"k2": testKeys.Keys["k2"], "k3": []byte(strings.Repeat("3", 32))}}
	onlyOther := StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": testKeys.Keys["k1"]}}
	for _, tc := range []struct {
		name   string
		keys   Keys
		domain string
		body   string
		mark   string
		want   bool
	}{
		{"as made", testKeys, "record\nns\nname\nuid", `{"a":1}`, mark, true},
		{"after a rotation", rotated, "record\nns\nname\nuid", `{"a":1}`, mark, true},
		{"another body", testKeys, "record\nns\nname\nuid", `{"a":2}`, mark, false},
		{"another object", testKeys, "record\nns\nname\nuid2", `{"a":1}`, mark, false},
		{"a key the driver does not hold", onlyOther, "record\nns\nname\nuid", `{"a":1}`, mark, false},
		{"malformed", testKeys, "record\nns\nname\nuid", `{"a":1}`, "k1.k2", false},
		{"another version", testKeys, "record\nns\nname\nuid", `{"a":1}`, "k9" + mark[2:], false},
	} {
		ok, err := CheckMark(ctx, tc.keys, tc.domain, []byte(tc.body), tc.mark)
		if err != nil || ok != tc.want {
			t.Errorf("%s: CheckMark = %v, %v; want %v", tc.name, ok, err, tc.want)
		}
	}
}
