package operator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of a container's termination message, as the kubelet's.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
	// exitStartError is the exit code the kubelet reports for a container
	// whose process could not be started.
	exitStartError = 128
	// killGrace is how long a container gets after SIGTERM when its Pod
	// is deleted.
	killGrace = 10 * time.Second
)

// containerProcess is one container of a Pod run as a local process: its
// command mapped to a local executable, its environment resolved, its
// mount paths rewritten to local folders, and its termination message
// file placed in the Pod's own folder.
type containerProcess struct {
	name  string
	image string
	argv  []string
	env   map[string]string
	dir   string
	// terminationLog is the local file behind terminationMessagePath.
	terminationLog string
	// logFile receives stdout and stderr (the container's log).
	logFile string
	policy  corev1.TerminationMessagePolicy
	// command, when set, is what runs instead of argv (container mode:
	// `podman run` of the image), and cancel what stops it.
	command func(ctx context.Context) *exec.Cmd
	cancel  func() error
	// imageID is the image the container ran (container mode), reported
	// in its status; empty means its image name.
	imageID string
	// grace is how long the process gets after SIGTERM before it is
	// killed; zero means killGrace.
	grace time.Duration
}

// run executes the container to its end and returns its terminated state
// as a kubelet reports it: exit code (128+signal when killed, 128 when it
// could not start), reason, and the message from its termination log (or
// the log's tail with FallbackToLogsOnError).
func (p containerProcess) run(ctx context.Context) corev1.ContainerStateTerminated {
	started := metav1.Now()
	term := func(code int32, reason, msg string) corev1.ContainerStateTerminated {
		return corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg, StartedAt: started, FinishedAt: metav1.Now()}
	}
	logFile, err := os.Create(p.logFile)
	if err != nil {
		return term(exitStartError, "StartError", err.Error())
	}
	defer logFile.Close()
	// Writable by whatever user the container runs as, as a kubelet
	// makes it (the umask would take the bits away).
	if err := os.WriteFile(p.terminationLog, nil, 0o666); err != nil {
		return term(exitStartError, "StartError", err.Error())
	}
	if err := os.Chmod(p.terminationLog, 0o666); err != nil {
		return term(exitStartError, "StartError", err.Error())
	}
	var cmd *exec.Cmd
	if p.command != nil {
		cmd = p.command(ctx)
		cmd.Cancel = p.cancel
	} else {
		cmd = exec.CommandContext(ctx, p.argv[0], p.argv[1:]...)
		cmd.Dir, cmd.Env = p.dir, p.environ()
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = killGrace
	if p.grace > 0 {
		cmd.WaitDelay = p.grace
	}
	if err := cmd.Start(); err != nil {
		return term(exitStartError, "StartError", fmt.Sprintf("failed to start container %q: %v", p.name, err))
	}
	err = cmd.Wait()
	code := int32(0)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = int32(exitErr.ExitCode())
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int32(ws.Signal())
		}
	default:
		return term(exitStartError, "Error", err.Error())
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return term(code, reason, p.message(code))
}

// message is the termination message: the file's content, or for a failed
// container with FallbackToLogsOnError and an empty file, its log's tail.
func (p containerProcess) message(code int32) string {
	msg, _ := readAtMost(p.terminationLog, maxTerminationMessage)
	if msg == "" && code != 0 && p.policy == corev1.TerminationMessageFallbackToLogsOnError {
		log, _ := os.ReadFile(p.logFile)
		lines := strings.SplitAfter(string(bytes.TrimRight(log, "\n")), "\n")
		if len(lines) > fallbackLogLines {
			lines = lines[len(lines)-fallbackLogLines:]
		}
		msg = strings.Join(lines, "")
		if len(msg) > fallbackLogBytes {
			msg = msg[len(msg)-fallbackLogBytes:]
		}
	}
	return msg
}

// environ is the process environment: only the container's variables and
// a PATH and HOME, never the sandbox's own environment (credentials the
// container was not given must not leak into it).
func (p containerProcess) environ() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + p.dir}
	keys := make([]string, 0, len(p.env))
	for k := range p.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+p.env[k])
	}
	return env
}

func readAtMost(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(n)))
	return string(b), err
}
