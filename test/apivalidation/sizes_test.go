package apivalidation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A tenant writing a few hundred large Backups pushed the driver, which
// caches every Backup, past its memory limit. The CRDs the driver owns bound
// what a tenant can put in the fields it reads.
func TestTenantFieldsAreBounded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	backup := func(name string, meta map[string]string, app string) *backupsv1alpha1.Backup {
		return &backupsv1alpha1.Backup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: backupsv1alpha1.BackupSpec{
				ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: app},
				StrategyRef:    backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "s3"},
				TakenAt:        metav1.Now(),
				DriverMetadata: meta,
			},
		}
	}
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for name, b := range map[string]*backupsv1alpha1.Backup{
		"many-entries": backup("many", many, "etcd"),
		"huge-value":   backup("huge", map[string]string{"etcd.aenix.io/key": strings.Repeat("k", 100<<10)}, "etcd"),
		"long-name":    backup("longname", nil, strings.Repeat("a", 254)),
	} {
		err := k8s.Create(ctx, b)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
	}
	g.Expect(k8s.Create(ctx, backup("normal", map[string]string{"etcd.aenix.io/key": "ns/etcd/"}, "etcd"))).To(Succeed())
	// RestoreJob.spec.options: Cozystack's CRD preserves whatever is
	// there; the one parser (internal/restoreoptions) refuses any field it
	// does not know.
}
