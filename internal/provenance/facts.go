package provenance

import (
	"encoding/json"
	"fmt"
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

// signedBytes is the canonical message a MAC is computed over.
func (f Facts) signedBytes() ([]byte, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode provenance facts: %w", err)
	}
	return append([]byte(domain), body...), nil
}

// domain separates these MACs from any other use of the key.
const domain = "etcd-backup-driver provenance v1\n"
