package step

import (
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// chainStore is the chain o names, reached as every step reaches S3
// (stagingstep.StoreFromEnv: the keys and the optional CA bundle from env,
// under the endpoint policy).
func chainStore(o capture.Options, env func(string) string) (changelog.Store, error) {
	store, creds, err := stagingstep.StoreFromEnv(o.AllowedEndpointCIDRs, o.AllowHTTP, env)
	if err != nil {
		return changelog.Store{}, err
	}
	return changelog.Store{
		S3:     store,
		Creds:  creds,
		Bucket: s3object.Location{Endpoint: o.Endpoint, Bucket: o.Bucket, Region: o.Region, ForcePathStyle: o.PathStyle},
		Chain:  changelog.ChainPrefix(o.Prefix, o.Base.Revision),
		Limits: changelog.DefaultLimits,
	}, nil
}
