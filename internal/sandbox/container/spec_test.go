package container

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func ptr[T any](v T) *T { return &v }

// A staging-like Pod becomes the podman run a kubelet's would be: the
// Pod's user and group, fsGroup as a supplementary group, a read-only root
// with no tmpfs, no privilege escalation, every capability dropped, the
// limits; secrets in the environment never reach the command line.
func TestFromPodAppliesTheSecurityContext(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), RunAsGroup: ptr(int64(65532)), FSGroup: ptr(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}}
	c := &corev1.Container{Name: "stage", Image: "example.org/ebd:1", Command: []string{"/etcd-stage"}, Args: []string{"--out=/staging/x"},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), Privileged: ptr(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
	}
	s, err := FromPod(pod, c)
	g.Expect(err).NotTo(HaveOccurred())
	s.Name = "n"
	s.Env = map[string]string{"AWS_SECRET_ACCESS_KEY": "do-not-show"}
	args := s.RunArgs()
	line := strings.Join(args, " ")
	g.Expect(line).To(ContainSubstring("--read-only --read-only-tmpfs=false"))
	g.Expect(line).To(ContainSubstring("--user 65532:65532 --group-add 65532"))
	g.Expect(line).To(ContainSubstring("--security-opt no-new-privileges"))
	g.Expect(line).To(ContainSubstring("--cap-drop ALL"))
	g.Expect(line).To(ContainSubstring("--memory 268435456 --cpus 1.5"))
	g.Expect(line).To(ContainSubstring("--env AWS_SECRET_ACCESS_KEY"))
	g.Expect(line).NotTo(ContainSubstring("do-not-show"))
	g.Expect(args[len(args)-4:]).To(Equal([]string{"--entrypoint", "/etcd-stage", "example.org/ebd:1", "--out=/staging/x"}))
}

// What a kubelet refuses, the sandbox refuses too.
func TestFromPodRefusesWhatAKubeletRefuses(t *testing.T) {
	g := NewWithT(t)
	_, err := FromPod(&corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(0))}},
		&corev1.Container{Name: "c"})
	g.Expect(err).To(MatchError(ContainSubstring("breaks non-root policy")))
	_, err = FromPod(&corev1.PodSpec{}, &corev1.Container{Name: "c", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}})
	g.Expect(err).To(MatchError(ContainSubstring("no privileged container")))
	// The container's own fields win over the Pod's.
	s, err := FromPod(&corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr(int64(1))}},
		&corev1.Container{Name: "c", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr(int64(2))}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.User).To(Equal("2"))
}
