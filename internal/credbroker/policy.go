package credbroker

import "encoding/json"

// Policy is the S3 (IAM-language) policy of a tenant identity: list the
// bucket only under the prefix, get and put objects under it, abort its own
// multipart uploads, read the bucket's location. Nothing else: no delete,
// no other prefix, no bucket or admin action. MinIO, Ceph RGW and AWS IAM
// all read this language.
func Policy(s Scope) json.RawMessage {
	bucket := "arn:aws:s3:::" + s.Bucket
	objects := bucket + "/" + s.Prefix + "*"
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{
				"Effect":    "Allow",
				"Action":    []string{"s3:ListBucket"},
				"Resource":  []string{bucket},
				"Condition": map[string]any{"StringLike": map[string]any{"s3:prefix": []string{s.Prefix + "*"}}},
			},
			{
				"Effect":   "Allow",
				"Action":   []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
				"Resource": []string{objects},
			},
			{
				"Effect":   "Allow",
				"Action":   []string{"s3:GetBucketLocation"},
				"Resource": []string{bucket},
			},
		},
	}
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return out
}
