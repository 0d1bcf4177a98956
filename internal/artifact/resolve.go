package artifact

import (
	"encoding/json"
	"errors"
	"fmt"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// Errors Resolve wraps; each means the Backup cannot be restored as it is,
// so callers treat them as terminal.
var (
	// ErrUnrecognised: status.underlyingResources is not an
	// EtcdBackupSnapshot payload this driver understands.
	ErrUnrecognised = errors.New("unrecognised Etcd backup artefact")
	// ErrNoDestination: neither payload nor driverMetadata say where the
	// snapshot is.
	ErrNoDestination = errors.New("Etcd backup destination is missing")
	// ErrNoObjectKey: the exact object key cannot be determined.
	ErrNoObjectKey = errors.New("no restorable object key")
)

// Source is a Backup's snapshot as a restore (or a deletion) needs it.
type Source struct {
	Bucket         string
	Endpoint       string
	Region         string
	ForcePathStyle *bool
	SecretName     string
	// Key is the exact object key of the snapshot.
	Key string
	// Prefix is the recorded key prefix the snapshot was written under, so
	// a new snapshot (a restore's safety snapshot) can go next to it.
	Prefix string
	// SnapshotName is the EtcdSnapshot's name, when recorded.
	SnapshotName string
	// DeletionPolicy recorded when the Backup was taken; Retain if none.
	DeletionPolicy driverv1alpha1.DeletionPolicy
}

// Resolve reads where a Backup's snapshot is. It accepts Backups written by
// this driver and by the Cozystack driver: the destination comes from
// status.underlyingResources when present, otherwise from driverMetadata;
// the key from status.artifact.uri when it names the same bucket, otherwise
// from the operator's key rule applied to the recorded prefix and snapshot
// name.
func Resolve(b *backupsv1alpha1.Backup) (Source, error) {
	meta := b.Spec.DriverMetadata
	src := Source{
		SnapshotName:   meta[MetaSnapshotName],
		DeletionPolicy: driverv1alpha1.DeletionPolicy(meta[MetaDeletionPolicy]),
	}
	if src.DeletionPolicy == "" {
		src.DeletionPolicy = driverv1alpha1.DeletionPolicyRetain
	}

	prefix, err := destination(b, &src)
	if err != nil {
		return Source{}, err
	}
	src.Prefix = prefix

	if b.Status.Artifact != nil && b.Status.Artifact.URI != "" {
		if key, err := KeyFromURI(b.Status.Artifact.URI, src.Bucket); err == nil {
			src.Key = key
			return src, nil
		}
	}
	if src.SnapshotName == "" {
		return Source{}, fmt.Errorf("%w: Backup %s/%s has no usable status.artifact.uri and no %s in driverMetadata",
			ErrNoObjectKey, b.Namespace, b.Name, MetaSnapshotName)
	}
	src.Key = ObjectKey(prefix, src.SnapshotName)
	return src, nil
}

// destination fills the S3 coordinates of src and returns the key prefix.
func destination(b *backupsv1alpha1.Backup, src *Source) (string, error) {
	if u := b.Status.UnderlyingResources; u != nil && len(u.Raw) > 0 && string(u.Raw) != "null" {
		var p underlying
		if err := json.Unmarshal(u.Raw, &p); err != nil {
			return "", fmt.Errorf("%w: status.underlyingResources of Backup %s/%s is not valid JSON: %v", ErrUnrecognised, b.Namespace, b.Name, err)
		}
		if p.Kind != UnderlyingKind || p.APIVersion != UnderlyingAPIVersion {
			return "", fmt.Errorf("%w: status.underlyingResources of Backup %s/%s is %s %s, want %s %s",
				ErrUnrecognised, b.Namespace, b.Name, p.APIVersion, p.Kind, UnderlyingAPIVersion, UnderlyingKind)
		}
		s3 := p.Destination.S3
		if s3 == nil || s3.Bucket == "" || s3.Endpoint == "" || s3.CredentialsSecretRef.Name == "" {
			return "", fmt.Errorf("%w: status.underlyingResources of Backup %s/%s lacks destination.s3 bucket, endpoint or credentialsSecretRef",
				ErrNoDestination, b.Namespace, b.Name)
		}
		src.Bucket, src.Endpoint, src.Region = s3.Bucket, s3.Endpoint, s3.Region
		src.ForcePathStyle, src.SecretName = s3.ForcePathStyle, s3.CredentialsSecretRef.Name
		return s3.Key, nil
	}

	meta := b.Spec.DriverMetadata
	src.Bucket, src.Endpoint, src.SecretName = meta[MetaBucket], meta[MetaEndpoint], meta[MetaCredentialsName]
	if src.Bucket == "" || src.Endpoint == "" || src.SecretName == "" {
		return "", fmt.Errorf("%w: Backup %s/%s has no status.underlyingResources and its driverMetadata lacks %s, %s or %s",
			ErrNoDestination, b.Namespace, b.Name, MetaBucket, MetaEndpoint, MetaCredentialsName)
	}
	src.Region = meta[MetaRegion]
	if v, ok := meta[MetaForcePathStyle]; ok {
		fps := v == "true"
		src.ForcePathStyle = &fps
	}
	return meta[MetaKey], nil
}
