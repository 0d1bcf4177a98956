package backupdeletion

import (
	"context"
	"errors"
	"fmt"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// chainBatches bounds one attempt at deleting a chain: at most this many
// batches of s3object.MaxDeleteBatch objects (a day busy enough for a
// segment every default 10 s is 8,640). A chain that still has objects
// after it (a capture still writing into it, a tenant filling its prefix)
// is reported and tried again after the controller's backoff, so nobody
// can keep a deletion listing forever.
const chainBatches = 20

// errChainNotEmpty: the chain still had objects after chainBatches.
var errChainNotEmpty = errors.New("objects are still being found under the chain's prefix")

// chainFolder is the folder holding the chain of captured changes that
// follows b, in the bucket of its snapshot loc (pointintime.ChainOf, the
// one rule for where a chain lives), and false when b has none: only a
// Backup whose manifest the driver signed with a revision has one. The
// error is only for provenance keys that cannot be read now.
func (r *Reconciler) chainFolder(ctx context.Context, b *backupsv1alpha1.Backup, loc s3object.Location) (s3object.Location, bool, error) {
	rev, err := pointintime.SignedRevision(ctx, r.Keys, b)
	if err != nil {
		return s3object.Location{}, false, fmt.Errorf("verify the manifest of Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	if rev <= 0 {
		return s3object.Location{}, false, nil
	}
	chain, err := pointintime.ChainOf(b, rev)
	if err != nil || chain.Source.Bucket != loc.Bucket || chain.Source.Key != loc.Key {
		// No capture could have started a chain for it either.
		return s3object.Location{}, false, nil
	}
	folder := loc
	folder.Key = chain.Prefix + "/"
	return folder, true, nil
}

// deleteChain deletes every object under folder, a batch at a time, and
// returns how many it deleted. Deleting an empty or missing chain
// succeeds, so a cleanup that crashed after it starts again here and
// finds nothing.
func deleteChain(ctx context.Context, d ObjectDeleter, folder s3object.Location, creds s3object.Credentials) (int, error) {
	total := 0
	for range chainBatches {
		n, err := d.DeleteUnder(ctx, folder, creds, s3object.MaxDeleteBatch)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, fmt.Errorf("%w after deleting %d", errChainNotEmpty, total)
}
