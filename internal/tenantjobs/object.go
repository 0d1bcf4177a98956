package tenantjobs

import (
	"strings"

	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Object is one S3 object a tenant Job reads, as the driver verified it:
// where it is, the credentials Secret to read it with, and the size and
// sha256 it must have.
type Object struct {
	Endpoint   string
	Bucket     string
	Key        string
	Region     string
	PathStyle  bool
	SecretName string
	// Size and SHA256 (hex, or "sha256:<hex>") pin the bytes.
	Size   int64
	SHA256 string
}

// Source is o as every step reads it (the staging step's flags), under
// the driver's endpoint policy.
func (o Object) Source(allowedEndpointCIDRs []string, allowHTTP bool) stagingstep.Source {
	return stagingstep.Source{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
		Size: o.Size, SHA256: strings.TrimPrefix(o.SHA256, "sha256:"),
		AllowedEndpointCIDRs: allowedEndpointCIDRs, AllowHTTP: allowHTTP,
	}
}
