package s3object

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keys of the credentials Secret, the ones the etcd-operator's agents read.
// A tenant Job hands them to its step (etcd-stage) as environment
// variables of the same names.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// EnvCAPEM names the environment variable that hands a step the driver's
// extra PEM bundle of S3 CAs (public certificates), when there is one.
const EnvCAPEM = "S3_CA_PEM"

// ErrCredentials marks a Secret that is missing or lacks a key: waiting
// will not help unless someone fixes it.
var ErrCredentials = errors.New("S3 credentials unavailable")

// ErrSecretGone marks (together with ErrCredentials) a credentials Secret
// that does not exist, as opposed to one that lacks a key.
var ErrSecretGone = errors.New("credentials Secret not found")

// Credentials are S3 access keys. They are never logged or recorded.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// ReadCredentials reads the named Secret live. A missing Secret or key
// wraps ErrCredentials; anything else is a transient read error.
func ReadCredentials(ctx context.Context, r client.Reader, namespace, name string) (Credentials, error) {
	var s corev1.Secret
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return Credentials{}, fmt.Errorf("%w: %w: Secret %s/%s", ErrCredentials, ErrSecretGone, namespace, name)
		}
		return Credentials{}, fmt.Errorf("read credentials Secret %s/%s: %w", namespace, name, err)
	}
	c := Credentials{AccessKeyID: string(s.Data[AccessKeyIDKey]), SecretAccessKey: string(s.Data[SecretAccessKeyKey])}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		// Name the keys, never their values.
		return Credentials{}, fmt.Errorf("%w: Secret %s/%s lacks %s or %s", ErrCredentials, namespace, name, AccessKeyIDKey, SecretAccessKeyKey)
	}
	return c, nil
}
