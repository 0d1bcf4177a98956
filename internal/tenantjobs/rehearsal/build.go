package rehearsal

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
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
	// JobName is keyed (the controller's jobName): no one but the driver
	// can name a Job so.
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
	// Point is the point the Job replays the base's chain to, nil for
	// the Backup as it was (point.go).
	Point *pointreplay.Point
	// Deadline bounds the Job (activeDeadlineSeconds).
	Deadline time.Duration
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy;
	// CAPEM its extra S3 CA bundle.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	CAPEM                string
}

// Labels mark the Job and its Pods as a dry run's rehearsal.
func Labels(restoreJobUID string) map[string]string {
	return tenantjobs.Labels(backupsv1alpha1.RehearsalLabel, restoreJobUID, "etcd-rehearsal")
}

// WorkDirSize bounds the emptyDir of s: the staged file, the restored
// data directory (the database again, and its WAL) and slack; with a
// point, the room the staging step's replay takes as well (staging's own
// rule, pointRoom there).
func WorkDirSize(s Spec) int64 {
	n := 3*s.Object.Size + 256<<20
	if s.Point != nil {
		n += 2*s.Object.Size + staging.PointChangesRoom
	}
	return n
}

// memoryLimit is the Pod's memory: MemoryLimit, or with a point what
// the staging step's replay takes when that is more (the replay's
// scratch etcd and the rehearsal's run one after the other).
func (s Spec) memoryLimit() string {
	limit := resource.MustParse(MemoryLimit)
	if s.Point != nil {
		if replay := staging.PointMemoryLimit(s.Object.Size); replay > limit.Value() {
			return resource.NewQuantity(replay, resource.BinarySI).String()
		}
	}
	return limit.String()
}

// Options are the binary's options for s.
func (s Spec) Options() step.Options {
	o := step.Options{WorkDir: WorkDir, Staging: stagingstep.Options{TerminationLog: report.TerminationLog}.
		WithSource(s.Object.Source(s.AllowedEndpointCIDRs, s.AllowHTTP))}
	if s.Point != nil {
		o.Staging.Point = *s.Point
	}
	if s.LiveRevision > 0 {
		o.Staging.RevisionFloor = s.LiveRevision
	} else {
		o.Staging.BumpRevision = stagingstep.UnknownLiveBump
	}
	return o
}

// Build returns the Job of s, controlled by the RestoreJob owner, so that
// deleting the RestoreJob deletes it and the Job's events wake it. The
// owner reference proves nothing (a tenant can copy it): the driver knows
// its Job by its keyed name and tenantjobs.Mine.
func Build(s Spec, owner metav1.OwnerReference) *batchv1.Job {
	owner.Controller, owner.BlockOwnerDeletion = ptr(true), ptr(true)
	pod := tenantjobs.Pod{
		Labels: Labels(s.RestoreJobUID),
		Containers: []tenantjobs.Container{{
			Name: ContainerName, Image: s.Image, Args: append([]string{step.Subcommand}, s.Options().Args()...),
			Env:           tenantjobs.CredentialsEnv(s.Object.SecretName, s.CAPEM),
			Mounts:        []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}},
			RequestMemory: "128Mi", LimitMemory: s.memoryLimit(),
		}},
		Volumes: []corev1.Volume{tenantjobs.Scratch("work", WorkDirSize(s))},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.JobName, Labels: Labels(s.RestoreJobUID),
			Annotations:     map[string]string{"etcd-backup-driver.cozystack.io/restore-job": s.RestoreJobName},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: tenantjobs.JobSpec(pod, s.Deadline, TTLAfterFinished),
	}
}

func ptr[T any](v T) *T { return &v }
