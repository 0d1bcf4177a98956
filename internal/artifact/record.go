package artifact

import (
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// Record is what a Backup keeps about the snapshot it stands for.
type Record struct {
	// SnapshotName is the EtcdSnapshot's name; the object key ends in it.
	SnapshotName string
	// SnapshotUID is the EtcdSnapshot's UID.
	SnapshotUID string
	// Destination is the rendered S3 destination the snapshot went to.
	Destination strategyv1alpha1.EtcdS3Template
	// Parameters are the BackupClass parameters the template saw.
	Parameters map[string]string
	// DeletionPolicy is the strategy's policy when the Backup was taken.
	DeletionPolicy driverv1alpha1.DeletionPolicy
	// EtcdVersion is the source cluster's etcd version, when known.
	EtcdVersion string
}

// underlying is the status.underlyingResources payload; field names and
// order match the Cozystack driver's.
type underlying struct {
	Kind        string                                   `json:"kind"`
	APIVersion  string                                   `json:"apiVersion"`
	Destination strategyv1alpha1.EtcdDestinationTemplate `json:"destination"`
	Parameters  map[string]string                        `json:"parameters,omitempty"`
}

// DriverMetadata returns the Backup's spec.driverMetadata for r.
func (r Record) DriverMetadata() map[string]string {
	d := r.Destination
	m := map[string]string{
		MetaSnapshotName:    r.SnapshotName,
		MetaBucket:          d.Bucket,
		MetaEndpoint:        d.Endpoint,
		MetaCredentialsName: d.CredentialsSecretRef.Name,
	}
	if d.Key != "" {
		m[MetaKey] = d.Key
	}
	if d.Region != "" {
		m[MetaRegion] = d.Region
	}
	if d.ForcePathStyle != nil {
		m[MetaForcePathStyle] = strconv.FormatBool(*d.ForcePathStyle)
	}
	if r.DeletionPolicy != "" {
		m[MetaDeletionPolicy] = string(r.DeletionPolicy)
	}
	if r.SnapshotUID != "" {
		m[MetaSnapshotUID] = r.SnapshotUID
	}
	if r.EtcdVersion != "" {
		m[MetaEtcdVersion] = r.EtcdVersion
	}
	return m
}

// UnderlyingResources returns the Backup's status.underlyingResources for r.
func (r Record) UnderlyingResources() (*runtime.RawExtension, error) {
	dest := r.Destination
	raw, err := json.Marshal(underlying{
		Kind:        UnderlyingKind,
		APIVersion:  UnderlyingAPIVersion,
		Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &dest},
		Parameters:  r.Parameters,
	})
	if err != nil {
		return nil, fmt.Errorf("encode underlyingResources: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}
