package endpointpolicy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	strict := Policy{}
	sandbox, err := Parse([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		p         Policy
		endpoint  string
		allowHTTP bool
		ok        bool
	}{
		{"https host", strict, "https://s3.example.com", false, true},
		{"https host and port", strict, "https://s3.example.com:9000/", false, true},
		{"private range is allowed", strict, "https://10.0.0.5:9000", false, true},
		{"http refused by default", strict, "http://s3.example.com", false, false},
		{"http with opt-in", strict, "http://s3.example.com", true, true},
		{"loopback", strict, "https://127.0.0.1:9000", false, false},
		{"loopback other address", strict, "https://127.0.0.2", false, false},
		{"ipv6 loopback", strict, "https://[::1]:9000", false, false},
		{"ipv4-mapped loopback", strict, "https://[::ffff:127.0.0.1]", false, false},
		{"metadata address", strict, "https://169.254.169.254", false, false},
		{"aws ipv6 metadata", strict, "https://[fd00:ec2::254]", false, false},
		{"metadata name", strict, "https://metadata.google.internal", false, false},
		{"localhost", strict, "https://localhost:9000", false, false},
		{"sub.localhost", strict, "https://x.localhost", false, false},
		{"unspecified", strict, "https://0.0.0.0", false, false},
		{"multicast", strict, "https://224.0.0.1", false, false},
		{"path", strict, "https://s3.example.com/bucket", false, false},
		{"userinfo", strict, "https://u:p@s3.example.com", false, false},
		{"other scheme", strict, "ftp://s3.example.com", false, false},
		{"no host", strict, "https://", false, false},
		{"sandbox loopback allowed", sandbox, "http://127.0.0.1:9000", true, true},
		{"sandbox localhost allowed", sandbox, "http://localhost:9000", true, true},
		{"sandbox metadata still denied", sandbox, "http://169.254.169.254", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.CheckURL(tc.endpoint, tc.allowHTTP)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckURL(%q) = %v, want ok=%v", tc.endpoint, err, tc.ok)
			}
		})
	}
	if _, err := Parse([]string{"not-a-cidr"}); err == nil {
		t.Fatal("Parse accepted a non-CIDR")
	}
}

// The dial-time check sees the resolved address, so a name that resolves
// to loopback is refused although the URL check let it through.
func TestTransportRefusesDeniedAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	client := &http.Client{Transport: Policy{}.Transport()}
	resp, err := client.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the transport connected to a loopback server")
	}
	if !strings.Contains(err.Error(), "may not reach") {
		t.Fatalf("unexpected error: %v", err)
	}
	allowed, _ := Parse([]string{"127.0.0.1/32"})
	resp, err = (&http.Client{Transport: allowed.Transport()}).Get(srv.URL)
	if err != nil {
		t.Fatalf("an allowed range was refused: %v", err)
	}
	resp.Body.Close()

	// Resolution happens before the check: "localhost" resolves to loopback.
	d := Policy{}.Dialer()
	if _, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", "1")); err == nil ||
		!strings.Contains(err.Error(), "may not reach") {
		t.Fatalf("dialling localhost: %v", err)
	}
}
