package provenance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// A manifest's signature binds what the inspection found to exactly one
// Backup: the MAC covers the Backup's provenance signature, the facts it
// signs (namespace, name, object, size, checksum), as the Backup says them
// now, and the manifest without its signature. A manifest copied onto another Backup, or edited,
// does not verify; nor does one whose Backup was re-signed.
const (
	manifestVersion = "m1"
	manifestDomain  = "etcd-backup-driver manifest m1\n"
)

// ErrManifestUnsigned: the Backup carries no provenance signature to bind a
// manifest to.
var ErrManifestUnsigned = errors.New("the Backup carries no provenance signature")

// SealManifest signs m for b (whose provenance signature must be set) and
// stores the signature in m.Signature.
func SealManifest(ctx context.Context, keys Keys, b *backupsv1alpha1.Backup, m *driverv1alpha1.BackupManifest) error {
	id, key, err := keys.Active(ctx)
	if err != nil {
		return fmt.Errorf("seal the manifest of Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	mac, err := manifestSum(key, b, m)
	if err != nil {
		return fmt.Errorf("seal the manifest of Backup %s/%s: %w", b.Namespace, b.Name, err)
	}
	m.Signature = manifestVersion + "." + id + "." + base64.RawURLEncoding.EncodeToString(mac)
	return nil
}

// VerifyManifest reports whether b's manifest is one the driver signed for
// b as it is now. The error is only for keys that cannot be read now.
func VerifyManifest(ctx context.Context, keys Keys, b *backupsv1alpha1.Backup) (bool, error) {
	m := artifact.Manifest(b)
	if m == nil {
		return false, nil
	}
	version, rest, _ := strings.Cut(m.Signature, ".")
	id, encoded, ok := strings.Cut(rest, ".")
	mac, decodeErr := base64.RawURLEncoding.DecodeString(encoded)
	if version != manifestVersion || !ok || !keyID.MatchString(id) || decodeErr != nil {
		return false, nil
	}
	key, err := keys.Lookup(ctx, id)
	if errors.Is(err, ErrUnknownKey) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	want, err := manifestSum(key, b, m)
	if err != nil {
		return false, nil
	}
	return hmac.Equal(mac, want), nil
}

func manifestSum(key []byte, b *backupsv1alpha1.Backup, m *driverv1alpha1.BackupManifest) ([]byte, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("provenance key is %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	sig := b.Spec.DriverMetadata[artifact.MetaProvenance]
	if sig == "" {
		return nil, ErrManifestUnsigned
	}
	f, err := FactsOf(b)
	if err != nil {
		return nil, err
	}
	facts, err := f.signedBytes(version2)
	if err != nil {
		return nil, err
	}
	unsigned := *m
	unsigned.Signature = ""
	// metav1.Time keeps whole seconds in JSON; so does the signature.
	body, err := json.Marshal(unsigned)
	if err != nil {
		return nil, fmt.Errorf("encode the manifest: %w", err)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(manifestDomain))
	for _, part := range [][]byte{[]byte(sig), facts, body} {
		h.Write(part)
		h.Write([]byte{'\n'})
	}
	return h.Sum(nil), nil
}
