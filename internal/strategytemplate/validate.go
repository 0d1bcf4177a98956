package strategytemplate

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

var (
	bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

// Validate checks a rendered destination before anything is created from it.
func Validate(d strategyv1alpha1.EtcdS3Template) error {
	var errs []error
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{Field: s3Path + field, Err: err})
		}
	}
	add("bucket", validateBucket(d.Bucket))
	add("endpoint", validateEndpoint(d.Endpoint))
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

func validateEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", e, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q must start with http:// or https://", e)
	case u.Host == "":
		return fmt.Errorf("%q has no host", e)
	case u.User != nil:
		return fmt.Errorf("endpoint must not carry credentials; put them in the credentials Secret")
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q must not have a query or fragment", e)
	}
	return nil
}

func validateKey(k string) error {
	if k == "" {
		return nil
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
