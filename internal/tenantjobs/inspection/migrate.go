package inspection

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Earlier releases kept a Backup's manifest and last rehearsal in fields
// of the driver's own Backup CRD, status.manifest and status.lastRehearsal,
// which Cozystack's CRD prunes. A cluster upgraded in place keeps that CRD
// (Helm never upgrades a chart's crds/), and its Backups keep the fields;
// the typed Backup no longer has them. The first time the driver sees such
// a Backup it moves them into status.underlyingResources (a manifest that
// verifies as it was signed, so the Backup is not inspected again),
// removes the old fields in the same write, and says so in an Event.

// legacyFields are the earlier CRD's fields, each with the member of the
// payload it moves to.
var legacyFields = []struct{ field, member string }{
	{"manifest", driverv1alpha1.BackupRecordManifest},
	{"lastRehearsal", driverv1alpha1.BackupRecordLastRehearsal},
}

// legacyChecked remembers the Backups whose earlier fields were read, so
// each is read once per run of the driver.
type legacyChecked struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

func (c *legacyChecked) seen(uid types.UID) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.uids[uid]
	return ok
}

func (c *legacyChecked) add(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uids == nil {
		c.uids = map[types.UID]struct{}{}
	}
	c.uids[uid] = struct{}{}
}

// migrate moves b's records out of the earlier CRD's fields, once; it
// reports whether it wrote (b is then stale). A Backup whose payload
// already holds both records has nothing to move.
func (r *Reconciler) migrate(ctx context.Context, b *backupsv1alpha1.Backup) (bool, error) {
	if artifact.Manifest(b) != nil && artifact.LastRehearsal(b) != nil || r.legacy.seen(b.UID) {
		return false, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(backupsv1alpha1.GroupVersion.WithKind("Backup"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), u); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read Backup %s/%s for records of the earlier CRD: %w", b.Namespace, b.Name, err)
	}
	if u.GetUID() != b.UID {
		return false, nil // another Backup of the same name: its own reconcile reads it
	}
	patch, moved, err := legacyPatch(ctx, r.Keys, u)
	if err != nil {
		return false, fmt.Errorf("move the records of Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	if len(moved) == 0 {
		r.legacy.add(b.UID)
		return false, nil
	}
	if err := r.Client.Patch(ctx, b, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("move the records of Backup %s/%s to status.underlyingResources: %w", b.Namespace, b.Name, err)
	}
	r.legacy.add(b.UID)
	msg := "records of the driver's earlier Backup CRD: " + strings.Join(moved, "; ") + "; the old fields are no longer read"
	log.FromContext(ctx).Info("moved a Backup's records to status.underlyingResources", "moved", moved)
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, backupsv1alpha1.BackupReasonRecordsMigrated, "Migrate", "%s", textlimit.Note(msg))
	return true, nil
}

// legacyPatch is the merge patch that moves u's earlier fields into its
// payload (where the payload lacks that record: one written since is
// newer) and removes them, with u's resourceVersion as the optimistic
// lock; moved says what it did with each field ("status.manifest to
// status.underlyingResources.manifest"...). A manifest moves only when it
// verifies (the signature binds it to the Backup, not to where it is
// kept, so it moves as it was signed and verifies there); one that does
// not (edited, or copied from another Backup) is removed and not moved,
// so the Backup is inspected again: the driver never signs what it did not
// make. A field whose value is not the record's shape is removed and not
// moved. The error is only for keys that cannot be read now.
func legacyPatch(ctx context.Context, keys provenance.Keys, u *unstructured.Unstructured) ([]byte, []string, error) {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	var b backupsv1alpha1.Backup
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return nil, nil, fmt.Errorf("decode Backup: %w", err)
	}
	remove := map[string]any{}
	var moved []string
	for _, f := range legacyFields {
		old, ok := status[f.field]
		if !ok {
			continue
		}
		remove[f.field] = nil
		raw, err := json.Marshal(old)
		if err != nil {
			moved = append(moved, "status."+f.field+" removed (not a record)")
			continue
		}
		what, err := moveRecord(ctx, keys, &b, f.member, raw)
		if err != nil {
			return nil, nil, err
		}
		moved = append(moved, "status."+f.field+" "+what)
	}
	if len(moved) == 0 {
		return nil, nil, nil
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": u.GetResourceVersion()},
		"status":   remove,
	}
	if b.Status.UnderlyingResources != nil {
		remove["underlyingResources"] = json.RawMessage(b.Status.UnderlyingResources.Raw)
	}
	data, err := json.Marshal(patch)
	return data, moved, err
}

// moveRecord records raw as b's member unless b's payload has it already,
// and says what it did.
func moveRecord(ctx context.Context, keys provenance.Keys, b *backupsv1alpha1.Backup, member string, raw []byte) (string, error) {
	to := "moved to status.underlyingResources." + member
	switch member {
	case driverv1alpha1.BackupRecordManifest:
		var m driverv1alpha1.BackupManifest
		if json.Unmarshal(raw, &m) != nil {
			return "removed (not a manifest)", nil
		}
		if artifact.Manifest(b) != nil {
			return "removed (status.underlyingResources has a newer manifest)", nil
		}
		moved := b.DeepCopy()
		if err := artifact.SetManifest(moved, &m); err != nil {
			return "", err
		}
		ok, err := provenance.VerifyManifest(ctx, keys, moved)
		if err != nil {
			return "", err
		}
		if !ok {
			return "removed (it does not verify: the Backup is inspected again)", nil
		}
		*b = *moved
		return to, nil
	case driverv1alpha1.BackupRecordLastRehearsal:
		var rec driverv1alpha1.RehearsalRecord
		if json.Unmarshal(raw, &rec) != nil {
			return "removed (not a rehearsal record)", nil
		}
		if artifact.LastRehearsal(b) != nil {
			return "removed (status.underlyingResources has a newer last rehearsal)", nil
		}
		if err := artifact.SetLastRehearsal(b, &rec); err != nil {
			return "", err
		}
		return to, nil
	}
	return "removed", nil
}
