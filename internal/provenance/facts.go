package provenance

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// Facts are what a signature covers. Field order is the canonical order of
// the signed encoding; never reorder or rename, only append (with a new
// version).
type Facts struct {
	Namespace      string `json:"namespace"`
	Backup         string `json:"backup"`
	Application    string `json:"application"`
	Plan           string `json:"plan"`
	Bucket         string `json:"bucket"`
	Endpoint       string `json:"endpoint"`
	Region         string `json:"region"`
	ForcePathStyle bool   `json:"forcePathStyle"`
	Key            string `json:"key"`
	SecretName     string `json:"secretName"`
	DeletionPolicy string `json:"deletionPolicy"`
	SnapshotName   string `json:"snapshotName"`
	SnapshotUID    string `json:"snapshotUID"`
	TakenAt        string `json:"takenAt"`
	SizeBytes      int64  `json:"sizeBytes"`
	Checksum       string `json:"checksum"`
	EtcdVersion    string `json:"etcdVersion"`
	// Prefix is the recorded key prefix, the directory a new snapshot of
	// the application goes to (a restore's safety snapshot). Signed from
	// v2 on; a v1 signature does not cover it, so Verify replaces it with
	// the directory of the signed Key (see Verify).
	Prefix string `json:"prefix,omitempty"`
}

// FactsOf reads the facts of b the way the restore and deletion paths read
// them. It fails when b does not say where its snapshot is.
func FactsOf(b *backupsv1alpha1.Backup) (Facts, error) {
	src, err := artifact.Resolve(b)
	if err != nil {
		return Facts{}, err
	}
	rec := artifact.RecordedOf(b)
	f := Facts{
		Namespace:      b.Namespace,
		Backup:         b.Name,
		Application:    b.Spec.ApplicationRef.Name,
		Bucket:         src.Bucket,
		Endpoint:       src.Endpoint,
		Region:         src.Region,
		ForcePathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle,
		Key:            src.Key,
		SecretName:     src.SecretName,
		DeletionPolicy: string(rec.DeletionPolicy),
		SnapshotName:   rec.SnapshotName,
		SnapshotUID:    rec.SnapshotUID,
		// metav1.Time keeps whole seconds; so does the signature.
		TakenAt:     b.Spec.TakenAt.UTC().Format(time.RFC3339),
		EtcdVersion: rec.EtcdVersion,
		Prefix:      src.Prefix,
	}
	if b.Spec.PlanRef != nil {
		f.Plan = b.Spec.PlanRef.Name
	}
	if a := b.Status.Artifact; a != nil {
		f.SizeBytes, f.Checksum = a.SizeBytes, a.Checksum
	}
	return f, nil
}

// TakenAtTime is TakenAt parsed.
func (f Facts) TakenAtTime() time.Time {
	t, _ := time.Parse(time.RFC3339, f.TakenAt)
	return t
}

// KeyDir is the directory of the signed object key: everything up to and
// including its last "/", or "" for a key at the bucket's root. A snapshot
// written under KeyDir lands next to the signed object.
func (f Facts) KeyDir() string {
	return f.Key[:strings.LastIndex(f.Key, "/")+1]
}

// Signature versions. v1 covers every field but Prefix; v2 covers Prefix
// too. Seal writes v2; Verify accepts both.
const (
	version1 = "v1"
	version2 = "v2"
)

// signedBytes is the canonical message a MAC of version is computed over.
func (f Facts) signedBytes(version string) ([]byte, error) {
	var domain string
	switch version {
	case version1:
		// The v1 encoding had no prefix field; omitempty drops it.
		f.Prefix = ""
		domain = domainV1
	case version2:
		domain = domainV2
	default:
		return nil, fmt.Errorf("unknown provenance version %q", version)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode provenance facts: %w", err)
	}
	return append([]byte(domain), body...), nil
}

// domainV1 and domainV2 separate these MACs from any other use of the key,
// and the versions from each other.
const (
	domainV1 = "etcd-backup-driver provenance v1\n"
	domainV2 = "etcd-backup-driver provenance v2\n"
)
