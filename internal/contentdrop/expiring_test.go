package contentdrop

import (
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// After a quiet hour the events of the hour before are gone by
// kube-apiserver's --event-ttl, and leases churn with their holders: with
// the StrategyPolicy's default expiringResources that is no drop. The
// manifest still counts them (the comparison reads them), and a policy
// whose list is empty checks them like any other resource.
func TestExpiringResourcesAreNoDrop(t *testing.T) {
	before := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
		ks("/registry", []string{"default", "shop"}, oc("events", 40), oc("pods", 20), oc("leases", 12), oc("masterleases", 3)),
	}}
	quiet := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
		ks("/registry", []string{"default", "shop"}, oc("events", 3), oc("pods", 20), oc("leases", 2), oc("masterleases", 1)),
	}}
	if drops := Compare(before, quiet, ThresholdsOf(strategypolicy.Effective("etcd-s3", nil).Inspection)); len(drops) != 0 {
		t.Fatalf("expiring resources read as a content drop: %v", drops)
	}

	none := &driverv1alpha1.StrategyPolicy{Spec: driverv1alpha1.StrategyPolicySpec{
		Inspection: &driverv1alpha1.Inspection{ExpiringResources: []string{}}}}
	drops := Compare(before, quiet, ThresholdsOf(strategypolicy.Effective("etcd-s3", none).Inspection))
	if len(drops) != 2 || drops[0].String() != "events in /registry: 40 → 3" || drops[1].String() != "leases in /registry: 12 → 2" {
		t.Fatalf("with no expiring resources, events and leases dropped; got %v", drops)
	}

	// Pods still drop beside expiring events.
	wiped := &driverv1alpha1.BackupManifest{Keyspaces: []driverv1alpha1.KeyspaceManifest{
		ks("/registry", []string{"default", "shop"}, oc("events", 3), oc("pods", 2), oc("leases", 2), oc("masterleases", 1)),
	}}
	drops = Compare(before, wiped, ThresholdsOf(strategypolicy.Effective("etcd-s3", nil).Inspection))
	if len(drops) != 1 || drops[0].String() != "pods in /registry: 20 → 2" {
		t.Fatalf("pods dropped beside expiring events; got %v", drops)
	}
}
