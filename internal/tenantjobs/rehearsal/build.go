package rehearsal

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Paths in the Pod.
const (
	// WorkDir is where the emptyDir is mounted.
	WorkDir = "/rehearsal"
	// ContainerName is the Job's one container.
	ContainerName = "rehearse"
)

// Bounds of the Job.
const (
	TTLAfterFinished = time.Hour
	// MemoryLimit bounds the Pod: the throwaway etcd maps its database,
	// whose pages the kernel may drop, and the walk reads keys only.
	MemoryLimit = "1Gi"
)

// Spec is what a rehearsal Job is built from: facts the driver verified
// (the Backup's object, size and sha256), never tenant input.
type Spec struct {
	// JobName is NewName's.
	JobName        string
	Namespace      string
	RestoreJobName string
	RestoreJobUID  string
	Image          string
	Object         stagingstep.Object
	// LiveRevision is the live cluster's revision; 0 when it could not be
	// read (the snapshot's revision is then raised by UnknownLiveBump, as
	// a real restore would).
	LiveRevision int64
	// Deadline bounds the Job (activeDeadlineSeconds).
	Deadline time.Duration
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy;
	// CAPEM its extra S3 CA bundle.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	CAPEM                string
}

// NewName is a fresh rehearsal Job name no one can guess:
// "etcd-rehearsal-" and 12 random characters (60 bits).
func NewName() string { return tenantjobs.RandomName("etcd-rehearsal-") }

// Labels mark the Job and its Pods as a dry run's rehearsal.
func Labels(restoreJobUID string) map[string]string {
	return tenantjobs.Labels(backupsv1alpha1.RehearsalLabel, restoreJobUID, "etcd-rehearsal")
}

// WorkDirSize bounds the emptyDir: the staged file, the restored data
// directory (the database again, and its WAL) and slack.
func WorkDirSize(snapshotSize int64) int64 { return 3*snapshotSize + 256<<20 }

// Options are the binary's options for s.
func (s Spec) Options() step.Options {
	o := step.Options{WorkDir: WorkDir, Staging: stagingstep.Options{TerminationLog: report.TerminationLog}.
		WithSource(s.Object.Source(s.AllowedEndpointCIDRs, s.AllowHTTP))}
	if s.LiveRevision > 0 {
		o.Staging.RevisionFloor = s.LiveRevision
	} else {
		o.Staging.BumpRevision = stagingstep.UnknownLiveBump
	}
	return o
}

// Build returns the Job of s, controlled by the RestoreJob owner.
func Build(s Spec, owner metav1.OwnerReference) *batchv1.Job {
	owner.Controller, owner.BlockOwnerDeletion = ptr(true), ptr(true)
	pod := tenantjobs.Pod{
		Labels: Labels(s.RestoreJobUID),
		Containers: []tenantjobs.Container{{
			Name: ContainerName, Image: s.Image, Args: append([]string{step.Subcommand}, s.Options().Args()...),
			Env:           tenantjobs.CredentialsEnv(s.Object.SecretName, s.CAPEM),
			Mounts:        []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}},
			RequestMemory: "128Mi", LimitMemory: MemoryLimit,
		}},
		Volumes: []corev1.Volume{tenantjobs.Scratch("work", WorkDirSize(s.Object.Size))},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.JobName, Labels: Labels(s.RestoreJobUID),
			Annotations:     map[string]string{"etcd-backup-driver.cozystack.io/restore-job": s.RestoreJobName},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: tenantjobs.JobSpec(pod, s.Deadline, TTLAfterFinished),
	}
}

func ptr[T any](v T) *T { return &v }
