package s3object

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/minio/minio-go/v7"
)

// MaxDeleteBatch is the most keys DeleteUnder deletes in one call: one
// listing page and one multi-object delete request (S3's own limit for
// both is 1,000).
const MaxDeleteBatch = 1000

// DeleteUnder deletes at most max (1 to MaxDeleteBatch) objects whose key
// starts with loc.Key, which must be a folder (end in "/"), and returns
// how many it found. Whatever the bucket holds, it lists at most one page
// and never deletes a key outside the folder: a key that only looks like
// it (loc.Key without its slash, or with more after the last segment's
// name) is not under it. Callers delete a folder of any size by calling
// again until it finds none, within a bound of their own, so a folder
// someone keeps writing into cannot hold them forever.
func (s Store) DeleteUnder(ctx context.Context, loc Location, creds Credentials, max int) (int, error) {
	if !strings.HasSuffix(loc.Key, "/") || strings.Trim(loc.Key, "/") == "" {
		return 0, fmt.Errorf("delete under %s: %q is not a folder", loc, loc.Key)
	}
	if max < 1 || max > MaxDeleteBatch {
		return 0, fmt.Errorf("delete under %s: a batch of %d objects is outside 1 to %d", loc, max, MaxDeleteBatch)
	}
	mc, err := s.client(loc, creds)
	if err != nil {
		return 0, err
	}
	listCtx, stop := context.WithCancel(ctx)
	defer stop()
	var keys []string
	for obj := range mc.ListObjects(listCtx, loc.Bucket, minio.ListObjectsOptions{Prefix: loc.Key, Recursive: true, MaxKeys: max}) {
		if obj.Err != nil {
			return 0, classify(loc, obj.Err)
		}
		if !strings.HasPrefix(obj.Key, loc.Key) {
			// A server answering outside the prefix asked for is not
			// followed.
			return 0, fmt.Errorf("delete under %s: the listing returned %q, outside the folder", loc, obj.Key)
		}
		keys = append(keys, obj.Key)
		if len(keys) == max {
			break
		}
	}
	stop()
	if len(keys) == 0 {
		return 0, nil
	}
	batch := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		batch <- minio.ObjectInfo{Key: k}
	}
	close(batch)
	var errs []error
	for e := range mc.RemoveObjects(ctx, loc.Bucket, batch, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !errors.Is(classify(loc, e.Err), ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete s3://%s/%s: %w", loc.Bucket, e.ObjectName, e.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(keys), err
	}
	return len(keys), nil
}
