// Package container runs the driver's image with podman for the sandbox's
// container mode (sandbox.Options.Image, `make demo IMAGE=1`): the manager
// as the chart's Deployment runs it, and the restore's staging Pods as a
// kubelet would, from the image `make image` built. It turns a Pod's
// container into a `podman run` command line (Spec, FromPod) and finds the
// image and its storage (Load).
//
// podman runs with the settings this project's machines need (the
// Makefile's image targets use the same): vfs storage in the checkout's
// .containers folder, runc, cgroupfs, and hack/containers/containers.conf,
// which empties podman's default ulimits.
package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Install says how to install what container mode needs; every error about
// a missing tool says it.
const Install = "install them as root with `apt-get install -y podman buildah runc` (Debian, Ubuntu; `dnf install -y podman buildah runc` on Fedora)"

// OwnerLabel marks the containers a sandbox runs with its process ID, so
// that a later sandbox removes those a killed one left behind.
const OwnerLabel = "io.etcd-backup-driver.sandbox.pid"

// Runtime is podman with the checkout's image storage, and the image `make
// image` built.
type Runtime struct {
	// Image is the image's name (repository:tag), as the chart and the
	// staging Jobs name it.
	Image string
	// ImageID is its ID (the config's digest).
	ImageID string
	// Dir is the storage folder (<checkout>/.containers).
	Dir string
	// Conf is the containers.conf podman reads (CONTAINERS_CONF).
	Conf string
}

// Load finds podman and the image the checkout at root last built (`make
// image` writes bin/image/image.env). It fails, saying what to do, when
// podman or runc is missing or the image was not built.
func Load(root string) (*Runtime, error) {
	var missing []string
	for _, tool := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("container mode runs the driver's image with podman and runc; not installed: %s; %s",
			strings.Join(missing, ", "), Install)
	}
	envFile := filepath.Join(root, "bin", "image", "image.env")
	env, err := readEnv(envFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("container mode needs the driver's image: %s does not exist; run `make image` first", envFile)
	}
	if err != nil {
		return nil, err
	}
	r := &Runtime{Image: env["IMAGE"], ImageID: env["IMAGE_ID"], Dir: env["CONTAINERS_DIR"],
		Conf: filepath.Join(root, "hack", "containers", "containers.conf")}
	if r.Image == "" || r.ImageID == "" || r.Dir == "" {
		return nil, fmt.Errorf("%s lacks IMAGE, IMAGE_ID or CONTAINERS_DIR; run `make image` again", envFile)
	}
	id, err := r.InspectImage(context.Background(), r.Image)
	if err != nil {
		return nil, fmt.Errorf("the image %s (%s) is not in %s: %w; run `make image` again", r.Image, envFile, r.Dir, err)
	}
	if id != r.ImageID {
		return nil, fmt.Errorf("%s names image %s, but %s is now %s (another build); run `make image` again", envFile, r.ImageID, r.Image, id)
	}
	return r, nil
}

// readEnv reads KEY=VALUE lines.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			env[k] = v
		}
	}
	return env, sc.Err()
}

// Command is podman with the runtime's storage and configuration; its
// environment is PATH, HOME, CONTAINERS_CONF and extra ("K=V"), nothing
// else of the caller's.
func (r *Runtime) Command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	global := []string{"--root", filepath.Join(r.Dir, "storage"), "--runroot", filepath.Join(r.Dir, "run"), "--storage-driver", "vfs"}
	cmd := exec.CommandContext(ctx, "podman", append(global, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CONTAINERS_CONF=" + r.Conf}, extra...)
	return cmd
}

// InspectImage returns the ID of the image ref names; an error when it is
// not in the storage (the sandbox pulls nothing).
func (r *Runtime) InspectImage(ctx context.Context, ref string) (string, error) {
	out, err := r.Command(ctx, nil, "image", "inspect", "--format", "{{.Id}}", ref).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("podman image inspect %s: %v: %s", ref, err, strings.TrimSpace(string(out)))
	}
	id := strings.TrimSpace(string(out))
	if !strings.HasPrefix(id, "sha256:") {
		id = "sha256:" + id
	}
	return id, nil
}

// Stop stops the named container (SIGTERM, then SIGKILL after grace
// seconds); one that is gone is not an error.
func (r *Runtime) Stop(ctx context.Context, name string, grace int) error {
	out, err := r.Command(ctx, nil, "stop", "--ignore", "--time", strconv.Itoa(grace), name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("podman stop %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RemoveOrphans removes the containers of sandboxes whose process is gone
// (killed before they could stop them).
func (r *Runtime) RemoveOrphans(ctx context.Context) error {
	out, err := r.Command(ctx, nil, "ps", "--all", "--filter", "label="+OwnerLabel,
		"--format", `{{.ID}} {{index .Labels "`+OwnerLabel+`"}}`).Output()
	if err != nil {
		return fmt.Errorf("podman ps: %w", err)
	}
	var orphans []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, pid, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(pid); err == nil && !alive(n) {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	if out, err := r.Command(ctx, nil, append([]string{"rm", "--force", "--ignore"}, orphans...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("podman rm: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
