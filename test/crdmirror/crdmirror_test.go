package crdmirror

import (
	"path/filepath"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// mirrors are our Go types of kinds that are not ours, each with the CRD
// that kind is installed with. Another mirror joins by adding a row.
var mirrors = []struct {
	kind    any
	crd     string // under config/crd/upstream
	version string
}{
	{strategyv1alpha1.Etcd{}, "cozystack/strategy.backups.cozystack.io_etcds.yaml", "v1alpha1"},
	{backupsv1alpha1.Plan{}, "cozystack/backups.cozystack.io_plans.yaml", "v1alpha1"},
	{backupsv1alpha1.BackupClass{}, "cozystack/backups.cozystack.io_backupclasses.yaml", "v1alpha1"},
	{backupsv1alpha1.BackupJob{}, "cozystack/backups.cozystack.io_backupjobs.yaml", "v1alpha1"},
	{backupsv1alpha1.RestoreJob{}, "cozystack/backups.cozystack.io_restorejobs.yaml", "v1alpha1"},
	{backupsv1alpha1.Backup{}, "cozystack/backups.cozystack.io_backups.yaml", "v1alpha1"},
}

// Our mirror of each kind has exactly the fields its pinned CRD serves:
// none the API server would prune.
func TestMirrorsHaveOnlyServedFields(t *testing.T) {
	for _, m := range mirrors {
		t.Run(reflect.TypeOf(m.kind).String(), func(t *testing.T) {
			g := NewWithT(t)
			s, err := Schema(filepath.Join(testenv.RepoRoot(), "config", "crd", "upstream", m.crd), m.version)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(Unserved(reflect.TypeOf(m.kind), s)).To(BeEmpty(), "fields of our Go type that %s does not serve", m.crd)
		})
	}
}

// The walk finds what a schema lacks, wherever it is: a field beside the
// served ones, one of an inlined struct, an item of a list, a value of a
// map; and leaves alone what the schema serves or preserves.
func TestUnservedFindsWhatTheSchemaLacks(t *testing.T) {
	g := NewWithT(t)
	s, err := Schema(filepath.Join(testenv.RepoRoot(), "config", "crd", "upstream", mirrors[0].crd), "v1alpha1")
	g.Expect(err).NotTo(HaveOccurred())
	type extra struct {
		Policy string `json:"deletionPolicy,omitempty"`
	}
	type superset struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              struct {
			strategyv1alpha1.EtcdSpec `json:",inline"`
			extra                     `json:",inline"`
			Labels                    map[string]extra `json:"labels,omitempty"`
		} `json:"spec"`
		Status struct {
			Conditions []struct {
				metav1.Condition `json:",inline"`
				Hint             string `json:"hint"`
			} `json:"conditions"`
		} `json:"status"`
	}
	g.Expect(Unserved(reflect.TypeFor[superset](), s)).To(Equal([]string{
		"spec.deletionPolicy", "spec.labels", "status.conditions[].hint",
	}))
}

// Every CRD pinned from Cozystack is installed by every suite
// (testenv.CozystackCRDs) and has a mirror checked above: a kind pinned
// later cannot be left running on a schema of ours, or unchecked.
func TestEveryPinnedCozystackCRDIsInstalledAndMirrored(t *testing.T) {
	g := NewWithT(t)
	pinned, err := filepath.Glob(filepath.Join(testenv.CozystackCRDPath(), "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var files, mirrored []string
	for _, p := range pinned {
		files = append(files, filepath.Base(p))
	}
	for _, m := range mirrors {
		mirrored = append(mirrored, filepath.Base(m.crd))
	}
	g.Expect(testenv.CozystackCRDs).To(ConsistOf(files))
	g.Expect(mirrored).To(ConsistOf(files))
}
