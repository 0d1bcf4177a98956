package image

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// container is what `podman inspect` says of a container (the fields the
// test reads).
type container struct {
	Path       string
	Args       []string
	Image      string
	ImageName  string
	Config     struct{ User string }
	HostConfig struct {
		ReadonlyRootfs  bool
		SecurityOpt     []string
		CapAdd, CapDrop []string
		Memory          int64
	}
}

// inspectDriver inspects the driver's running container.
func inspectDriver(t *testing.T) container {
	t.Helper()
	out, err := sb.Containers.Command(context.Background(), nil, "container", "inspect", sb.DriverContainer.Name).Output()
	if err != nil {
		t.Fatalf("podman inspect %s: %v", sb.DriverContainer.Name, err)
	}
	var all []container
	if err := json.Unmarshal(out, &all); err != nil || len(all) != 1 {
		t.Fatalf("podman inspect %s: %v: %s", sb.DriverContainer.Name, err, out)
	}
	return all[0]
}

func trimSHA(id string) string { return strings.TrimPrefix(id, "sha256:") }
