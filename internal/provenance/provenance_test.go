package provenance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

var testKeys = StaticKeys{ActiveID: "k2", Keys: map[string][]byte{
	"k1": []byte(strings.Repeat("1", 32)),
	"k2": []byte(strings.Repeat("2", 32)),
}}

func sealed(t *testing.T, keys Keys) *backupsv1alpha1.Backup {
	t.Helper()
	fps := true
	rec := artifact.Record{SnapshotName: "job-abc", SnapshotUID: "uid-1", EtcdVersion: "3.6.11",
		DeletionPolicy: driverv1alpha1.DeletionPolicyDelete,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://s3.example.com", Key: "tenant-a/etcd/",
			ForcePathStyle: &fps, CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "nightly"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			PlanRef:        &backupsv1alpha1.LocalObjectReference{Name: "daily"},
			TakenAt:        metav1.NewTime(time.Date(2026, 6, 1, 2, 0, 0, 0, time.UTC)),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/tenant-a/etcd/job-abc.db", SizeBytes: 1234, Checksum: "sha256:aa"}},
	}
	if err := Seal(context.Background(), keys, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		edit   func(b *backupsv1alpha1.Backup)
		sign   Keys // default testKeys
		verify Keys // default testKeys
		reason string
	}{
		{name: "as sealed", edit: func(*backupsv1alpha1.Backup) {}},
		{name: "old key still verifies", sign: StaticKeys{ActiveID: "k1", Keys: testKeys.Keys}, edit: func(*backupsv1alpha1.Backup) {}},
		{name: "unrelated label edit", edit: func(b *backupsv1alpha1.Backup) { b.Labels = map[string]string{"x": "y"} }},
		{name: "renamed", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Name = "copy" }},
		{name: "moved namespace", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Namespace = "tenant-b" }},
		{name: "other application", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Spec.ApplicationRef.Name = "other" }},
		{name: "other plan", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Spec.PlanRef.Name = "weekly" }},
		{name: "time moved", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Spec.TakenAt = metav1.NewTime(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
		}},
		{name: "object key via artifact", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Status.Artifact.URI = "s3://bkt/tenant-b/etcd/victim.db"
		}},
		{name: "destination via payload", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Status.UnderlyingResources = nil
			b.Spec.DriverMetadata[artifact.MetaEndpoint] = "https://169.254.169.254"
		}},
		{name: "deletion policy", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Spec.DriverMetadata[artifact.MetaDeletionPolicy] = "Retain"
		}},
		{name: "etcd version", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Spec.DriverMetadata[artifact.MetaEtcdVersion] = "3.5.0"
		}},
		{name: "key prefix via payload", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			editPayloadPrefix(t, b, "tenant-b/etcd/")
		}},
		{name: "key prefix via driverMetadata", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Status.UnderlyingResources = nil
			b.Spec.DriverMetadata[artifact.MetaKey] = "tenant-b/etcd/"
		}},
		{name: "checksum", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Status.Artifact.Checksum = "sha256:bb" }},
		{name: "size", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) { b.Status.Artifact.SizeBytes = 1 }},
		{name: "signature removed", reason: ReasonUnsigned, edit: func(b *backupsv1alpha1.Backup) {
			delete(b.Spec.DriverMetadata, artifact.MetaProvenance)
		}},
		{name: "signature garbled", reason: ReasonAltered, edit: func(b *backupsv1alpha1.Backup) {
			b.Spec.DriverMetadata[artifact.MetaProvenance] = "v1.k2.!!"
		}},
		{name: "unknown key", reason: ReasonUnknownKey, verify: StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": testKeys.Keys["k1"]}},
			edit: func(*backupsv1alpha1.Backup) {}},
		{name: "nowhere", reason: ReasonUnresolvable, edit: func(b *backupsv1alpha1.Backup) {
			b.Status.UnderlyingResources, b.Spec.DriverMetadata = nil, map[string]string{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sign == nil {
				tc.sign = testKeys
			}
			if tc.verify == nil {
				tc.verify = testKeys
			}
			b := sealed(t, tc.sign)
			tc.edit(b)
			v, err := Verify(ctx, tc.verify, b)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if !v.Verified || v.TakenAt().IsZero() || v.Facts.Key != "tenant-a/etcd/job-abc.db" {
					t.Fatalf("want verified, got %+v", v)
				}
				return
			}
			if v.Verified || v.Reason != tc.reason || !v.TakenAt().IsZero() {
				t.Fatalf("want %s, got %+v", tc.reason, v)
			}
		})
	}
}

// editPayloadPrefix rewrites the key prefix recorded in b's
// underlyingResources, as a tenant editing the Backup would.
func editPayloadPrefix(t *testing.T, b *backupsv1alpha1.Backup, prefix string) {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(b.Status.UnderlyingResources.Raw, &p); err != nil {
		t.Fatal(err)
	}
	p["destination"].(map[string]any)["s3"].(map[string]any)["key"] = prefix
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	b.Status.UnderlyingResources.Raw = raw
}

// The key prefix decides where a restore writes its safety snapshot, so it
// is signed (v2): a tenant who points it at another tenant's directory
// makes the Backup unverified. Backups signed v1 (no prefix) still verify,
// and what they say about the prefix is the signed key's directory, never
// the (unsigned, editable) recorded prefix.
func TestKeyPrefixIsSigned(t *testing.T) {
	ctx := context.Background()
	b := sealed(t, testKeys)
	if sig := b.Spec.DriverMetadata[artifact.MetaProvenance]; !strings.HasPrefix(sig, "v2.") {
		t.Fatalf("Seal wrote %q, want a v2 signature", sig)
	}
	v, err := Verify(ctx, testKeys, b)
	if err != nil || !v.Verified || v.Version != "v2" || v.Facts.Prefix != "tenant-a/etcd/" {
		t.Fatalf("v2: %+v, %v", v, err)
	}

	// A Backup signed by a release before v2.
	old := sealed(t, testKeys)
	f, err := FactsOf(old)
	if err != nil {
		t.Fatal(err)
	}
	mac, err := sum(testKeys.Keys["k1"], f, "v1")
	if err != nil {
		t.Fatal(err)
	}
	old.Spec.DriverMetadata[artifact.MetaProvenance] = "v1.k1." + base64.RawURLEncoding.EncodeToString(mac)
	editPayloadPrefix(t, old, "tenant-b/etcd/")
	v, err = Verify(ctx, testKeys, old)
	if err != nil || !v.Verified || v.Version != "v1" {
		t.Fatalf("a v1 signature no longer verifies: %+v, %v", v, err)
	}
	if v.Facts.Prefix != "tenant-a/etcd/" {
		t.Fatalf("v1 prefix = %q, want the signed key's directory tenant-a/etcd/", v.Facts.Prefix)
	}
}

func TestSealRefusesShortKeys(t *testing.T) {
	b := sealed(t, testKeys)
	err := Seal(context.Background(), StaticKeys{ActiveID: "s", Keys: map[string][]byte{"s": []byte("short")}}, b)
	if err == nil {
		t.Fatal("sealed with a 5-byte key")
	}
}
