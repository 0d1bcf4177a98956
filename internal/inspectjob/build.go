// Package inspectjob builds the Job that inspects a Backup's snapshot
// where the bytes are: in the Backup's namespace, from the driver's own
// image, `etcd-stage inspect` streams the object from S3 with staging's
// checks (size, sha256, etcd's trailer) into an emptyDir, opens it as
// etcd's bolt database and reports what it holds (internal/snapshotinspect)
// in its termination message, which OutcomeOf and ReportOf read.
//
// The Job is hardened as the staging Job is: no service account token,
// non-root, read-only root filesystem, every capability dropped, bounded
// CPU, memory and disk, and a podFailurePolicy that ends it at once when
// the object is refused (staging.ExitRefused) while crashes and network
// failures are retried.
package inspectjob

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/snapshotinspect"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
)

const (
	// Command is the binary in the driver's image; its first argument is
	// snapshotinspect.Subcommand.
	Command = "/etcd-stage"
	// ContainerName is the Job's one container.
	ContainerName = "inspect"
	// WorkDir is where the emptyDir that holds the download is mounted.
	WorkDir = "/work"
	// TerminationLog is where the binary writes its one-line JSON report.
	TerminationLog = "/dev/termination-log"
	// ExitRefused ends the Job at once (podFailurePolicy): the object is
	// refused for good.
	ExitRefused = staging.ExitRefused
	// BackoffLimit is how often a failed Pod is replaced.
	BackoffLimit = 2
	// TTLAfterFinished is how long a finished Job stays.
	TTLAfterFinished = time.Hour
	// WorkSlack is the emptyDir's room beyond the object's size.
	WorkSlack = 64 << 20
	// workVolume names the emptyDir.
	workVolume = "work"
)

// MemoryLimit bounds the container: the live key set and the bolt
// database's mapped pages it touches.
var MemoryLimit = resource.MustParse("512Mi")

// Object is the S3 object to inspect, as the Backup recorded it.
type Object struct {
	Endpoint   string
	Bucket     string
	Key        string
	Region     string
	PathStyle  bool
	SecretName string
	// Size and SHA256 (hex, or "sha256:<hex>") pin the bytes.
	Size   int64
	SHA256 string
}

// Spec is what an inspection Job is built from.
type Spec struct {
	Namespace string
	// JobName is the Job's name (NewName); empty means Name(BackupUID).
	JobName    string
	BackupName string
	BackupUID  types.UID
	Image      string
	Object     Object
	// Deadline bounds the Job (activeDeadlineSeconds, at least a minute).
	Deadline time.Duration
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	// CAPEM is the driver's extra S3 CA bundle (public certificates).
	CAPEM string
}

// Name is a Job name derived from the Backup's UID. A tenant knows that
// UID and could create a Job of that name first; a caller that cannot
// check what it finds there uses NewName.
func Name(uid types.UID) string { return "etcd-inspect-" + names.Hash(string(uid)) }

// NewName is a fresh Job name no one can guess: "etcd-inspect-" and 12
// random characters (60 bits).
func NewName() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return "etcd-inspect-" + string(b)
}

// Labels mark the Job and its Pods as the inspection of a Backup.
func Labels(uid types.UID) map[string]string {
	return map[string]string{
		backupsv1alpha1.InspectionLabel: string(uid),
		"app.kubernetes.io/name":        "etcd-inspection",
		"app.kubernetes.io/part-of":     "etcd-backup-driver",
	}
}

// WorkSize is the emptyDir's size limit: the object and slack.
func WorkSize(s Spec) resource.Quantity {
	return *resource.NewQuantity(s.Object.Size+WorkSlack, resource.BinarySI)
}

// Options are the binary's options for s.
func Options(s Spec) snapshotinspect.Options {
	o := s.Object
	return snapshotinspect.Options{
		Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
		Size: o.Size, SHA256: strings.TrimPrefix(o.SHA256, "sha256:"), WorkDir: WorkDir,
		AllowedEndpointCIDRs: s.AllowedEndpointCIDRs, AllowHTTP: s.AllowHTTP, TerminationLog: TerminationLog,
	}
}

// Build returns the inspection Job of s.
func Build(s Spec) *batchv1.Job {
	name := s.JobName
	if name == "" {
		name = Name(s.BackupUID)
	}
	env := []corev1.EnvVar{secretEnv(s3object.AccessKeyIDKey, s.Object.SecretName), secretEnv(s3object.SecretAccessKeyKey, s.Object.SecretName)}
	if s.CAPEM != "" {
		env = append(env, corev1.EnvVar{Name: staging.EnvCAPEM, Value: s.CAPEM})
	}
	deadline := int64(max(s.Deadline/time.Second, 60))
	work := WorkSize(s)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: name, Labels: Labels(s.BackupUID),
			Annotations: map[string]string{"etcd-backup-driver.cozystack.io/backup": s.BackupName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup", Name: s.BackupName, UID: s.BackupUID,
				Controller: ptr(false), BlockOwnerDeletion: ptr(false),
			}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(BackoffLimit)),
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: ptr(int32(TTLAfterFinished / time.Second)),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:      batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{ExitRefused}},
			}, {
				// An evicted or preempted Pod is not the object's fault.
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(s.BackupUID)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					EnableServiceLinks:           ptr(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), RunAsGroup: ptr(int64(65532)), FSGroup: ptr(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name: ContainerName, Image: s.Image, Command: []string{Command}, Args: Options(s).Args(), Env: env,
						ImagePullPolicy:          corev1.PullIfNotPresent,
						TerminationMessagePath:   TerminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						VolumeMounts:             []corev1.VolumeMount{{Name: workVolume, MountPath: WorkDir}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: MemoryLimit},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), Privileged: ptr(false),
							RunAsNonRoot: ptr(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: []corev1.Volume{{Name: workVolume, VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &work}}}},
				},
			},
		},
	}
}

func secretEnv(key, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func ptr[T any](v T) *T { return &v }
