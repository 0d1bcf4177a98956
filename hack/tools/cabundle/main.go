// Command cabundle writes the CA bundle of the driver's image
// (/etc/ssl/certs/ca-certificates.crt): the root certificates of Mozilla's
// NSS trust store as golang.org/x/crypto/x509roots/fallback ships them, in
// PEM. The module version is pinned in this folder's go.mod and verified by
// its go.sum, so the bundle, and with it the image digest, depends on the
// commit only, never on the build host's own CA certificates.
//
// A PEM file cannot carry the constraints NSS puts on some roots (a
// distrust-after date): those roots are left out, so that the image never
// trusts a certificate that NSS would refuse.
//
//	go run . OUT
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cabundle OUT")
		os.Exit(2)
	}
	var out bytes.Buffer
	kept, dropped := 0, 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			dropped++
			continue
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			fmt.Fprintln(os.Stderr, "cabundle:", err)
			os.Exit(1)
		}
		kept++
	}
	if kept == 0 {
		fmt.Fprintln(os.Stderr, "cabundle: the bundle has no unconstrained root")
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "cabundle:", err)
		os.Exit(1)
	}
	fmt.Printf("cabundle: %d roots (%d with a distrust-after date left out), sha256 %x\n", kept, dropped, sha256.Sum256(out.Bytes()))
}
