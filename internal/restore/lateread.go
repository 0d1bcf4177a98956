package restore

import (
	"context"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
)

// readLate takes the live reads a decision needs (the credentials before
// the claim, the staging claim while the staging is judged) only on a view
// that is caught up with the driver's own writes: a reconcile on a view
// that lags them decides nothing, so it reads nothing past the cache.
func (r *Reconciler) readLate(ctx context.Context, o *observation) error {
	if err := r.readCredentials(ctx, o); err != nil {
		return err
	}
	return r.readStagingClaim(ctx, o)
}

// readCredentials checks, before the claim, that the source's credentials
// Secret is usable; preflight refuses the restore when it is not. What it
// read is held for the artifact check (heldCreds).
func (r *Reconciler) readCredentials(ctx context.Context, o *observation) error {
	if !o.credsUnread {
		return nil
	}
	o.credsUnread = false
	creds, err := s3object.ReadCredentials(ctx, r.LiveReader, o.job.Namespace, o.source.SecretName)
	if errorsIsCredentials(err) {
		// A tenant may delete the driver's key Secret; the broker writes
		// it back, as the next BackupJob would.
		if reissued, rerr := r.reissueKey(ctx, o); rerr != nil {
			return rerr
		} else if reissued {
			creds, err = s3object.ReadCredentials(ctx, r.LiveReader, o.job.Namespace, o.source.SecretName)
		}
	}
	switch {
	case err == nil:
		// The artifact check, the next step, uses what was read.
		r.creds.hold(o.job.UID, o.source.SecretName, creds, o.now)
	case errorsIsCredentials(err):
		o.credsErr = err
	default:
		return err
	}
	return nil
}
