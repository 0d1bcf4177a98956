package step

import "strings"

// Object is one S3 object a tenant Job's step reads, as the driver
// verified it: where it is, the credentials Secret the Job hands the step
// its keys from (as environment variables), and the size and sha256 it
// must have. The staging, inspection and rehearsal Jobs are built from
// it.
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

// Source is o as every step reads it (its flags: ObjectArgs,
// PolicyArgs), under the driver's endpoint policy.
func (o Object) Source(allowedEndpointCIDRs []string, allowHTTP bool) Source {
	return Source{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
		Size: o.Size, SHA256: strings.TrimPrefix(o.SHA256, "sha256:"),
		AllowedEndpointCIDRs: allowedEndpointCIDRs, AllowHTTP: allowHTTP,
	}
}
