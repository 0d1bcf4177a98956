package freshness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/contentdrop"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// counts is the verified/unverified series of tenant-a/etcd as text.
func counts(verified, unverified int) string {
	return fmt.Sprintf(`
# HELP etcd_backup_driver_unverified_backups Ready Etcd Backups the driver's verifier rejects (not counted anywhere else; possibly forged).
# TYPE etcd_backup_driver_unverified_backups gauge
etcd_backup_driver_unverified_backups{application="etcd",namespace="tenant-a"} %d
# HELP etcd_backup_driver_verified_backups Verified Ready Backups each application has.
# TYPE etcd_backup_driver_verified_backups gauge
etcd_backup_driver_verified_backups{application="etcd",namespace="tenant-a"} %d
`, unverified, verified)
}

// The keys could not be read at one scrape (API server hiccup): the Backup
// is not remembered as unverified — a genuine backup would otherwise look
// forged, and the application stale, until the Backup next changes.
func TestAnUndecidedVerdictIsNotRemembered(t *testing.T) {
	g := NewWithT(t)
	failing := true
	verify := func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		if failing {
			return time.Time{}, false, errors.New("provenance key Secret: connection refused")
		}
		return TrustReadyPhase(b)
	}
	c := New(Options{Backups: storeOf(backup("tenant-a", "a", "etcd", time.Hour, 1)), Plans: storeOf(), Verify: verify,
		Clock: clocktesting.NewFakePassiveClock(now)})
	g.Expect(testutil.CollectAndCount(c, MetricUnverified)).To(BeZero(), "an undecided Backup counted as unverified")
	failing = false
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(counts(1, 0)), MetricVerified, MetricUnverified)).To(Succeed())
}

// A key removed from (or added to) the key ring changes what verifies: the
// remembered verdicts are asked again when the keys change, not kept until
// each Backup next changes.
func TestVerdictsAreAskedAgainWhenTheKeysChange(t *testing.T) {
	g := NewWithT(t)
	keyPresent, epoch := true, uint64(1)
	verify := func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		if !keyPresent {
			return time.Time{}, false, nil
		}
		return TrustReadyPhase(b)
	}
	c := New(Options{Backups: storeOf(backup("tenant-a", "a", "etcd", time.Hour, 1)), Plans: storeOf(), Verify: verify,
		Epoch: func() uint64 { return epoch }, Clock: clocktesting.NewFakePassiveClock(now)})
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(counts(1, 0)), MetricVerified, MetricUnverified)).To(Succeed())
	keyPresent, epoch = false, 2
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(counts(0, 1)), MetricVerified, MetricUnverified)).To(Succeed())
}

// A verified Backup the driver held for a content drop is counted per
// application until a person removes the hold; an unverified one is not,
// nor is a hold the driver did not place (annotations are the tenant's to
// write): bare, with a made-up mark, or with the mark of another Backup.
func TestHeldBackupsAreCounted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	keys := provenance.StaticKeys{ActiveID: "k1", Keys: map[string][]byte{"k1": []byte(strings.Repeat("k", 32))}}
	held := backup("tenant-a", "a", "etcd", 2*time.Hour, 1)
	g.Expect(contentdrop.Hold(ctx, keys, held, "b")).To(Succeed())
	forged := backup("tenant-a", "f", "etcd", 3*time.Hour, 1)
	forged.Annotations = maps.Clone(held.Annotations)
	// A tenant sets the annotation on its own (verified) Backups: bare,
	// with a made-up mark, or with the driver's mark of another Backup.
	bare := backup("tenant-a", "bare", "etcd", 4*time.Hour, 1)
	bare.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b"}
	madeUp := backup("tenant-a", "made-up", "etcd", 5*time.Hour, 1)
	madeUp.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b", driverv1alpha1.ContentDropHoldMarkAnnotation: "k1.k1.AAAA"}
	copied := backup("tenant-a", "copied", "etcd", 6*time.Hour, 1)
	copied.Annotations = maps.Clone(held.Annotations)
	verify := func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		if b.Name == "f" {
			return time.Time{}, false, nil
		}
		return TrustReadyPhase(b)
	}
	heldByDriver := func(b *backupsv1alpha1.Backup) (bool, error) { return contentdrop.HeldByDriver(ctx, keys, b) }
	c := New(Options{Backups: storeOf(held, forged, bare, madeUp, copied, backup("tenant-a", "b", "etcd", time.Hour, 1)), Plans: storeOf(),
		Verify: verify, Held: heldByDriver, Clock: clocktesting.NewFakePassiveClock(now)})
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP etcd_backup_driver_backups_held_for_content_drop Verified Backups each application has that retention holds because a later Backup dropped content (ContentDrop); a person releases each by removing its annotation.
# TYPE etcd_backup_driver_backups_held_for_content_drop gauge
etcd_backup_driver_backups_held_for_content_drop{application="etcd",namespace="tenant-a"} 1
`), MetricHeld)).To(Succeed())
	delete(held.Annotations, driverv1alpha1.ContentDropHoldAnnotation)
	held.ResourceVersion = "2"
	g.Expect(testutil.CollectAndCount(c, MetricHeld)).To(BeZero(), "the series stays after the hold is released")
}
