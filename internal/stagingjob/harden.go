package stagingjob

import (
	"crypto/rand"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
)

// The pieces every Job the driver runs in a tenant's namespace shares
// (staging, a Backup's inspection in internal/inspectjob, a dry run's
// rehearsal in internal/rehearsaljob), so they stay hardened alike.

// RandomName is prefix and 12 random characters (60 bits): a name no one
// can guess, so a tenant cannot create the object first.
func RandomName(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return prefix + string(b)
}

// FailurePolicy ends the Job at once when a container exits refused (a
// code no crash produces) and ignores evictions and preemptions, which
// are not the artifact's fault; everything else is retried.
func FailurePolicy(refused int32) *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{refused}},
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
// to one CPU and limitMemory.
func Resources(requestMemory, limitMemory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(requestMemory)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(limitMemory)},
	}
}

// CredentialsEnv are the S3 keys from the named Secret, and the driver's
// extra CA bundle when there is one, as the binary reads them.
func CredentialsEnv(secret, caPEM string) []corev1.EnvVar {
	env := []corev1.EnvVar{secretEnv(s3object.AccessKeyIDKey, secret), secretEnv(s3object.SecretAccessKeyKey, secret)}
	if caPEM != "" {
		env = append(env, corev1.EnvVar{Name: staging.EnvCAPEM, Value: caPEM})
	}
	return env
}

func secretEnv(key, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func ptr[T any](v T) *T { return &v }
