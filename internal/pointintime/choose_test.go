package pointintime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

var keys = provenance.StaticKeys{ActiveID: "k", Keys: map[string][]byte{"k": []byte(strings.Repeat("k", 32))}}

var t0 = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

// backup is a good Backup of application etcd in team-a, taken hours
// after t0, signed, whose signed manifest says revision rev (none if 0).
func backup(t *testing.T, name string, hours int, rev int64, edit ...func(*backupsv1alpha1.Backup)) backupsv1alpha1.Backup {
	t.Helper()
	ctx := context.Background()
	rec := artifact.Record{SnapshotName: name, SnapshotUID: "uid-" + name, EtcdVersion: "3.6.11",
		DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Destination: strategyv1alpha1.EtcdS3Template{Bucket: "bkt", Endpoint: "https://s3.example.com", Key: "team-a/etcd/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	b := backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: strategyv1alpha1.EtcdStrategyKind, Name: "s3"},
			TakenAt:        metav1.NewTime(t0.Add(time.Duration(hours) * time.Hour)),
			DriverMetadata: rec.DriverMetadata(),
		},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady, UnderlyingResources: u,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://bkt/team-a/etcd/" + name + ".db", SizeBytes: 4 << 20,
				Checksum: "sha256:" + strings.Repeat("ab", 32)}},
	}
	if err := provenance.Seal(ctx, keys, &b); err != nil {
		t.Fatal(err)
	}
	if rev > 0 {
		m := driverv1alpha1.BackupManifest{Revision: rev, Keys: 10, DBSizeBytes: 1 << 20, InspectedAt: metav1.NewTime(t0)}
		if err := provenance.SealManifest(ctx, keys, &b, &m); err != nil {
			t.Fatal(err)
		}
		if err := artifact.SetManifest(&b, &m); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range edit {
		e(&b)
	}
	return b
}

// The base is the newest good, recorded, inspected Backup of the
// application at or before the point; the others never are.
func TestChooseTheNewestGoodBaseAtOrBeforeThePoint(t *testing.T) {
	ctx := context.Background()
	all := []backupsv1alpha1.Backup{
		backup(t, "night-1", 0, 100),
		backup(t, "night-2", 24, 2000),
		backup(t, "night-3", 48, 5000),
		// Each of these would be the newest at or before hour 30 or
		// revision 2999, and none may be a base.
		backup(t, "unsigned", 25, 2100, func(b *backupsv1alpha1.Backup) { delete(b.Spec.DriverMetadata, artifact.MetaProvenance) }),
		backup(t, "edited", 25, 2100, func(b *backupsv1alpha1.Backup) { b.Spec.TakenAt = metav1.NewTime(t0.Add(26 * time.Hour)) }),
		backup(t, "not-inspected", 25, 0),
		backup(t, "manifest-forged", 25, 2100, func(b *backupsv1alpha1.Backup) {
			m := artifact.Manifest(b)
			m.Revision = 2200
			if err := artifact.SetManifest(b, m); err != nil {
				t.Fatal(err)
			}
		}),
		backup(t, "dropped", 25, 2100, func(b *backupsv1alpha1.Backup) {
			b.Status.Conditions = []metav1.Condition{{Type: backupsv1alpha1.BackupConditionContentDrop, Status: metav1.ConditionTrue, Reason: "x"}}
		}),
		backup(t, "failed", 25, 2100, func(b *backupsv1alpha1.Backup) { b.Status.Phase = backupsv1alpha1.BackupPhaseFailed }),
		backup(t, "other-app", 25, 2100, func(b *backupsv1alpha1.Backup) { b.Spec.ApplicationRef.Name = "other" }),
		backup(t, "other-ns", 25, 2100, func(b *backupsv1alpha1.Backup) { b.Namespace = "team-b" }),
		backup(t, "other-strategy", 25, 2100, func(b *backupsv1alpha1.Backup) { b.Spec.StrategyRef.Kind = "Velero" }),
	}
	of := &all[2]
	for _, tc := range []struct {
		name   string
		target changelog.Target
		want   string
	}{
		{"a revision between two", changelog.Target{Revision: 2999}, "night-2"},
		{"the base's own revision", changelog.Target{Revision: 2000}, "night-2"},
		{"a revision after the newest", changelog.Target{Revision: 9000}, "night-3"},
		{"a time between two", changelog.Target{Time: t0.Add(30 * time.Hour)}, "night-2"},
		{"the base's own time", changelog.Target{Time: t0.Add(24 * time.Hour)}, "night-2"},
		{"a time before all but the first", changelog.Target{Time: t0.Add(time.Hour)}, "night-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Choose(ctx, keys, all, of, tc.target)
			if err != nil || got.Backup.Name != tc.want {
				t.Fatalf("Choose = %+v, %v; want %s", got.Backup, err, tc.want)
			}
			if rev := got.Chain.Base.Revision; got.Chain.Prefix != changelog.ChainPrefix("team-a/etcd", rev) || got.Chain.Base.SHA256 != strings.Repeat("ab", 32) {
				t.Fatalf("chain %+v", got.Chain)
			}
		})
	}
	for _, target := range []changelog.Target{{Revision: 99}, {Time: t0.Add(-time.Second)}} {
		if got, err := Choose(ctx, keys, all, of, target); !errors.Is(err, ErrNoBase) {
			t.Fatalf("Choose before every base = %+v, %v; want ErrNoBase", got.Backup, err)
		} else {
			t.Log(err)
		}
	}
}
