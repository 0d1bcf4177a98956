package container

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Spec is one container run as a kubelet would run a Pod's container: the
// image, its command, the Pod's and the container's security context, its
// limits, and the mounts the caller resolved.
type Spec struct {
	// Name names the container (unique among running ones).
	Name  string
	Image string
	// Command replaces the image's entrypoint (its first word is the
	// entrypoint, the rest come before Args); empty keeps the image's.
	Command []string
	Args    []string
	// Env reaches the container through podman's own environment (`-e
	// NAME`), never on a command line another user could read.
	Env map[string]string
	// Mounts are bind mounts of host paths.
	Mounts []Mount
	// User is "uid" or "uid:gid"; empty keeps the image's user.
	User string
	// Groups are supplementary groups (the Pod's fsGroup and
	// supplementalGroups).
	Groups []int64
	// ReadOnlyRoot mounts the image read-only, with no writable /tmp or
	// /run either (readOnlyRootFilesystem; podman would add tmpfs there).
	ReadOnlyRoot bool
	// NoNewPrivileges is allowPrivilegeEscalation: false.
	NoNewPrivileges bool
	CapAdd, CapDrop []string
	// Unconfined drops the seccomp profile (seccompProfile Unconfined);
	// otherwise podman's default profile applies (RuntimeDefault).
	Unconfined bool
	// MemoryBytes and CPUs are the limits; zero means none.
	MemoryBytes int64
	CPUs        string
	// Labels are added to the container.
	Labels map[string]string
}

// Mount is a bind mount.
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// FromPod is container c of pod as Spec: the image and command, the
// security context (the container's fields over the Pod's), fsGroup and
// supplementalGroups, and the limits. It refuses what the sandbox must not
// run (privileged containers, a root user with runAsNonRoot) with the
// message a kubelet would give. Mounts, Env and Name are the caller's.
func FromPod(pod *corev1.PodSpec, c *corev1.Container) (Spec, error) {
	s := Spec{Image: c.Image, Command: c.Command, Args: c.Args}
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	uid, gid := pick(csc.RunAsUser, psc.RunAsUser), pick(csc.RunAsGroup, psc.RunAsGroup)
	switch {
	case uid != nil && gid != nil:
		s.User = fmt.Sprintf("%d:%d", *uid, *gid)
	case uid != nil:
		s.User = strconv.FormatInt(*uid, 10)
	case gid != nil:
		return Spec{}, fmt.Errorf("container %q: runAsGroup without runAsUser is not supported by the sandbox", c.Name)
	}
	if nonRoot := pick(csc.RunAsNonRoot, psc.RunAsNonRoot); nonRoot != nil && *nonRoot && uid != nil && *uid == 0 {
		return Spec{}, fmt.Errorf("container %q: container's runAsUser breaks non-root policy", c.Name)
	}
	if psc.FSGroup != nil {
		s.Groups = append(s.Groups, *psc.FSGroup)
	}
	s.Groups = append(s.Groups, psc.SupplementalGroups...)
	if csc.Privileged != nil && *csc.Privileged {
		return Spec{}, fmt.Errorf("container %q: the sandbox runs no privileged container", c.Name)
	}
	s.ReadOnlyRoot = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	s.NoNewPrivileges = csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation
	if caps := csc.Capabilities; caps != nil {
		for _, c := range caps.Add {
			s.CapAdd = append(s.CapAdd, string(c))
		}
		for _, c := range caps.Drop {
			s.CapDrop = append(s.CapDrop, string(c))
		}
	}
	seccomp := csc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp != nil {
		switch seccomp.Type {
		case corev1.SeccompProfileTypeRuntimeDefault:
		case corev1.SeccompProfileTypeUnconfined:
			s.Unconfined = true
		default:
			return Spec{}, fmt.Errorf("container %q: seccomp profile %s is not supported by the sandbox", c.Name, seccomp.Type)
		}
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		s.MemoryBytes = m.Value()
	}
	if cpu, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		s.CPUs = strconv.FormatFloat(float64(cpu.MilliValue())/1000, 'f', -1, 64)
	}
	return s, nil
}

func pick[T any](first, second *T) *T {
	if first != nil {
		return first
	}
	return second
}

// RunArgs is the `podman run` command line of s (without podman's global
// flags): removed when it ends, on the host's network (the sandbox's
// servers listen on loopback), never pulling.
func (s Spec) RunArgs() []string {
	args := []string{"run", "--rm", "--name", s.Name, "--pull", "never", "--network", "host", "--stop-timeout", "10"}
	if s.ReadOnlyRoot {
		args = append(args, "--read-only", "--read-only-tmpfs=false")
	}
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	for _, g := range s.Groups {
		args = append(args, "--group-add", strconv.FormatInt(g, 10))
	}
	if s.NoNewPrivileges {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if s.Unconfined {
		args = append(args, "--security-opt", "seccomp=unconfined")
	}
	for _, c := range s.CapDrop {
		args = append(args, "--cap-drop", c)
	}
	for _, c := range s.CapAdd {
		args = append(args, "--cap-add", c)
	}
	if s.MemoryBytes > 0 {
		args = append(args, "--memory", strconv.FormatInt(s.MemoryBytes, 10))
	}
	if s.CPUs != "" {
		args = append(args, "--cpus", s.CPUs)
	}
	for _, k := range sortedKeys(s.Labels) {
		args = append(args, "--label", k+"="+s.Labels[k])
	}
	for _, m := range s.Mounts {
		v := m.Host + ":" + m.Container
		if m.ReadOnly {
			v += ":ro"
		}
		args = append(args, "--volume", v)
	}
	for _, k := range sortedKeys(s.Env) {
		args = append(args, "--env", k)
	}
	rest := s.Args
	if len(s.Command) > 0 {
		args = append(args, "--entrypoint", s.Command[0])
		rest = append(append([]string(nil), s.Command[1:]...), s.Args...)
	}
	return append(append(args, s.Image), rest...)
}

// Run returns the command that runs s in the foreground: its output is the
// container's, its exit code the container's (125 to 127 when podman
// could not start it), and SIGTERM to it is passed to the container.
func (r *Runtime) Run(ctx context.Context, s Spec) *exec.Cmd {
	env := make([]string, 0, len(s.Env))
	for _, k := range sortedKeys(s.Env) {
		env = append(env, k+"="+s.Env[k])
	}
	return r.Command(ctx, env, s.RunArgs()...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
