package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/keyscope"
)

// keyScope prints what a tenant namespace's brokered key reaches, asking
// the S3 server of the sandbox's exports (S3_ENDPOINT, S3_BUCKET and the
// platform key S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY), and fails when
// the key reaches more than its prefix or a Secret of the namespace holds
// the platform key.
func keyScope(args []string) error {
	fs := flag.NewFlagSet("keyscope", flag.ExitOnError)
	ns := fs.String("namespace", "", "tenant namespace")
	secret := fs.String("secret", "", "the broker's Secret in the namespace (etcd-backup-broker-<strategy>)")
	_ = fs.Parse(args)
	t := keyscope.Target{Endpoint: os.Getenv("S3_ENDPOINT"), Bucket: os.Getenv("S3_BUCKET"), Namespace: *ns, Secret: *secret,
		PlatformKeyID: os.Getenv("S3_ACCESS_KEY_ID"), PlatformSecret: os.Getenv("S3_SECRET_ACCESS_KEY")}
	if file := os.Getenv("S3_CA_FILE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("S3_CA_FILE: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("S3_CA_FILE %s holds no PEM certificate", file)
		}
	}
	if t.Namespace == "" || t.Secret == "" || t.Endpoint == "" || t.Bucket == "" || t.PlatformKeyID == "" || t.PlatformSecret == "" {
		return fmt.Errorf("keyscope needs --namespace, --secret and the sandbox's S3_* exports")
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := keyscope.Check(ctx, c, t)
	if err != nil {
		return err
	}
	fmt.Printf("Secret %s/%s (the broker's): key %s, scope %s; platform key %s\n", t.Namespace, t.Secret, r.AccessKeyID, r.Scope, t.PlatformKeyID)
	for _, p := range r.Probes {
		verdict := "as it should"
		if p.Allowed != p.Want || p.Unanswered {
			verdict = "WRONG"
		}
		fmt.Printf("  tenant key: %-60s %s (%s)\n", p.What, p.Detail, verdict)
	}
	fmt.Printf("  %d Secrets in %s searched for the platform key\n", r.SecretsChecked, t.Namespace)
	if len(r.Problems) > 0 {
		return fmt.Errorf("the tenant's key is not isolated: %s", strings.Join(r.Problems, "; "))
	}
	fmt.Println("  isolated: the tenant's key reaches its own prefix only, and no tenant Secret holds the platform key")
	return nil
}
