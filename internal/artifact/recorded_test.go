package artifact

import (
	"testing"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

func TestRecordedOf(t *testing.T) {
	got := RecordedOf(backupOf(map[string]string{MetaSnapshotName: "s", MetaSnapshotUID: "u", MetaDeletionPolicy: "Delete"}, nil, ""))
	if got.SnapshotName != "s" || got.SnapshotUID != "u" || got.DeletionPolicy != driverv1alpha1.DeletionPolicyDelete {
		t.Fatalf("RecordedOf = %+v", got)
	}
	// Peer Backups record no policy: Retain, and readable even though
	// Resolve would fail for lack of a destination.
	got = RecordedOf(backupOf(map[string]string{MetaSnapshotName: "s"}, nil, ""))
	if got.DeletionPolicy != driverv1alpha1.DeletionPolicyRetain || got.SnapshotName != "s" {
		t.Fatalf("RecordedOf = %+v", got)
	}
}
