// Package keyscope asks the S3 server what a tenant namespace's brokered
// key reaches (its own prefix, and nothing else) and checks that no Secret
// of the namespace holds the platform's key. `make demo BROKERED=1` prints
// its report; the brokered sandbox test asserts it.
package keyscope

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
)

// OtherPrefix is the prefix of a namespace that is not the tenant's; the
// probes list and write there.
const OtherPrefix = "keyscope-other-tenant/"

// Target says whose key to check and against what.
type Target struct {
	// Endpoint and Bucket are the S3 server and the strategy's bucket.
	Endpoint, Bucket string
	// RootCAs verify an https Endpoint (the sandbox's S3 CA); nil means
	// the system's roots.
	RootCAs *x509.CertPool
	// Namespace is the tenant namespace; its prefix is Namespace + "/".
	Namespace string
	// Secret is the broker's Secret in Namespace.
	Secret string
	// PlatformKeyID and PlatformSecret are the platform's admin key, which
	// no Secret of Namespace may hold.
	PlatformKeyID, PlatformSecret string
}

// Probe is one request made with the tenant's key and its outcome.
type Probe struct {
	// What was asked, for the report.
	What string
	// Allowed is what the server answered; Want what it should have.
	Allowed, Want bool
	// Detail is the answer: an object count or the S3 error code.
	Detail string
	// Unanswered is set when the request failed other than by a refusal
	// (AccessDenied): the probe then proves nothing.
	Unanswered bool
}

// Report is what Check found.
type Report struct {
	// AccessKeyID is the tenant key's id.
	AccessKeyID string
	// Scope is what the driver says the key reaches (the Secret's
	// annotation).
	Scope string
	// SecretsChecked is how many Secrets of the namespace were searched
	// for the platform key.
	SecretsChecked int
	// Probes are the requests made with the tenant key.
	Probes []Probe
	// Problems are the findings that break isolation; empty means none.
	Problems []string
}

// Check reads the tenant's Secrets with c, then probes the S3 server with
// the brokered key. It returns an error only when it could not look.
func Check(ctx context.Context, c client.Reader, t Target) (Report, error) {
	var r Report
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(t.Namespace)); err != nil {
		return r, fmt.Errorf("list Secrets of %s: %w", t.Namespace, err)
	}
	var brokered *corev1.Secret
	for i := range secrets.Items {
		s := &secrets.Items[i]
		r.SecretsChecked++
		for k, v := range s.Data {
			if string(v) == t.PlatformKeyID || bytes.Contains(v, []byte(t.PlatformSecret)) {
				r.Problems = append(r.Problems, fmt.Sprintf("Secret %s/%s key %s holds the platform key", t.Namespace, s.Name, k))
			}
		}
		if s.Name == t.Secret {
			brokered = s
		}
	}
	if brokered == nil {
		r.Problems = append(r.Problems, fmt.Sprintf("Secret %s/%s does not exist", t.Namespace, t.Secret))
		return r, nil
	}
	if _, ok := brokered.Labels[credbroker.StrategyLabel]; !ok {
		r.Problems = append(r.Problems, fmt.Sprintf("Secret %s/%s is not the broker's (no %s label)", t.Namespace, t.Secret, credbroker.StrategyLabel))
	}
	r.AccessKeyID, r.Scope = string(brokered.Data[objstore.AccessKeyIDKey]), brokered.Annotations[credbroker.ScopeAnnotation]
	s3, err := objstore.New(objstore.Location{Endpoint: t.Endpoint, ForcePathStyle: true, RootCAs: t.RootCAs}, r.AccessKeyID, string(brokered.Data[objstore.SecretAccessKeyKey]))
	if err != nil {
		return r, err
	}
	r.Probes = probe(ctx, s3, t)
	for _, p := range r.Probes {
		if p.Allowed != p.Want || p.Unanswered {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %s", p.What, p.Detail))
		}
	}
	return r, nil
}

// probe makes the requests: listing and reading its own prefix must work;
// listing another prefix or the whole bucket, writing elsewhere and
// deleting its own snapshot must be refused.
func probe(ctx context.Context, s3 *minio.Client, t Target) []Probe {
	own := t.Namespace + "/"
	ownList := list(ctx, s3, t.Bucket, own, "list "+t.Bucket+"/"+own, true)
	probes := []Probe{ownList.Probe,
		list(ctx, s3, t.Bucket, OtherPrefix, "list "+t.Bucket+"/"+OtherPrefix+" (another prefix)", false).Probe,
		list(ctx, s3, t.Bucket, "", "list "+t.Bucket+"/ (the whole bucket)", false).Probe,
		answer("write "+t.Bucket+"/"+OtherPrefix+"probe", false, putErr(ctx, s3, t.Bucket, OtherPrefix+"probe")),
	}
	if ownList.first != "" {
		obj, err := s3.GetObject(ctx, t.Bucket, ownList.first, minio.GetObjectOptions{})
		if err == nil {
			_, err = obj.Stat()
		}
		probes = append(probes,
			answer("read its own snapshot "+ownList.first, true, err),
			answer("delete its own snapshot", false, s3.RemoveObject(ctx, t.Bucket, ownList.first, minio.RemoveObjectOptions{})))
	}
	return probes
}

type listed struct {
	Probe
	first string
}

func list(ctx context.Context, s3 *minio.Client, bucket, prefix, what string, want bool) listed {
	n, first := 0, ""
	for o := range s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return listed{Probe: answer(what, want, o.Err)}
		}
		// A snapshot, not a segment of the changes captured after one.
		if first == "" && strings.HasSuffix(o.Key, ".db") {
			first = o.Key
		}
		n++
	}
	return listed{Probe: Probe{What: what, Allowed: true, Want: want, Detail: fmt.Sprintf("allowed (%d objects)", n)}, first: first}
}

func putErr(ctx context.Context, s3 *minio.Client, bucket, key string) error {
	_, err := s3.PutObject(ctx, bucket, key, strings.NewReader("keyscope"), int64(len("keyscope")), minio.PutObjectOptions{})
	return err
}

// answer turns a request's error into a Probe: nil is allowed,
// AccessDenied refused, anything else unanswered.
func answer(what string, want bool, err error) Probe {
	if err == nil {
		return Probe{What: what, Allowed: true, Want: want, Detail: "allowed"}
	}
	if code := minio.ToErrorResponse(err).Code; code == "AccessDenied" {
		return Probe{What: what, Want: want, Detail: code}
	}
	return Probe{What: what, Want: want, Detail: err.Error(), Unanswered: true}
}
