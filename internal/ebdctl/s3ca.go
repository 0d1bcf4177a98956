package ebdctl

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"

	"github.com/spf13/cobra"
)

// envS3CAFile names the environment variable --s3-ca-file defaults to (the
// sandbox exports it).
const envS3CAFile = "S3_CA_FILE"

// addS3CAFlag adds --s3-ca-file to cmd: the PEM bundle of CAs an https S3
// endpoint may chain to besides the system's, as the driver's own
// --s3-ca-file (an S3 service behind a private CA).
func addS3CAFlag(cmd *cobra.Command, file *string) {
	cmd.Flags().StringVar(file, "s3-ca-file", os.Getenv(envS3CAFile),
		"PEM bundle of CAs an https S3 endpoint may chain to, besides the system's (default $"+envS3CAFile+")")
}

// s3Transport is the HTTP transport of the command's S3 clients: the
// system's roots plus the CAs in file; file empty means the default
// transport's.
func s3Transport(file string) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if file == "" {
		return t, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef("--s3-ca-file: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usagef("--s3-ca-file %s holds no PEM certificate", file)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
