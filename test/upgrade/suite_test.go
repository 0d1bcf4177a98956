// Package upgrade runs the driver over objects written for an earlier
// release of it, on the CRDs that release installed: Helm does not upgrade
// a chart's crds/, so a cluster upgraded in place keeps them, and the
// objects keep the fields they had. testdata holds those CRDs as the
// earlier release generated them (the Plan, Etcd strategy and Backup CRDs
// before issue 38, supersets of Cozystack's).
package upgrade

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

var env *testenv.Env

// testKeys sign the Backups and the Plans' records.
var testKeys = provenance.StaticKeys{ActiveID: "t", Keys: map[string][]byte{"t": []byte(strings.Repeat("t", 32))}}

// TestMain replaces the Plan, strategy and Backup CRDs every Env installs
// (Cozystack's) with the earlier ones, as a cluster upgraded in place keeps
// them.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) {
		env = e
		dir := filepath.Join(testenv.RepoRoot(), "test", "upgrade", "testdata")
		old := []string{filepath.Join(dir, "plans-crd-before-issue-38.yaml"), filepath.Join(dir, "strategies-crd-before-issue-38.yaml"),
			filepath.Join(dir, "backups-crd-before-issue-38.yaml")}
		if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: old, ErrorIfPathMissing: true}); err != nil {
			panic(err)
		}
		class := &backupsv1alpha1.BackupClass{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				Application: backupsv1alpha1.ApplicationSelector{Kind: "Etcd"},
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: ptr.To("strategy.backups.cozystack.io"), Kind: "Etcd", Name: "s3"},
			}}},
		}
		if err := e.Client.Create(context.Background(), class); err != nil {
			panic(err)
		}
		if err := awaitEarlierSchema(e); err != nil {
			panic(err)
		}
	}))
}

// awaitEarlierSchema waits until the API server keeps a Plan's
// spec.retention, a strategy's spec.inspection and a Backup's
// status.manifest (dry-run creates): for a
// moment after a CRD's update it may still prune by the schema it
// replaced.
func awaitEarlierSchema(e *testenv.Env) error {
	dyn := dynamic.NewForConfigOrDie(e.Config)
	for _, probe := range []struct {
		resource dynamic.ResourceInterface
		obj      *unstructured.Unstructured
		field    []string
	}{
		{dyn.Resource(backupsv1alpha1.GroupVersion.WithResource("plans")).Namespace("default"), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": backupsv1alpha1.GroupVersion.String(), "kind": "Plan",
			"metadata": map[string]any{"name": "schema-probe"},
			"spec": map[string]any{"applicationRef": map[string]any{"kind": "Etcd", "name": "etcd"}, "backupClassName": "etcd",
				"schedule": map[string]any{"cron": "@daily"}, "retention": map[string]any{"keepLast": int64(1)}},
		}}, []string{"spec", "retention"}},
		{dyn.Resource(strategyv1alpha1.GroupVersion.WithResource("etcds")), legacyStrategyObject("schema-probe", map[string]any{
			"inspection": map[string]any{"minDroppedObjects": int64(7)}}), []string{"spec", "inspection"}},
		{dyn.Resource(backupsv1alpha1.GroupVersion.WithResource("backups")).Namespace("default"), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": backupsv1alpha1.GroupVersion.String(), "kind": "Backup",
			"metadata": map[string]any{"name": "schema-probe"},
			"spec": map[string]any{"applicationRef": map[string]any{"kind": "Etcd", "name": "etcd"},
				"strategyRef": map[string]any{"kind": "Etcd", "name": "s3"}, "takenAt": "2026-01-01T00:00:00Z"},
			"status": map[string]any{"manifest": map[string]any{"inspectedAt": "2026-01-01T00:00:00Z", "revision": int64(1),
				"keys": int64(1), "dbSizeBytes": int64(1)}},
		}}, []string{"status", "manifest"}},
	} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := probe.resource.Create(context.Background(), probe.obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				if _, found, _ := unstructured.NestedMap(out.Object, probe.field...); found {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the API server does not serve the earlier %s CRD's %s (last error: %v)", probe.obj.GetKind(), strings.Join(probe.field, "."), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
