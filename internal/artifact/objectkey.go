package artifact

import (
	"fmt"
	"strings"
)

// ObjectKey is the key the etcd-operator's snapshot agent writes a snapshot
// named name to under prefix: <name>.db for an empty prefix, <prefix><name>.db
// when the prefix ends with "/", and <prefix>/<name>.db otherwise. It follows
// the writer exactly (no trimming), so the result is the object that exists.
func ObjectKey(prefix, name string) string {
	switch {
	case prefix == "":
		return name + ".db"
	case strings.HasSuffix(prefix, "/"):
		return prefix + name + ".db"
	default:
		return prefix + "/" + name + ".db"
	}
}

// URI is the s3:// URI of key in bucket, as the operator reports it.
func URI(bucket, key string) string {
	return "s3://" + bucket + "/" + key
}

// KeyFromURI returns the object key of an s3://<bucket>/<key> URI, verbatim.
// It fails when the URI is malformed, has no key, or names another bucket.
func KeyFromURI(uri, bucket string) (string, error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", fmt.Errorf("artifact URI %q is not an s3:// URI", uri)
	}
	gotBucket, key, ok := strings.Cut(rest, "/")
	if !ok || gotBucket == "" || key == "" {
		return "", fmt.Errorf("artifact URI %q has no bucket or no object key", uri)
	}
	if gotBucket != bucket {
		return "", fmt.Errorf("artifact URI %q names bucket %q, not the recorded bucket %q", uri, gotBucket, bucket)
	}
	return key, nil
}
