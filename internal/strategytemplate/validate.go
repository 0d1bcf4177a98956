package strategytemplate

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

// MaxObjectKey is S3's limit on an object key. The operator writes
// <prefix><snapshot>.db with a snapshot name of at most 63 characters, so a
// prefix may use what is left.
const (
	MaxObjectKey = 1024
	MaxKeyPrefix = MaxObjectKey - 63 - len(".db")
)

// Options are the checks a rendered destination must pass besides its shape.
type Options struct {
	// Policy decides which endpoints may be named.
	Policy endpointpolicy.Policy
	// AllowHTTP is the opt-in to a plain-http endpoint (the allowHTTPEndpoint
	// of the strategy's StrategyPolicy).
	AllowHTTP bool
}

var (
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// Validate checks a rendered destination before anything is created from it.
func Validate(d strategyv1alpha1.EtcdS3Template, o Options) error {
	var errs []error
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{Field: s3Path + field, Err: err})
		}
	}
	add("bucket", validateBucket(d.Bucket))
	add("endpoint", o.Policy.CheckURL(d.Endpoint, o.AllowHTTP))
	add("key", validateKey(d.Key))
	if d.Region != "" && !regionName.MatchString(d.Region) {
		add("region", fmt.Errorf("%q is not a region name (lowercase letters, digits and '-')", d.Region))
	}
	if msgs := validation.IsDNS1123Subdomain(d.CredentialsSecretRef.Name); len(msgs) > 0 {
		add("credentialsSecretRef.name", fmt.Errorf("%q is not a Secret name: %s", d.CredentialsSecretRef.Name, strings.Join(msgs, "; ")))
	}
	return errors.Join(errs...)
}

func validateBucket(b string) error {
	switch {
	case !bucketName.MatchString(b):
		return fmt.Errorf("%q is not an S3 bucket name (3-63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit)", b)
	case strings.Contains(b, ".."):
		return fmt.Errorf("%q is not an S3 bucket name (no adjacent dots)", b)
	case net.ParseIP(b) != nil:
		return fmt.Errorf("%q is not an S3 bucket name (it is an IP address)", b)
	}
	return nil
}

func validateKey(k string) error {
	if k == "" {
		return nil
	}
	if len(k) > MaxKeyPrefix {
		return fmt.Errorf("is %d bytes; a key prefix may have at most %d, so that <prefix><snapshot>.db fits S3's %d-byte key limit", len(k), MaxKeyPrefix, MaxObjectKey)
	}
	if strings.HasPrefix(k, "/") {
		return fmt.Errorf("%q must not start with '/'", k)
	}
	for _, seg := range strings.Split(k, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("%q must not contain '.' or '..' segments", k)
		}
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q must not contain control characters", k)
		}
	}
	return nil
}
