// Package rehearsaljob builds the Job of a dry-run RestoreJob: in the
// tenant's namespace, from the driver's own image, it runs
// `/etcd-stage rehearse` (internal/rehearse), which stages the Backup's
// snapshot exactly as a real restore would, boots a throwaway etcd from
// it on loopback inside the Pod, reads it back and reports what it holds.
// Nothing live is touched: the Pod has no service account token and no
// credentials but the bucket's read keys, and works in an emptyDir.
//
// The Job is hardened as every tenant Job is (tenantjobs.JobSpec:
// non-root, read-only root filesystem, no capabilities, seccomp, bounded
// CPU and memory), ends at once when the bytes are refused
// (report.ExitRefused, podFailurePolicy) and retries everything else a
// little.
//
// The tenant can create Jobs in its namespace, with any labels. The
// driver names its Job at random (NewName) and finds it again only by
// tenantjobs.Mine: the labels, a controller reference to the RestoreJob's
// UID, and the Pod template it built, all together.
package rehearsaljob

import (
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearse"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
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
	Object         staging.Object
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
	return map[string]string{
		backupsv1alpha1.RehearsalLabel: restoreJobUID,
		"app.kubernetes.io/name":       "etcd-rehearsal",
		"app.kubernetes.io/part-of":    "etcd-backup-driver",
	}
}

// WorkDirSize bounds the emptyDir: the staged file, the restored data
// directory (the database again, and its WAL) and slack.
func WorkDirSize(snapshotSize int64) resource.Quantity {
	return *resource.NewQuantity(3*snapshotSize+256<<20, resource.BinarySI)
}

// Options are the binary's options for s.
func (s Spec) Options() rehearse.Options {
	o := rehearse.Options{WorkDir: WorkDir, Staging: stagingstep.Options{
		Endpoint: s.Object.Endpoint, Bucket: s.Object.Bucket, Key: s.Object.Key, Region: s.Object.Region, PathStyle: s.Object.PathStyle,
		Size: s.Object.Size, SHA256: strings.TrimPrefix(s.Object.SHA256, "sha256:"),
		AllowedEndpointCIDRs: s.AllowedEndpointCIDRs, AllowHTTP: s.AllowHTTP, TerminationLog: report.TerminationLog,
	}}
	if s.LiveRevision > 0 {
		o.Staging.RevisionFloor = s.LiveRevision
	} else {
		o.Staging.BumpRevision = stagingstep.UnknownLiveBump
	}
	return o
}

// Build returns the Job of s, controlled by the RestoreJob owner.
func Build(s Spec, owner metav1.OwnerReference) *batchv1.Job {
	sizeLimit := WorkDirSize(s.Object.Size)
	owner.Controller, owner.BlockOwnerDeletion = ptr(true), ptr(true)
	pod := tenantjobs.Pod{
		Labels: Labels(s.RestoreJobUID),
		Containers: []tenantjobs.Container{{
			Name: ContainerName, Image: s.Image, Args: append([]string{rehearse.Subcommand}, s.Options().Args()...),
			Env:           tenantjobs.CredentialsEnv(s.Object.SecretName, s.CAPEM),
			Mounts:        []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}},
			RequestMemory: "128Mi", LimitMemory: MemoryLimit,
		}},
		Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &sizeLimit}}}},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.JobName, Labels: Labels(s.RestoreJobUID),
			Annotations:     map[string]string{"etcd-backup-driver.cozystack.io/restore-job": s.RestoreJobName},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: tenantjobs.JobSpec(pod, s.Deadline, TTLAfterFinished),
	}
}

func ptr[T any](v T) *T { return &v }
