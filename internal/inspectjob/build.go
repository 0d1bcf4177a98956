// Package inspectjob builds the Job that inspects a Backup's snapshot
// where the bytes are: in the Backup's namespace, from the driver's own
// image, `etcd-stage inspect` streams the object from S3 with staging's
// checks (size, sha256, etcd's trailer) into an emptyDir, opens it as
// etcd's bolt database and reports what it holds (internal/snapshotinspect)
// in its termination message, which OutcomeOf and ReportOf read.
//
// The Job is hardened as the staging Job is (stagingjob's harden.go): no service account token,
// non-root, read-only root filesystem, every capability dropped, bounded
// CPU, memory and disk, and a podFailurePolicy that ends it at once when
// the object is refused (staging.ExitRefused) while crashes and network
// failures are retried.
package inspectjob

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/snapshotinspect"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/stagingjob"
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
	// TTLAfterFinished is how long a finished Job stays. A failed
	// inspection is tried again once its Job is gone, so this is also how
	// often a Backup whose inspection keeps failing is read again.
	TTLAfterFinished = 24 * time.Hour
	// WorkSlack is the emptyDir's room beyond the object's size.
	WorkSlack = 64 << 20
	// workVolume names the emptyDir.
	workVolume = "work"
)

// MemoryLimit bounds the container: the live key set and the bolt
// database's mapped pages it touches.
const MemoryLimit = "512Mi"

// Object is the S3 object to inspect, as the Backup recorded it (the
// staging Job's description of an object: endpoint, bucket, key, region,
// path style, credentials Secret, size and sha256).
type Object = stagingjob.Object

// Spec is what an inspection Job is built from.
type Spec struct {
	Namespace string
	// JobName is the Job's name; empty means Name(BackupUID).
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
// UID and could create a Job of that name first: the driver names its
// Jobs with a MAC of the UID under its own key (backupinspection) and
// checks what it finds there.
func Name(uid types.UID) string { return "etcd-inspect-" + names.Hash(string(uid)) }

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
		Source: staging.Source{
			Endpoint: o.Endpoint, Bucket: o.Bucket, Key: o.Key, Region: o.Region, PathStyle: o.PathStyle,
			Size: o.Size, SHA256: strings.TrimPrefix(o.SHA256, "sha256:"),
			AllowedEndpointCIDRs: s.AllowedEndpointCIDRs, AllowHTTP: s.AllowHTTP,
		},
		WorkDir: WorkDir, TerminationLog: TerminationLog,
	}
}

// Build returns the inspection Job of s.
func Build(s Spec) *batchv1.Job {
	name := s.JobName
	if name == "" {
		name = Name(s.BackupUID)
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
			PodFailurePolicy:        stagingjob.FailurePolicy(ExitRefused),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(s.BackupUID)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					EnableServiceLinks:           ptr(false),
					SecurityContext:              stagingjob.PodSecurityContext(),
					Containers: []corev1.Container{{
						Name: ContainerName, Image: s.Image, Command: []string{Command}, Args: Options(s).Args(),
						Env:                      stagingjob.CredentialsEnv(s.Object.SecretName, s.CAPEM),
						ImagePullPolicy:          corev1.PullIfNotPresent,
						TerminationMessagePath:   TerminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						VolumeMounts:             []corev1.VolumeMount{{Name: workVolume, MountPath: WorkDir}},
						Resources:                stagingjob.Resources("128Mi", MemoryLimit),
						SecurityContext:          stagingjob.ContainerSecurityContext(),
					}},
					Volumes: []corev1.Volume{{Name: workVolume, VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &work}}}},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }
