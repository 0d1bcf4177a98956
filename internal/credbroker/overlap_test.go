package credbroker

import (
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// The one overlap rule, over brokered and plain strategies alike.
func TestOverlappingConsidersEveryStrategyOnTheBucket(t *testing.T) {
	const s3 = "https://s3.example.org"
	brokered := func(name, bucket, root string) Placement {
		return Placement{Strategy: name, Bucket: bucket, Endpoint: s3, Key: root + "{{ .Application.metadata.namespace }}/",
			Broker: &driverv1alpha1.CredentialBroker{PrefixRoot: root}}
	}
	plain := func(name, bucket, endpoint, key string) Placement {
		return Placement{Strategy: name, Bucket: bucket, Endpoint: endpoint, Key: key}
	}
	cases := []struct {
		name      string
		self      Placement
		namespace string
		other     Placement
		want      bool
	}{
		{"brokered root is the tenant's prefix", brokered("self", "b", ""), "tenants", brokered("o", "b", "tenants/"), true},
		{"brokered root under the tenant's prefix", brokered("self", "b", ""), "tenants", brokered("o", "b", "tenants/x/"), true},
		{"equal brokered roots", brokered("self", "b", "r/"), "acme", brokered("o", "b", "r/"), false},
		{"brokered, another bucket", brokered("self", "b", ""), "tenants", brokered("o", "c", "tenants/"), false},
		{"brokered, another endpoint still counts", brokered("self", "b", ""), "tenants",
			Placement{Strategy: "o", Bucket: "b", Endpoint: "https://minio.internal", Broker: &driverv1alpha1.CredentialBroker{PrefixRoot: "tenants/"}}, true},
		{"plain literal key is the tenant's prefix", brokered("self", "b", ""), "shared", plain("o", "b", s3, "shared/{{ .Application.metadata.name }}/"), true},
		{"plain literal key inside the tenant's prefix", brokered("self", "b", ""), "shared", plain("o", "b", s3, "shared/etcd/"), true},
		{"plain key starting with an action", brokered("self", "b", "tenants/"), "acme", plain("o", "b", s3, "{{ .Application.metadata.namespace }}/"), true},
		{"plain literal start the prefix continues", brokered("self", "b", "tenants/"), "acme", plain("o", "b", s3, "tenants/{{ .Application.metadata.name }}/"), true},
		{"plain trims before {{-", brokered("self", "b", ""), "ab", plain("o", "b", s3, "ab/ {{- .Application.metadata.name }}"), true},
		{"plain elsewhere in the bucket", brokered("self", "b", "tenants/"), "acme", plain("o", "b", s3, "legacy/{{ .Application.metadata.namespace }}/"), false},
		{"plain sibling prefix", brokered("self", "b", ""), "acme", plain("o", "b", s3, "acme-old/{{ .Application.metadata.name }}/"), false},
		{"plain, another bucket", brokered("self", "b", ""), "shared", plain("o", "c", s3, "shared/"), false},
		{"plain, templated bucket", brokered("self", "b", ""), "shared", plain("o", "{{ .Parameters.bucket }}", s3, "shared/"), true},
		{"plain, same host with its default port", brokered("self", "b", ""), "shared", plain("o", "b", "https://S3.example.org:443/", "shared/"), true},
		{"plain, another service", brokered("self", "b", ""), "shared", plain("o", "b", "https://s3.elsewhere.net", "{{ .Application.metadata.namespace }}/"), false},
		{"plain, another port", brokered("self", "b", ""), "shared", plain("o", "b", "https://s3.example.org:9000", "shared/"), false},
		{"plain, templated endpoint", brokered("self", "b", ""), "shared", plain("o", "b", "{{ .Parameters.s3 }}", "shared/"), true},
		{"plain, unreadable endpoint", brokered("self", "b", ""), "shared", plain("o", "b", "::", "shared/"), true},
		{"the strategy itself", brokered("self", "b", ""), "shared", plain("self", "b", s3, "shared/"), false},
	}
	for _, tc := range cases {
		got, why := overlapping(tc.self, tc.namespace, []Placement{tc.other})
		if (got != nil) != tc.want || (got != nil) != (why != "") {
			t.Errorf("%s: overlapping = %v (%q), want %t", tc.name, got, why, tc.want)
		}
	}
}
