package tenantjobs

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// What every Job the driver runs in a tenant's namespace shares (the
// staging, the inspection and the rehearsal Job), so they stay hardened
// alike: a fix here is a fix to all three.

// Command is the binary every tenant Job runs: etcd-stage, in the
// driver's own image (its first argument picks the step).
const Command = "/etcd-stage"

// BackoffLimit is how often a failed Pod is replaced (a crash, a network
// failure); a refusal ends the Job at once (FailurePolicy).
const BackoffLimit = 2

// MinDeadline is the shortest activeDeadlineSeconds a tenant Job gets.
const MinDeadline = time.Minute

// Container is one step's container in a tenant Job.
type Container struct {
	Name, Image string
	// Args are etcd-stage's arguments (the step's, from facts the driver
	// verified, never tenant input).
	Args   []string
	Env    []corev1.EnvVar
	Mounts []corev1.VolumeMount
	// RequestMemory and LimitMemory bound its memory (Resources).
	RequestMemory, LimitMemory string
}

// Build is c, in a Pod of volumes, hardened: it runs Command, writes its
// report to report.TerminationLog (the kubelet's log tail stands in when
// a crash left none, for people to read; the driver parses only a
// report), runs unprivileged (ContainerSecurityContext) and bounded
// (Resources, with the ephemeral storage of what it mounts:
// EphemeralStorage).
func (c Container) Build(volumes []corev1.Volume) corev1.Container {
	return corev1.Container{
		Name: c.Name, Image: c.Image, Command: []string{Command}, Args: c.Args, Env: c.Env,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   report.TerminationLog,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             c.Mounts,
		Resources:                Resources(c.RequestMemory, c.LimitMemory, EphemeralStorage(c.Mounts, volumes)),
		SecurityContext:          ContainerSecurityContext(),
	}
}

// Pod is what one tenant Job's (or the capture Deployment's) Pod runs.
type Pod struct {
	// Labels mark the Pods as the Job's.
	Labels                     map[string]string
	InitContainers, Containers []Container
	Volumes                    []corev1.Volume
	// ServiceAccount, when set, is the Pod's ServiceAccount. No token is
	// mounted either way; a Pod that needs one (the capture's, which may
	// write its one progress record) names a projected token in Volumes.
	ServiceAccount string
}

// template is p's Pod template with restartPolicy restart: no service
// account token unless p projects one, no service links, the image's
// non-root user (PodSecurityContext), hardened containers.
func (p Pod) template(restart corev1.RestartPolicy) corev1.PodTemplateSpec {
	build := func(cs []Container) []corev1.Container {
		var out []corev1.Container
		for _, c := range cs {
			out = append(out, c.Build(p.Volumes))
		}
		return out
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: p.Labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                restart,
			ServiceAccountName:           p.ServiceAccount,
			AutomountServiceAccountToken: ptr(false),
			EnableServiceLinks:           ptr(false),
			SecurityContext:              PodSecurityContext(),
			InitContainers:               build(p.InitContainers),
			Containers:                   build(p.Containers),
			Volumes:                      p.Volumes,
		},
	}
}

// JobSpec is the spec of a tenant Job running p: retried at most
// BackoffLimit times, ended at deadline (at least MinDeadline) and at
// once on a refusal (FailurePolicy), removed ttl after it finished; its
// Pod never restarts (and is built as template says).
func JobSpec(p Pod, deadline, ttl time.Duration) batchv1.JobSpec {
	seconds := int64(max(deadline, MinDeadline) / time.Second)
	return batchv1.JobSpec{
		BackoffLimit:            ptr(int32(BackoffLimit)),
		ActiveDeadlineSeconds:   &seconds,
		TTLSecondsAfterFinished: ptr(int32(ttl / time.Second)),
		PodFailurePolicy:        FailurePolicy(),
		Template:                p.template(corev1.RestartPolicyNever),
	}
}

// DeploymentSpec is the spec of a long-running tenant workload running p
// (the point-in-time capture): one replica, Recreate (never two Pods at
// once: two captures of one chain would race each other's index), no
// old ReplicaSets kept, its Pod restarted when it exits (the kubelet's
// back-off; the last exit's report stays in the container's lastState),
// hardened as a Job's Pod.
func DeploymentSpec(p Pod) appsv1.DeploymentSpec {
	return appsv1.DeploymentSpec{
		Replicas:             ptr(int32(1)),
		Selector:             &metav1.LabelSelector{MatchLabels: p.Labels},
		Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		RevisionHistoryLimit: ptr(int32(0)),
		Template:             p.template(corev1.RestartPolicyAlways),
	}
}

// FailurePolicy ends the Job at once when a container exits
// report.ExitRefused (a code no crash produces) and ignores evictions and
// preemptions, which are not the artifact's fault; everything else is
// retried.
func FailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{report.ExitRefused}},
	}, {
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
}

// PodSecurityContext runs the Pod as the image's non-root user 65532
// (group and fsGroup too) under the runtime's seccomp profile.
func PodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), RunAsGroup: ptr(int64(65532)), FSGroup: ptr(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// ContainerSecurityContext: no privilege, no escalation, a read-only root
// filesystem, every capability dropped.
func ContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), Privileged: ptr(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Resources requests 100m CPU and requestMemory, and limits the container
// to one CPU and limitMemory; it requests and is limited to ephemeral of
// the node's ephemeral storage (EphemeralStorage).
func Resources(requestMemory, limitMemory string, ephemeral resource.Quantity) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(requestMemory),
			corev1.ResourceEphemeralStorage: ephemeral},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(limitMemory),
			corev1.ResourceEphemeralStorage: ephemeral},
	}
}

// CredentialsEnv are the S3 keys from the named Secret, and the driver's
// extra CA bundle when there is one, as every step reads them
// (the staging step's Fetch).
func CredentialsEnv(secret, caPEM string) []corev1.EnvVar {
	env := []corev1.EnvVar{secretEnv(s3object.AccessKeyIDKey, secret), secretEnv(s3object.SecretAccessKeyKey, secret)}
	if caPEM != "" {
		env = append(env, corev1.EnvVar{Name: s3object.EnvCAPEM, Value: caPEM})
	}
	return env
}

func secretEnv(key, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func ptr[T any](v T) *T { return &v }
