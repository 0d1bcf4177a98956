package backupdeletion

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

func TestForeignSnapshot(t *testing.T) {
	b := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "backup-uid"}}
	ref := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup", Name: name, UID: types.UID(uid)}
	}
	for name, tc := range map[string]struct {
		snapUID, recordedUID string
		owners               []metav1.OwnerReference
		foreign              bool
	}{
		"peer snapshot, no owner: kept":  {snapUID: "s1", foreign: true},
		"recorded UID matches, no owner": {snapUID: "s1", recordedUID: "s1", foreign: true},
		"recorded UID matches, owned":    {snapUID: "s1", recordedUID: "s1", owners: []metav1.OwnerReference{ref("b", "backup-uid")}},
		"recorded UID differs":           {snapUID: "s2", recordedUID: "s1", foreign: true},
		"owned by another Backup":        {snapUID: "s1", owners: []metav1.OwnerReference{ref("x", "x")}, foreign: true},
		"owned by this Backup too":       {snapUID: "s1", owners: []metav1.OwnerReference{ref("x", "x"), ref("b", "backup-uid")}},
	} {
		snap := &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{UID: types.UID(tc.snapUID), OwnerReferences: tc.owners}}
		got := foreign(snap, b, artifact.Recorded{SnapshotUID: tc.recordedUID}) != ""
		if got != tc.foreign {
			t.Errorf("%s: foreign = %v, want %v", name, got, tc.foreign)
		}
	}
}
