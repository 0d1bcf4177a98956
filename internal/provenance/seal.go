package provenance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// Seal signs b's facts and records the signature in its driverMetadata. Call
// it on the finished object, just before it is created.
func Seal(ctx context.Context, keys Keys, b *backupsv1alpha1.Backup) error {
	f, err := FactsOf(b)
	if err != nil {
		return fmt.Errorf("seal Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	id, key, err := keys.Active(ctx)
	if err != nil {
		return fmt.Errorf("seal Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	mac, err := sum(key, f, version2)
	if err != nil {
		return err
	}
	if b.Spec.DriverMetadata == nil {
		b.Spec.DriverMetadata = map[string]string{}
	}
	b.Spec.DriverMetadata[artifact.MetaProvenance] = version2 + "." + id + "." + base64.RawURLEncoding.EncodeToString(mac)
	return nil
}

func sum(key []byte, f Facts, version string) ([]byte, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("provenance key is %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	msg, err := f.signedBytes(version)
	if err != nil {
		return nil, err
	}
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil), nil
}

// Why a Backup is not verified.
const (
	// ReasonUnsigned: the Backup carries no signature (hand-written, taken
	// by another driver, or by a release of this one before signatures).
	ReasonUnsigned = "Unsigned"
	// ReasonAltered: the signature does not match what the Backup says now.
	ReasonAltered = "Altered"
	// ReasonUnknownKey: signed with a key the keyring does not hold.
	ReasonUnknownKey = "UnknownKey"
	// ReasonUnresolvable: the Backup does not say where its snapshot is.
	ReasonUnresolvable = "Unresolvable"
)

// Verdict is the result of verifying a Backup.
type Verdict struct {
	// Verified is true when the signature matches the facts.
	Verified bool
	// Facts are what the Backup says (trustworthy only when Verified).
	// Facts.Prefix of a verified Backup is always a signed fact: the
	// signed prefix (v2), or the directory of the signed key (v1).
	Facts Facts
	// Version is the signature's version when Verified ("v1" or "v2").
	Version string
	// Reason and Message say why it is not verified.
	Reason  string
	Message string
}

// TakenAt is the verified time the Backup was taken (zero when unverified).
func (v Verdict) TakenAt() time.Time {
	if !v.Verified {
		return time.Time{}
	}
	return v.Facts.TakenAtTime()
}

// Verify checks b's signature. The error is only for keys that cannot be
// read now (retry); every verdict about b itself is in the Verdict.
func Verify(ctx context.Context, keys Keys, b *backupsv1alpha1.Backup) (Verdict, error) {
	f, err := FactsOf(b)
	if err != nil {
		return Verdict{Reason: ReasonUnresolvable, Message: err.Error()}, nil
	}
	v := Verdict{Facts: f}
	sig := b.Spec.DriverMetadata[artifact.MetaProvenance]
	if sig == "" {
		v.Reason, v.Message = ReasonUnsigned, "the Backup carries no signature of this driver: it was written by hand, by another driver, or before signatures existed"
		return v, nil
	}
	version, rest, _ := strings.Cut(sig, ".")
	id, encoded, ok := strings.Cut(rest, ".")
	mac, decodeErr := base64.RawURLEncoding.DecodeString(encoded)
	if version != version1 && version != version2 || !ok || !keyID.MatchString(id) || decodeErr != nil {
		v.Reason, v.Message = ReasonAltered, "the Backup's signature is malformed"
		return v, nil
	}
	key, err := keys.Lookup(ctx, id)
	if errors.Is(err, ErrUnknownKey) {
		v.Reason, v.Message = ReasonUnknownKey, fmt.Sprintf("the Backup is signed with key %q, which the driver does not hold", id)
		return v, nil
	}
	if err != nil {
		return Verdict{}, err
	}
	want, err := sum(key, f, version)
	if err != nil {
		return Verdict{}, err
	}
	if !hmac.Equal(mac, want) {
		v.Reason, v.Message = ReasonAltered, "what the Backup records no longer matches what the driver signed: it was edited"
		return v, nil
	}
	v.Verified, v.Version = true, version
	if version == version1 {
		// A v1 signature does not cover the recorded prefix: what is
		// signed about where the application's snapshots go is the
		// directory of the signed key.
		v.Facts.Prefix = f.KeyDir()
	}
	return v, nil
}
