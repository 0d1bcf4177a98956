package pointintime

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
)

// A restore keeps a copy of its pin in its capture (a ConfigMap in the
// driver's namespace, which tenants cannot read or write), from which it
// builds the staging Job: the pin on the RestoreJob is read only until
// then.

// CaptureKey is the capture's key holding the copy.
const CaptureKey = "point-in-time.yaml"

// CaptureText is p as the capture keeps it (without its signature: the
// capture is the driver's own).
func (p Pin) CaptureText() (string, error) {
	p.Signature = ""
	b, err := yaml.Marshal(p)
	return string(b), err
}

// ParseCaptureText reads the capture's copy, nil when it has none.
func ParseCaptureText(raw string) (*Pin, error) {
	if raw == "" {
		return nil, nil
	}
	var pin Pin
	if err := yaml.UnmarshalStrict([]byte(raw), &pin); err != nil {
		return nil, fmt.Errorf("key %s: %w", CaptureKey, err)
	}
	if _, err := restoreoptions.ParsePoint(pin.Point); err != nil {
		return nil, fmt.Errorf("key %s: %w", CaptureKey, err)
	}
	return &pin, nil
}

// Replay is the point the staging Job replays to, as its flags carry it.
func (p Pin) Replay() pointreplay.Point {
	t, _ := restoreoptions.ParsePoint(p.Point)
	return pointreplay.Point{Chain: p.Chain, Base: p.Base, Target: t}
}

// Message names the base and the point, for status and Events.
func Message(t changelog.Target, p Pin) string {
	return fmt.Sprintf("restoring to %s: base Backup %s (revision %d) and its changes up to the point (%s)", t, p.Backup, p.Base.Revision, p.Chain)
}
