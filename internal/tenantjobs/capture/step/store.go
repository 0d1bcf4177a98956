package step

import (
	"fmt"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// chainStore is the chain o names, reached with the S3 keys and the
// optional CA bundle read from env, as the staging step reads them,
// under the endpoint policy.
func chainStore(o capture.Options, env func(string) string) (changelog.Store, error) {
	creds := s3object.Credentials{AccessKeyID: env(s3object.AccessKeyIDKey), SecretAccessKey: env(s3object.SecretAccessKeyKey)}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return changelog.Store{}, fmt.Errorf("%w: %s or %s is not set", s3object.ErrCredentials, s3object.AccessKeyIDKey, s3object.SecretAccessKeyKey)
	}
	policy, err := endpointpolicy.Parse(o.AllowedEndpointCIDRs)
	if err != nil {
		return changelog.Store{}, fmt.Errorf("%w: %w", stagingstep.ErrArguments, err)
	}
	if pem := env(s3object.EnvCAPEM); pem != "" {
		if policy, err = policy.WithCAPEM([]byte(pem)); err != nil {
			return changelog.Store{}, fmt.Errorf("%w: %s: %w", stagingstep.ErrArguments, s3object.EnvCAPEM, err)
		}
	}
	return changelog.Store{
		S3:     s3object.Store{Policy: policy, AllowHTTP: o.AllowHTTP},
		Creds:  creds,
		Bucket: s3object.Location{Endpoint: o.Endpoint, Bucket: o.Bucket, Region: o.Region, ForcePathStyle: o.PathStyle},
		Chain:  changelog.ChainPrefix(o.Prefix, o.Base.Revision),
		Limits: changelog.DefaultLimits,
	}, nil
}
