package inspection

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

const (
	// ContainerName is the Job's one container.
	ContainerName = "inspect"
	// WorkDir is where the emptyDir that holds the download is mounted.
	WorkDir = "/work"
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

// Spec is what an inspection Job is built from.
type Spec struct {
	Namespace string
	// JobName is the Job's name; empty means Name(BackupUID).
	JobName    string
	BackupName string
	BackupUID  types.UID
	Image      string
	Object     stagingstep.Object
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
// Jobs with a MAC of the UID under its own key (Reconciler.jobName) and
// checks what it finds there.
func Name(uid types.UID) string { return "etcd-inspect-" + names.Hash(string(uid)) }

// Labels mark the Job and its Pods as the inspection of a Backup.
func Labels(uid types.UID) map[string]string {
	return tenantjobs.Labels(backupsv1alpha1.InspectionLabel, string(uid), "etcd-inspection")
}

// WorkSize is the emptyDir's size limit: the object and slack.
func WorkSize(s Spec) int64 { return s.Object.Size + WorkSlack }

// Options are the binary's options for s.
func Options(s Spec) step.Options {
	return step.Options{
		Source:  s.Object.Source(s.AllowedEndpointCIDRs, s.AllowHTTP),
		WorkDir: WorkDir, TerminationLog: report.TerminationLog,
	}
}

// Build returns the inspection Job of s.
func Build(s Spec) *batchv1.Job {
	name := s.JobName
	if name == "" {
		name = Name(s.BackupUID)
	}
	pod := tenantjobs.Pod{
		Labels: Labels(s.BackupUID),
		Containers: []tenantjobs.Container{{
			Name: ContainerName, Image: s.Image, Args: Options(s).Args(), Env: tenantjobs.CredentialsEnv(s.Object.SecretName, s.CAPEM),
			Mounts:        []corev1.VolumeMount{{Name: workVolume, MountPath: WorkDir}},
			RequestMemory: "128Mi", LimitMemory: MemoryLimit,
		}},
		Volumes: []corev1.Volume{tenantjobs.Scratch(workVolume, WorkSize(s))},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: name, Labels: Labels(s.BackupUID),
			Annotations: map[string]string{"etcd-backup-driver.cozystack.io/backup": s.BackupName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup", Name: s.BackupName, UID: s.BackupUID,
				Controller: ptr(false), BlockOwnerDeletion: ptr(false),
			}},
		},
		Spec: tenantjobs.JobSpec(pod, s.Deadline, TTLAfterFinished),
	}
}

func ptr[T any](v T) *T { return &v }
