package operator

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
)

// reasonErrImagePull is the waiting reason of a container whose image the
// node cannot get; the sandbox pulls nothing, so an image that is not in
// its storage is one.
const reasonErrImagePull = "ErrImagePull"

// fromImage is container c run from its image with podman, as a kubelet
// runs it: the Pod's and the container's security context (user, group,
// fsGroup, read-only root, no privilege escalation, capabilities), its
// limits, its volume mounts bind-mounted at their paths, the termination
// message file at terminationMessagePath, and the resolved environment.
// Paths are the container's own: nothing is rewritten.
func (p planner) fromImage(ctx context.Context, pod *corev1.Pod, c corev1.Container, volumes map[string]string, env map[string]string) (containerProcess, error) {
	spec, err := container.FromPod(&pod.Spec, &c)
	if err != nil {
		return containerProcess{}, &notReady{container: c.Name, reason: reasonCreateContainerConfigError, message: err.Error()}
	}
	imageID, err := p.containers.InspectImage(ctx, c.Image)
	if err != nil {
		return containerProcess{}, &notReady{container: c.Name, reason: reasonErrImagePull,
			message: fmt.Sprintf("the sandbox pulls no image and %s is not in its storage (`make image` builds the driver's): %v", c.Image, err)}
	}
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok {
			return containerProcess{}, &notReady{container: c.Name, reason: reasonCreateContainerConfigError,
				message: fmt.Sprintf("volumeMount %q names no volume of the Pod", m.Name)}
		}
		spec.Mounts = append(spec.Mounts, container.Mount{Host: filepath.Join(dir, m.SubPath), Container: m.MountPath, ReadOnly: m.ReadOnly})
	}
	termLog := filepath.Join(p.podDir, c.Name+".termination-log")
	msgPath := c.TerminationMessagePath
	if msgPath == "" {
		msgPath = corev1.TerminationMessagePathDefault
	}
	spec.Mounts = append(spec.Mounts, container.Mount{Host: termLog, Container: msgPath})
	if p.node.HostsFile != "" {
		spec.Mounts = append(spec.Mounts, container.Mount{Host: p.node.HostsFile, Container: "/etc/hosts", ReadOnly: true})
	}
	grace := killGrace
	if p.grace > 0 {
		grace = p.grace
	}
	spec.Command = expandAll(c.Command, env)
	spec.Args = expandAll(c.Args, env)
	spec.Env = env
	spec.Name = containerName(pod, c.Name)
	spec.Labels = map[string]string{container.OwnerLabel: strconv.Itoa(os.Getpid()),
		"io.kubernetes.pod.namespace": pod.Namespace, "io.kubernetes.pod.name": pod.Name, "io.kubernetes.container.name": c.Name}
	runtime := p.containers
	return containerProcess{
		name: c.Name, image: c.Image, env: env, dir: p.podDir,
		terminationLog: termLog, logFile: filepath.Join(p.podDir, c.Name+".log"),
		policy:  c.TerminationMessagePolicy,
		imageID: imageID,
		command: func(ctx context.Context) *exec.Cmd { return runtime.Run(ctx, spec) },
		// The Pod was deleted: the container gets SIGTERM and killGrace,
		// as from a kubelet.
		cancel: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), grace+10*time.Second)
			defer cancel()
			return runtime.Stop(ctx, spec.Name, int(grace/time.Second))
		},
		grace: grace,
	}, nil
}

// containerName is unique per Pod (its UID) and container.
func containerName(pod *corev1.Pod, c string) string {
	uid := strings.ReplaceAll(string(pod.UID), "-", "")
	if len(uid) > 12 {
		uid = uid[:12]
	}
	return fmt.Sprintf("k8s_%s_%s_%s_%s", c, pod.Name, pod.Namespace, uid)
}

func expandAll(in []string, env map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expandVars(s, env)
	}
	return out
}

// applyFSGroup gives the Pod's fsGroup the volume folders as a kubelet
// does for volumes that support ownership management: every file and
// folder gets the group, read and write for it (and execute where the
// owner has it), and folders the setgid bit, so that what the container
// writes stays the group's.
func applyFSGroup(pod *corev1.Pod, dirs map[string]string) error {
	if pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.FSGroup == nil {
		return nil
	}
	gid := int(*pod.Spec.SecurityContext.FSGroup)
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				return nil
			}
			if err := os.Lchown(path, -1, gid); err != nil {
				return err
			}
			mode := info.Mode() | 0o060
			if info.Mode()&0o100 != 0 {
				mode |= 0o010
			}
			if d.IsDir() {
				mode |= 0o010 | fs.ModeSetgid
			}
			return os.Chmod(path, mode&(fs.ModePerm|fs.ModeSetgid))
		})
		if err != nil {
			return fmt.Errorf("apply fsGroup %d to %s: %w", gid, dir, err)
		}
	}
	return nil
}
