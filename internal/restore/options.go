package restore

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// jobOptions is the Etcd driver's reading of RestoreJob.spec.options. Fields
// the driver does not know are ignored, as in the peer driver.
type jobOptions struct {
	// RestoreTimeoutSeconds overrides the restore deadline; 0 or less
	// means the driver's default.
	RestoreTimeoutSeconds int64 `json:"restoreTimeoutSeconds,omitempty"`
	// SafetySnapshot asks for (true) or declines (false) a snapshot of the
	// live cluster before it is destroyed. Unset means: take one when the
	// cluster is Available.
	SafetySnapshot *bool `json:"safetySnapshot,omitempty"`
}

func parseOptions(raw *runtime.RawExtension) (jobOptions, error) {
	var o jobOptions
	if raw == nil || len(raw.Raw) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(raw.Raw, &o); err != nil {
		return jobOptions{}, fmt.Errorf("spec.options is not valid (want {restoreTimeoutSeconds: int, safetySnapshot: bool}): %w", err)
	}
	return o, nil
}

// timeout is how long the restore may take, from when it took the claim.
func (o jobOptions) timeout(def time.Duration) time.Duration {
	if o.RestoreTimeoutSeconds > 0 {
		return time.Duration(o.RestoreTimeoutSeconds) * time.Second
	}
	return def
}
