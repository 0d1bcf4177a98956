package artifact

import (
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manifest"
)

// A Backup's status.underlyingResources is the one place its records live:
// Cozystack's Backup CRD serves that object with its unknown fields kept
// and nothing else of the driver's. The peer's EtcdBackupSnapshot (kind,
// apiVersion, destination, parameters: underlying, record.go) is what both
// drivers restore from; the driver's own records (driverv1alpha1's
// BackupRecord* members: the manifest, the last rehearsal, an inspection
// to try again) sit beside it. The peer decodes the payload with
// json.Unmarshal into its fields only, so it reads past them.
//
// Every record is read on its own: one a tenant spoiled (the whole Backup
// is the tenant's to write) reads as absent and hides neither the other
// records nor the peer's fields. Every write changes one member and keeps
// every other one as it was written, so a merge patch of the Backup
// carries that member alone.

// ErrNoPayload: the Backup has no status.underlyingResources object to
// keep a record in.
var ErrNoPayload = errors.New("the Backup has no status.underlyingResources object")

// Manifest is the manifest recorded in b's payload, or nil when there is
// none or it is not one an inspection makes (manifest.CheckKeyspaces). It
// says nothing about who wrote it: provenance.VerifyManifest does.
func Manifest(b *backupsv1alpha1.Backup) *driverv1alpha1.BackupManifest {
	m := readRecord[driverv1alpha1.BackupManifest](b, driverv1alpha1.BackupRecordManifest)
	if m == nil || manifest.CheckKeyspaces(m.Keyspaces) != nil {
		return nil
	}
	return m
}

// LastRehearsal is the last rehearsal recorded in b's payload, or nil.
func LastRehearsal(b *backupsv1alpha1.Backup) *driverv1alpha1.RehearsalRecord {
	return readRecord[driverv1alpha1.RehearsalRecord](b, driverv1alpha1.BackupRecordLastRehearsal)
}

// InspectionRetry is the inspection retry recorded in b's payload, or
// nil.
func InspectionRetry(b *backupsv1alpha1.Backup) *driverv1alpha1.InspectionRetry {
	return readRecord[driverv1alpha1.InspectionRetry](b, driverv1alpha1.BackupRecordInspectionRetry)
}

// SetInspectionRetry records r in b's payload (nil removes it), changing
// nothing else of b.
func SetInspectionRetry(b *backupsv1alpha1.Backup, r *driverv1alpha1.InspectionRetry) error {
	return setRecord(b, driverv1alpha1.BackupRecordInspectionRetry, r)
}

// SetManifest records m in b's payload (nil removes it), changing nothing
// else of b.
func SetManifest(b *backupsv1alpha1.Backup, m *driverv1alpha1.BackupManifest) error {
	return setRecord(b, driverv1alpha1.BackupRecordManifest, m)
}

// SetLastRehearsal records r in b's payload (nil removes it), changing
// nothing else of b.
func SetLastRehearsal(b *backupsv1alpha1.Backup, r *driverv1alpha1.RehearsalRecord) error {
	return setRecord(b, driverv1alpha1.BackupRecordLastRehearsal, r)
}

// readRecord decodes the payload's member name into a T, or returns nil
// when the payload or the member is missing or does not decode.
func readRecord[T any](b *backupsv1alpha1.Backup, name string) *T {
	members, err := membersOf(b.Status.UnderlyingResources)
	if err != nil || members == nil {
		return nil
	}
	raw, ok := members[name]
	if !ok || string(raw) == "null" {
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return &v
}

// setRecord sets the payload's member name to v's JSON, or removes it when
// v is a nil pointer.
func setRecord[T any](b *backupsv1alpha1.Backup, name string, v *T) error {
	members, err := membersOf(b.Status.UnderlyingResources)
	if err != nil {
		return fmt.Errorf("record %s on Backup %s/%s: %w", name, b.Namespace, b.Name, err)
	}
	if members == nil {
		if v == nil {
			return nil
		}
		return fmt.Errorf("record %s on Backup %s/%s: %w", name, b.Namespace, b.Name, ErrNoPayload)
	}
	if v == nil {
		delete(members, name)
	} else {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		members[name] = raw
	}
	raw, err := json.Marshal(members)
	if err != nil {
		return fmt.Errorf("encode status.underlyingResources: %w", err)
	}
	b.Status.UnderlyingResources = &runtime.RawExtension{Raw: raw}
	return nil
}

// membersOf splits a payload into its members as written; nil when there
// is no payload.
func membersOf(u *runtime.RawExtension) (map[string]json.RawMessage, error) {
	if u == nil || len(u.Raw) == 0 || string(u.Raw) == "null" {
		return nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(u.Raw, &members); err != nil {
		return nil, fmt.Errorf("status.underlyingResources is not a JSON object: %w", err)
	}
	if members == nil {
		return nil, nil
	}
	return members, nil
}
