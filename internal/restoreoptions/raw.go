package restoreoptions

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// Raw is o as a RestoreJob's spec.options, as Parse reads them back
// (fields left at their zero value are left out): the plugin and the
// drills build options only so.
func (o Options) Raw() *runtime.RawExtension {
	raw, _ := json.Marshal(o)
	return &runtime.RawExtension{Raw: raw}
}
