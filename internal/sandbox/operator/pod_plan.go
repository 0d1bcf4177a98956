package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/container"
)

// podPlan is what the kubelet stand-in runs for one Pod: its init
// containers in order, then its containers.
type podPlan struct {
	init []containerProcess
	main []containerProcess
	// keep are what keeps the Pod's volumes fresh while it runs (its
	// projected tokens' renewals).
	keep []func(context.Context)
}

// keepFresh runs the Pod's volume renewals until ctx ends.
func (p podPlan) keepFresh(ctx context.Context) {
	for _, k := range p.keep {
		go k(ctx)
	}
}

// notReady is why a Pod cannot start yet, as a kubelet or the scheduler
// would report it; the Pod waits, it does not fail.
type notReady struct {
	// container is the container that cannot be created ("" when the Pod
	// cannot be scheduled at all).
	container string
	reason    string
	message   string
}

func (n *notReady) Error() string { return n.reason + ": " + n.message }

// planner turns a Pod into local processes.
type planner struct {
	reader  client.Reader
	volumes *Volumes
	// executables maps a command's path inside the image to the local
	// executable that stands for it.
	executables map[string]string
	// podDir is the Pod's own folder (termination logs, container logs,
	// emptyDir volumes).
	podDir string
	// containers, when set, runs containers from their images with podman
	// (container mode) instead of executables.
	containers *container.Runtime
	// node is what the node gives every container: the API server's
	// address, names resolved as cluster DNS would, service-account
	// tokens.
	node nodeServices
	// grace is how long a container gets after SIGTERM; zero means
	// killGrace.
	grace time.Duration
}

// plan resolves every container of pod. A *notReady error means the Pod
// waits (a missing Secret, ConfigMap or claim); other errors are the API's.
func (p planner) plan(ctx context.Context, pod *corev1.Pod) (podPlan, error) {
	mounts, keep, err := p.volumeFolders(ctx, pod)
	if err != nil {
		return podPlan{}, err
	}
	if p.containers != nil {
		// The containers run as the Pod's user, not as the sandbox's.
		if err := applyFSGroup(pod, mounts); err != nil {
			return podPlan{}, err
		}
	}
	plan := podPlan{keep: keep}
	for _, c := range pod.Spec.InitContainers {
		cp, err := p.container(ctx, pod, c, mounts)
		if err != nil {
			return podPlan{}, err
		}
		plan.init = append(plan.init, cp)
	}
	for _, c := range pod.Spec.Containers {
		cp, err := p.container(ctx, pod, c, mounts)
		if err != nil {
			return podPlan{}, err
		}
		plan.main = append(plan.main, cp)
	}
	return plan, nil
}

// volumeFolders maps each of the Pod's volumes to a local folder: a claim
// to its folder in Volumes, an emptyDir, a Secret or a projected volume to
// one in the Pod's folder (written as volumes_projected.go says). A
// missing claim keeps the Pod unschedulable, as the scheduler would. keep
// are the projected tokens' renewals.
func (p planner) volumeFolders(ctx context.Context, pod *corev1.Pod) (dirs map[string]string, keep []func(context.Context), err error) {
	dirs = map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		switch {
		case v.PersistentVolumeClaim != nil:
			var pvc corev1.PersistentVolumeClaim
			err := p.reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, &pvc)
			if isNotFound(err) || (err == nil && !pvc.DeletionTimestamp.IsZero()) {
				return nil, nil, &notReady{reason: corev1.PodReasonUnschedulable,
					message: fmt.Sprintf("persistentvolumeclaim %q not found", v.PersistentVolumeClaim.ClaimName)}
			}
			if err != nil {
				return nil, nil, err
			}
			if dirs[v.Name], err = p.volumes.Mount(&pvc); err != nil {
				return nil, nil, err
			}
			continue
		case v.EmptyDir != nil, v.Secret != nil, v.Projected != nil:
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, &notReady{reason: "ContainerCreating",
				message: fmt.Sprintf("volume %q: the sandbox kubelet mounts only persistentVolumeClaim, emptyDir, secret and projected volumes", v.Name)}
		}
		dirs[v.Name] = dir
		switch {
		case v.Secret != nil:
			err = p.secretVolume(ctx, pod, v, dir)
		case v.Projected != nil:
			var k func(context.Context)
			if k, err = p.projectedVolume(ctx, pod, v, dir); k != nil {
				keep = append(keep, k)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return dirs, keep, nil
}

// container resolves one container: command, environment and paths.
func (p planner) container(ctx context.Context, pod *corev1.Pod, c corev1.Container, volumes map[string]string) (containerProcess, error) {
	configErr := func(format string, args ...any) error {
		return &notReady{container: c.Name, reason: reasonCreateContainerConfigError, message: fmt.Sprintf(format, args...)}
	}
	env, err := resolveEnv(ctx, p.reader, pod.Namespace, c, p.node.env())
	if err != nil {
		if nr, ok := err.(*notReady); ok {
			nr.container = c.Name
		}
		return containerProcess{}, err
	}
	if p.containers != nil {
		return p.fromImage(ctx, pod, c, volumes, env)
	}
	rewrite := pathRewriter{}
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok {
			return containerProcess{}, configErr("volumeMount %q names no volume of the Pod", m.Name)
		}
		rewrite[filepath.Clean(m.MountPath)] = filepath.Join(dir, m.SubPath)
	}
	termLog := filepath.Join(p.podDir, c.Name+".termination-log")
	msgPath := c.TerminationMessagePath
	if msgPath == "" {
		msgPath = corev1.TerminationMessagePathDefault
	}
	rewrite[msgPath] = termLog

	if len(c.Command) == 0 {
		return containerProcess{}, configErr("the sandbox kubelet cannot read image entrypoints: container %q needs a command", c.Name)
	}
	exe, ok := p.executables[c.Command[0]]
	if !ok {
		return containerProcess{}, configErr("the sandbox kubelet has no local executable for %q (image %s)", c.Command[0], c.Image)
	}
	argv := []string{exe}
	for _, a := range append(append([]string(nil), c.Command[1:]...), c.Args...) {
		argv = append(argv, p.node.resolveNames(rewrite.arg(expandVars(a, env))))
	}
	for k, v := range env {
		env[k] = rewrite.arg(v)
	}
	dir := p.podDir
	if c.WorkingDir != "" {
		dir = rewrite.path(c.WorkingDir)
	}
	return containerProcess{
		name: c.Name, image: c.Image, argv: argv, env: env, dir: dir,
		terminationLog: termLog, logFile: filepath.Join(p.podDir, c.Name+".log"),
		policy: c.TerminationMessagePolicy, grace: p.grace,
	}, nil
}

// resolveEnv resolves a container's env as the kubelet does: values,
// secretKeyRefs and configMapKeyRefs; a missing non-optional Secret,
// ConfigMap or key is a *notReady (CreateContainerConfigError).
func resolveEnv(ctx context.Context, reader client.Reader, ns string, c corev1.Container, node map[string]string) (map[string]string, error) {
	env := map[string]string{}
	for k, v := range node {
		env[k] = v
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandVars(e.Value, env)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			var s corev1.Secret
			v, err := lookupKey(ctx, reader, ns, ref.Name, ref.Key, ref.Optional, &s, "Secret", func() map[string][]byte { return s.Data })
			if err != nil {
				return nil, err
			}
			if v != nil {
				env[e.Name] = *v
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			var cm corev1.ConfigMap
			v, err := lookupKey(ctx, reader, ns, ref.Name, ref.Key, ref.Optional, &cm, "ConfigMap", func() map[string][]byte {
				data := map[string][]byte{}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
				return data
			})
			if err != nil {
				return nil, err
			}
			if v != nil {
				env[e.Name] = *v
			}
		default:
			return nil, &notReady{reason: reasonCreateContainerConfigError,
				message: fmt.Sprintf("env %s: the sandbox kubelet resolves only values, secretKeyRef and configMapKeyRef", e.Name)}
		}
	}
	return env, nil
}

// lookupKey reads key of the named object; nil without error when an
// optional reference is missing.
func lookupKey(ctx context.Context, reader client.Reader, ns, name, key string, optional *bool, obj client.Object, kind string, data func() map[string][]byte) (*string, error) {
	opt := optional != nil && *optional
	err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if isNotFound(err) {
		if opt {
			return nil, nil
		}
		return nil, &notReady{reason: reasonCreateContainerConfigError, message: fmt.Sprintf("%s %q not found", strings.ToLower(kind), name)}
	}
	if err != nil {
		return nil, err
	}
	v, ok := data()[key]
	if !ok {
		if opt {
			return nil, nil
		}
		return nil, &notReady{reason: reasonCreateContainerConfigError, message: fmt.Sprintf("couldn't find key %s in %s %s/%s", key, kind, ns, name)}
	}
	s := string(v)
	return &s, nil
}

// expandVars expands $(VAR) references to variables defined before, as
// the kubelet does in env values, commands and args; $$ escapes.
func expandVars(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "$("):
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// pathRewriter maps paths inside the container (mount paths, the
// termination message path) to local paths.
type pathRewriter map[string]string

// path rewrites p when it is, or lies under, a mapped path (the longest
// match wins); otherwise p is returned as it is.
func (r pathRewriter) path(p string) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if p == k {
			return r[k]
		}
		if strings.HasPrefix(p, k+"/") {
			return filepath.Join(r[k], p[len(k)+1:])
		}
	}
	return p
}

// arg rewrites an argument that is a path, or a --flag=path.
func (r pathRewriter) arg(a string) string {
	if strings.HasPrefix(a, "-") {
		if i := strings.IndexByte(a, '='); i > 0 {
			return a[:i+1] + r.path(a[i+1:])
		}
		return a
	}
	return r.path(a)
}
