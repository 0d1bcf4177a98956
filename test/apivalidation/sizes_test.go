package apivalidation

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A tenant writing a few hundred large Backups pushed the driver, which
// caches every Backup, past its memory limit. The Backup CRD is
// Cozystack's, which bounds none of its fields: the driver's cache bounds
// them instead (cachetrim.TestOversizedBackupsAreNotKept). The CRDs the
// driver still owns bound what a tenant can put in the fields it reads.
func TestTenantFieldsAreBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	g.Expect(k8s.Create(ctx, &backupsv1alpha1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "normal"},
		Spec: backupsv1alpha1.BackupSpec{
			ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "s3"},
			TakenAt:        metav1.Now(),
			DriverMetadata: map[string]string{"etcd.aenix.io/key": "ns/etcd/"},
		},
	})).To(Succeed())

	opts := map[string]int{}
	for i := range 17 {
		opts[fmt.Sprintf("o%d", i)] = i
	}
	raw, _ := json.Marshal(opts)
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opts"},
		Spec: backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: "normal"},
			Options: &runtime.RawExtension{Raw: raw}}}
	g.Expect(apierrors.IsInvalid(k8s.Create(ctx, rj))).To(BeTrue())
}
