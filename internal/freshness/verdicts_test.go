package freshness

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
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

// A verified Backup held for a content drop is counted per application
// until a person removes the hold; an unverified one (its annotation is
// the tenant's to write) is not.
func TestHeldBackupsAreCounted(t *testing.T) {
	g := NewWithT(t)
	held := backup("tenant-a", "a", "etcd", 2*time.Hour, 1)
	held.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b"}
	forged := backup("tenant-a", "f", "etcd", 3*time.Hour, 1)
	forged.Annotations = map[string]string{driverv1alpha1.ContentDropHoldAnnotation: "b"}
	verify := func(b *backupsv1alpha1.Backup) (time.Time, bool, error) {
		if b.Name == "f" {
			return time.Time{}, false, nil
		}
		return TrustReadyPhase(b)
	}
	c := New(Options{Backups: storeOf(held, forged, backup("tenant-a", "b", "etcd", time.Hour, 1)), Plans: storeOf(), Verify: verify,
		Clock: clocktesting.NewFakePassiveClock(now)})
	g.Expect(testutil.CollectAndCompare(c, strings.NewReader(`
# HELP etcd_backup_driver_backups_held_for_content_drop Verified Backups each application has that retention holds because a later Backup dropped content (ContentDrop); a person releases each by removing its annotation.
# TYPE etcd_backup_driver_backups_held_for_content_drop gauge
etcd_backup_driver_backups_held_for_content_drop{application="etcd",namespace="tenant-a"} 1
`), MetricHeld)).To(Succeed())
	delete(held.Annotations, driverv1alpha1.ContentDropHoldAnnotation)
	held.ResourceVersion = "2"
	g.Expect(testutil.CollectAndCount(c, MetricHeld)).To(BeZero(), "the series stays after the hold is released")
}
