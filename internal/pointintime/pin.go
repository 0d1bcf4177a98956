package pointintime

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/signedannotation"
)

// PinAnnotation holds, on a RestoreJob that restores to a point, the base
// the driver chose for it (Pin), signed and bound to the job: chosen
// once, before the restore takes its claim, so neither a driver restart
// nor a Backup that appears or changes later moves it.
const PinAnnotation = "etcd-backup-driver.cozystack.io/point-in-time-base"

// MaxPinBytes bounds the annotation.
const MaxPinBytes = 2048

// ErrPinLost: the restore's pinned base cannot be used (its record is
// gone or not the driver's after the restore started, the point asked
// for changed, or the pinned Backup is gone).
var ErrPinLost = errors.New("the pinned base of the restore to a point is lost")

// Pin is the record of a restore's base.
type Pin struct {
	// Point is the point asked for (spec.options.pointInTime) when the
	// base was chosen.
	Point string `json:"point"`
	// Backup and BackupUID are the base Backup.
	Backup    string    `json:"backup"`
	BackupUID types.UID `json:"backupUID"`
	// Chain is the chain's prefix and Base what it follows (Chain).
	Chain string         `json:"chain"`
	Base  changelog.Base `json:"base"`
	// Signature is the driver's mark over the rest (provenance.Mark).
	Signature string `json:"signature,omitempty"`
}

// SignatureField is where the record's signature goes.
func (p *Pin) SignatureField() *string { return &p.Signature }

var pinForm = signedannotation.Form{Annotation: PinAnnotation, MaxBytes: MaxPinBytes, Domain: "point-in-time base"}

// PinOf records base as the base of a restore to point.
func PinOf(point string, base Base) Pin {
	return Pin{Point: point, Backup: base.Backup.Name, BackupUID: base.Backup.UID, Chain: base.Chain.Prefix, Base: base.Chain.Base}
}

// EncodePin is p as the annotation's value on rj, signed.
func EncodePin(ctx context.Context, keys provenance.Keys, rj *backupsv1alpha1.RestoreJob, p Pin) (string, error) {
	return signedannotation.Encode[Pin](ctx, keys, pinForm, rj, p)
}

// Resolution is where a restore to a point stands with its base.
type Resolution struct {
	// Base is the base Backup (nil with Refusal).
	Base *backupsv1alpha1.Backup
	// Pin is the base's record; Pinned says rj carries it already (else
	// it is to be written: EncodePin).
	Pin    Pin
	Pinned bool
	// Refusal is why the restore cannot go on (ErrNoBase, ErrPinLost),
	// for the RestoreJob's status.
	Refusal error
}

// Resolve is the base of rj, a restore to point t (spec.options'
// pointInTime, read as t) of the application of Backup of: the pinned
// one when rj carries the pin, else (only while started is false) the
// one Choose picks among the Backups of rj's namespace, to be pinned.
// The error is for what a retry may mend (the API server, the keys).
func Resolve(ctx context.Context, c client.Reader, keys provenance.Keys, rj *backupsv1alpha1.RestoreJob, of *backupsv1alpha1.Backup,
	point string, t changelog.Target, started bool) (Resolution, error) {
	pin, ok, ignored, err := signedannotation.Read[Pin](ctx, keys, pinForm, rj)
	switch {
	case err != nil:
		return Resolution{}, err
	case ignored != "":
		return Resolution{Refusal: fmt.Errorf("%w: annotation %s is not the driver's record (%s)", ErrPinLost, PinAnnotation, ignored)}, nil
	case ok && pin.Point != point:
		return Resolution{Refusal: fmt.Errorf("%w: spec.options.pointInTime is %q, the base was chosen for %q; create a new RestoreJob for another point",
			ErrPinLost, point, pin.Point)}, nil
	case ok:
		return pinned(ctx, c, rj.Namespace, pin)
	case started:
		return Resolution{Refusal: fmt.Errorf("%w: annotation %s, written before the restore started, is gone", ErrPinLost, PinAnnotation)}, nil
	}
	var list backupsv1alpha1.BackupList
	if err := c.List(ctx, &list, client.InNamespace(rj.Namespace)); err != nil {
		return Resolution{}, fmt.Errorf("list Backups in %s: %w", rj.Namespace, err)
	}
	base, err := Choose(ctx, keys, list.Items, of, t)
	if errors.Is(err, ErrNoBase) {
		return Resolution{Refusal: err}, nil
	}
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Base: base.Backup, Pin: PinOf(point, base)}, nil
}

// pinned reads the Backup pin names: the same object (by UID), or the
// pin is lost.
func pinned(ctx context.Context, c client.Reader, ns string, pin Pin) (Resolution, error) {
	var b backupsv1alpha1.Backup
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pin.Backup}, &b)
	if apierrors.IsNotFound(err) || (err == nil && b.UID != pin.BackupUID) {
		return Resolution{Refusal: fmt.Errorf("%w: Backup %s/%s, chosen as the base, is gone", ErrPinLost, ns, pin.Backup)}, nil
	}
	if err != nil {
		return Resolution{}, fmt.Errorf("read Backup %s/%s: %w", ns, pin.Backup, err)
	}
	return Resolution{Base: &b, Pin: pin, Pinned: true}, nil
}
