package artifact

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// A Backup recorded from a snapshot resolves to the object the operator wrote.
func TestFromSnapshotResolvesToTheStoredObject(t *testing.T) {
	snap := &etcdv1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-abc", UID: "u1"},
		Spec: etcdv1alpha2.EtcdSnapshotSpec{Destination: etcdv1alpha2.SnapshotLocation{S3: &etcdv1alpha2.S3Destination{
			Bucket: "bkt", Endpoint: "http://s3", Key: "ns/app/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"},
		}}},
	}
	rec := FromSnapshot(snap, nil, driverv1alpha1.DeletionPolicyDelete)
	if st, err := rec.ReadyStatus(nil); err != nil || st.Artifact != nil || st.Phase != backupsv1alpha1.BackupPhaseReady {
		t.Fatalf("without an operator artifact: %+v, %v", st, err)
	}
	st, err := rec.ReadyStatus(&etcdv1alpha2.SnapshotArtifact{URI: "s3://bkt/ns/app/job-abc.db", SizeBytes: 9, Checksum: "sha256:ab"})
	if err != nil {
		t.Fatal(err)
	}
	b := &backupsv1alpha1.Backup{Spec: backupsv1alpha1.BackupSpec{DriverMetadata: rec.DriverMetadata()}, Status: st}
	src, err := Resolve(b)
	if err != nil || src.Key != "ns/app/job-abc.db" || src.SecretName != "creds" || src.DeletionPolicy != driverv1alpha1.DeletionPolicyDelete {
		t.Fatalf("Resolve = %+v, %v", src, err)
	}
	if b.Spec.DriverMetadata[MetaSnapshotUID] != "u1" || st.Artifact.SizeBytes != 9 {
		t.Fatalf("identity or size lost: %v %+v", b.Spec.DriverMetadata, st.Artifact)
	}
}
