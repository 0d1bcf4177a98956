package pointintime

import (
	"context"
	"fmt"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// Chain is where the chain following one base Backup lives and what it
// must start from.
type Chain struct {
	// Source is the base Backup's snapshot: its bucket, endpoint and S3
	// key Secret reach the chain too.
	Source artifact.Source
	// Dir is the folder of the base's snapshot, which holds its chains
	// (the capture's --prefix); Prefix is the chain's own prefix in the
	// bucket (changelog.ChainPrefix of Dir).
	Dir, Prefix string
	// Base is the revision the chain follows and the base snapshot's
	// recorded sha256 (hex), its genesis.
	Base changelog.Base
}

// SignedRevision is the revision b's manifest records when the driver
// signed that manifest for b, else 0: a chain follows only a Backup whose
// revision the driver vouches for.
func SignedRevision(ctx context.Context, keys provenance.Keys, b *backupsv1alpha1.Backup) (int64, error) {
	m := artifact.Manifest(b)
	if m == nil || m.Revision <= 0 {
		return 0, nil
	}
	ok, err := provenance.VerifyManifest(ctx, keys, b)
	if err != nil || !ok {
		return 0, err
	}
	return m.Revision, nil
}

// ChainOf is the chain following b at revision (SignedRevision): it lives
// beside b's snapshot, under the folder holding it.
func ChainOf(b *backupsv1alpha1.Backup, revision int64) (Chain, error) {
	if revision <= 0 {
		return Chain{}, fmt.Errorf("Backup %s/%s has no signed revision for a chain to follow", b.Namespace, b.Name)
	}
	if b.Status.Artifact == nil {
		return Chain{}, fmt.Errorf("Backup %s/%s has no artifact", b.Namespace, b.Name)
	}
	src, err := artifact.Resolve(b)
	if err != nil {
		return Chain{}, err
	}
	dir := changelog.ChainDir(src.Key)
	if err := changelog.CheckPrefix(dir); err != nil {
		return Chain{}, fmt.Errorf("the base Backup's object %s has no prefix to keep the chain under: %w", src.Key, err)
	}
	sum, ok := strings.CutPrefix(b.Status.Artifact.Checksum, "sha256:")
	if !ok {
		return Chain{}, fmt.Errorf("Backup %s/%s records no sha256 for a chain to start from", b.Namespace, b.Name)
	}
	return Chain{
		Source: src,
		Dir:    dir,
		Prefix: changelog.ChainPrefix(dir, revision),
		Base:   changelog.Base{Revision: revision, SHA256: sum},
	}, nil
}
