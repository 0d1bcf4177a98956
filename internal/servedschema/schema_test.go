package servedschema

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func load(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	root, ok := storageSchema(&unstructured.Unstructured{Object: obj})
	if !ok {
		t.Fatalf("%s has no storage schema", path)
	}
	return root
}

// Against the CRDs as shipped: the driver's RestoreJob CRD makes a
// RestoreJob's spec immutable; Cozystack's does not.
func TestImmutableSpecOfTheShippedCRDs(t *testing.T) {
	root := filepath.Join("..", "..", "config", "crd")
	ours := load(t, filepath.Join(root, "bases", "backups.cozystack.io_restorejobs.yaml"))
	theirs := load(t, filepath.Join(root, "upstream", "cozystack", "backups.cozystack.io_restorejobs.yaml"))
	if !immutableSpec(ours) || immutableSpec(theirs) {
		t.Errorf("immutable spec: ours=%v theirs=%v", immutableSpec(ours), immutableSpec(theirs))
	}
}
