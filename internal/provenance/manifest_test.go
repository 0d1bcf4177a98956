package provenance

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

func withManifest(t *testing.T) *backupsv1alpha1.Backup {
	t.Helper()
	b := sealed(t, testKeys)
	m := &driverv1alpha1.BackupManifest{
		InspectedAt: metav1.NewTime(time.Date(2026, 6, 1, 2, 1, 0, 0, time.UTC)),
		Revision:    1500, Keys: 300, DBSizeBytes: 1 << 20,
		Keyspaces: []driverv1alpha1.KeyspaceManifest{{Prefix: "/registry", Objects: 290, Namespaces: 5,
			Resources:      []driverv1alpha1.ObjectCount{{Name: "pods", Count: 40}},
			NamespaceNames: []string{"a", "b", "default", "kube-public", "kube-system"}}},
	}
	if err := SealManifest(context.Background(), testKeys, b, m); err != nil {
		t.Fatal(err)
	}
	if err := artifact.SetManifest(b, m); err != nil {
		t.Fatal(err)
	}
	return b
}

// editManifest changes b's recorded manifest with edit.
func editManifest(t *testing.T, b *backupsv1alpha1.Backup, edit func(m *driverv1alpha1.BackupManifest)) {
	t.Helper()
	m := artifact.Manifest(b)
	edit(m)
	if err := artifact.SetManifest(b, m); err != nil {
		t.Fatal(err)
	}
}

func TestManifestVerifiesOnlyOnItsOwnBackupAsSealed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(b *backupsv1alpha1.Backup)
		want bool
	}{
		{"as sealed", func(*backupsv1alpha1.Backup) {}, true},
		{"a count raised", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) { m.Keyspaces[0].Resources[0].Count = 41 })
		}, false},
		{"a namespace added", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) {
				m.Keyspaces[0].NamespaceNames = append(m.Keyspaces[0].NamespaceNames, "z")
			})
		}, false},
		{"the revision changed", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) { m.Revision++ })
		}, false},
		{"moved to another Backup", func(b *backupsv1alpha1.Backup) { b.Name = "other" }, false},
		{"the Backup re-signed for another object", func(b *backupsv1alpha1.Backup) {
			b.Status.Artifact.Checksum = "sha256:bb"
			if err := Seal(ctx, testKeys, b); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the provenance signature removed", func(b *backupsv1alpha1.Backup) { delete(b.Spec.DriverMetadata, artifact.MetaProvenance) }, false},
		{"no signature", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) { m.Signature = "" })
		}, false},
		{"an unknown key", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) { m.Signature = "m1.k9.AAAA" })
		}, false},
		{"garbage", func(b *backupsv1alpha1.Backup) {
			editManifest(t, b, func(m *driverv1alpha1.BackupManifest) { m.Signature = "m1..." })
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := withManifest(t)
			tc.edit(b)
			ok, err := VerifyManifest(ctx, testKeys, b)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.want {
				t.Fatalf("VerifyManifest = %v, want %v", ok, tc.want)
			}
		})
	}
}

func TestManifestCopiedBetweenBackupsDoesNotVerify(t *testing.T) {
	a, b := withManifest(t), sealed(t, testKeys)
	b.Name = "weekly"
	if err := Seal(context.Background(), testKeys, b); err != nil {
		t.Fatal(err)
	}
	if err := artifact.SetManifest(b, artifact.Manifest(a)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := VerifyManifest(context.Background(), testKeys, b); ok {
		t.Fatal("a manifest signed for one Backup verified on another")
	}
}
