package artifact

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

func TestObjectKeyFollowsTheWriter(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"", "snap.db"},
		{"ns/app/", "ns/app/snap.db"},
		{"ns/app", "ns/app/snap.db"},
		{"a//", "a//snap.db"}, // the writer keeps doubled slashes
		{"/", "/snap.db"},
	} {
		if got := ObjectKey(tc.prefix, "snap"); got != tc.want {
			t.Errorf("ObjectKey(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func TestKeyFromURI(t *testing.T) {
	for _, tc := range []struct {
		uri, bucket, want string
		ok                bool
	}{
		{"s3://b/ns/app/x.db", "b", "ns/app/x.db", true},
		{"s3://b/a%20b.db", "b", "a%20b.db", true}, // verbatim, no decoding
		{"s3://other/x.db", "b", "", false},
		{"s3://b/", "b", "", false},
		{"s3:///x.db", "b", "", false},
		{"https://b/x.db", "b", "", false},
	} {
		got, err := KeyFromURI(tc.uri, tc.bucket)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("KeyFromURI(%q, %q) = %q, %v; want %q ok=%v", tc.uri, tc.bucket, got, err, tc.want, tc.ok)
		}
	}
}

func testDestination() strategyv1alpha1.EtcdS3Template {
	fps := true
	return strategyv1alpha1.EtcdS3Template{
		Bucket: "bkt", Endpoint: "http://127.0.0.1:9000", Key: "tenant/etcd/", Region: "eu-1",
		ForcePathStyle: &fps, CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"},
	}
}

func backupOf(meta map[string]string, underlying *runtime.RawExtension, uri string) *backupsv1alpha1.Backup {
	b := &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
		Spec:       backupsv1alpha1.BackupSpec{DriverMetadata: meta},
		Status:     backupsv1alpha1.BackupStatus{UnderlyingResources: underlying},
	}
	if uri != "" {
		b.Status.Artifact = &backupsv1alpha1.BackupArtifact{URI: uri}
	}
	return b
}

func TestRecordRoundTrips(t *testing.T) {
	rec := Record{SnapshotName: "job-abc", Destination: testDestination(), Parameters: map[string]string{"p": "v"},
		DeletionPolicy: driverv1alpha1.DeletionPolicyDelete}
	u, err := rec.UnderlyingResources()
	if err != nil {
		t.Fatal(err)
	}
	src, err := Resolve(backupOf(rec.DriverMetadata(), u, ""))
	if err != nil {
		t.Fatal(err)
	}
	if src.Key != "tenant/etcd/job-abc.db" || src.Bucket != "bkt" || src.SecretName != "creds" ||
		src.Region != "eu-1" || src.ForcePathStyle == nil || !*src.ForcePathStyle ||
		src.DeletionPolicy != driverv1alpha1.DeletionPolicyDelete {
		t.Fatalf("unexpected source %+v", src)
	}
}

// Backups written by the Cozystack driver carry either form, or both.
func TestResolvePeerFormats(t *testing.T) {
	peerMeta := map[string]string{
		MetaSnapshotName: "job-x1y2z", MetaBucket: "bkt", MetaEndpoint: "https://s3", MetaKey: "ns/app/",
		MetaCredentialsName: "cozy-backups-creds", MetaForcePathStyle: "false",
	}
	peerUnderlying := &runtime.RawExtension{Raw: []byte(`{"kind":"EtcdBackupSnapshot","apiVersion":"backups.cozystack.io/v1alpha1",
		"destination":{"s3":{"bucket":"bkt","endpoint":"https://s3","key":"ns/app","credentialsSecretRef":{"name":"cozy-backups-creds"}}}}`)}

	for name, tc := range map[string]struct {
		b       *backupsv1alpha1.Backup
		wantKey string
		wantErr error
	}{
		"driverMetadata only":         {backupOf(peerMeta, nil, ""), "ns/app/job-x1y2z.db", nil},
		"underlyingResources only":    {backupOf(nil, peerUnderlying, "s3://bkt/ns/app/exact.db"), "ns/app/exact.db", nil},
		"underlying, key from prefix": {backupOf(map[string]string{MetaSnapshotName: "s"}, peerUnderlying, ""), "ns/app/s.db", nil},
		"artifact URI wins":           {backupOf(peerMeta, nil, "s3://bkt/elsewhere/x.db"), "elsewhere/x.db", nil},
		"artifact in other bucket":    {backupOf(peerMeta, nil, "s3://other/x.db"), "ns/app/job-x1y2z.db", nil},
		"wrong kind":                  {backupOf(peerMeta, &runtime.RawExtension{Raw: []byte(`{"kind":"Velero","apiVersion":"v1"}`)}, ""), "", ErrUnrecognised},
		"invalid JSON":                {backupOf(peerMeta, &runtime.RawExtension{Raw: []byte(`{`)}, ""), "", ErrUnrecognised},
		"nothing recorded":            {backupOf(nil, nil, ""), "", ErrNoDestination},
		"no snapshot name and no URI": {backupOf(map[string]string{MetaBucket: "b", MetaEndpoint: "e", MetaCredentialsName: "c"}, nil, ""), "", ErrNoObjectKey},
	} {
		t.Run(name, func(t *testing.T) {
			src, err := Resolve(tc.b)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || src.Key != tc.wantKey {
				t.Fatalf("Resolve = %+v, %v; want key %q", src, err, tc.wantKey)
			}
			if src.DeletionPolicy != driverv1alpha1.DeletionPolicyRetain {
				t.Fatalf("a Backup without a recorded policy is Retain, got %q", src.DeletionPolicy)
			}
		})
	}
}
