package operator

import "testing"

// Only a Service's name and port that the resolver knows are replaced,
// wherever they stand in an argument; anything else is left alone.
func TestResolveNamesReplacesKnownServicesOnly(t *testing.T) {
	n := nodeServices{Resolve: func(host, port string) (string, bool) {
		if host == "etcd-client.tenant-a.svc" && port == "2379" {
			return "127.0.0.1:41234", true
		}
		return "", false
	}}
	for _, tc := range []struct{ in, want string }{
		{"--etcd-endpoints=https://etcd-client.tenant-a.svc:2379", "--etcd-endpoints=https://127.0.0.1:41234"},
		{"--etcd-endpoints=https://etcd-client.tenant-a.svc:2379,https://etcd-client.tenant-a.svc:2379", "--etcd-endpoints=https://127.0.0.1:41234,https://127.0.0.1:41234"},
		{"--etcd-endpoints=https://etcd-client.tenant-b.svc:2379", "--etcd-endpoints=https://etcd-client.tenant-b.svc:2379"},
		{"--etcd-endpoints=https://etcd-client.tenant-a.svc:2380", "--etcd-endpoints=https://etcd-client.tenant-a.svc:2380"},
		{"--prefix=tenant-a/etcd", "--prefix=tenant-a/etcd"},
		{"--endpoint=https://127.0.0.1:9000", "--endpoint=https://127.0.0.1:9000"},
	} {
		if got := n.resolveNames(tc.in); got != tc.want {
			t.Errorf("resolveNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (nodeServices{}).resolveNames("https://etcd-client.tenant-a.svc:2379"); got != "https://etcd-client.tenant-a.svc:2379" {
		t.Errorf("without a resolver: %q", got)
	}
}
