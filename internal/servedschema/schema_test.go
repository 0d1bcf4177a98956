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

// Against the CRDs as shipped: the driver's serve every optional field;
// Cozystack's lack exactly the ones the driver adds.
func TestOptionalFieldsOfTheShippedCRDs(t *testing.T) {
	root := filepath.Join("..", "..", "config", "crd")
	for _, crd := range []string{BackupCRD} {
		file := map[string]string{BackupCRD: "backups.cozystack.io_backups.yaml"}[crd]
		ours, theirs := load(t, filepath.Join(root, "bases", file)), load(t, filepath.Join(root, "upstream", "cozystack", file))
		for _, f := range Optional[crd] {
			if !serves(ours, f) {
				t.Errorf("our %s does not serve %s", crd, f)
			}
			if serves(theirs, f) {
				t.Errorf("Cozystack's %s serves %s: it is no longer optional", crd, f)
			}
		}
	}
}
