package legacyvalues

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// YAML renders the objects as one multi-document stream, in the order they
// can be applied: the Secret, strategy and StrategyPolicy before the class
// that names the strategy, the class before the Plan that names the class.
// Server-filled fields (status, creationTimestamp) are left out.
func (o *Objects) YAML() ([]byte, error) {
	var out bytes.Buffer
	for i, obj := range []runtime.Object{o.Secret, o.Strategy, o.Policy, o.BackupClass, o.Plan} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", obj, err)
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
		doc, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("marshal %T: %w", obj, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return out.Bytes(), nil
}
