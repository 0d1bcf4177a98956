// Package rehearsaljob builds the Job of a dry-run RestoreJob: in the
// tenant's namespace, from the driver's own image, it runs
// `/etcd-stage rehearse` (internal/rehearse), which stages the Backup's
// snapshot exactly as a real restore would, boots a throwaway etcd from
// it on loopback inside the Pod, reads it back and reports what it holds.
// Nothing live is touched: the Pod has no service account token and no
// credentials but the bucket's read keys, and works in an emptyDir.
//
// The Job is hardened as the staging Job is (non-root, read-only root
// filesystem, no capabilities, seccomp, bounded CPU and memory), ends at
// once when the bytes are refused (ExitRefused, podFailurePolicy) and
// retries everything else a little.
//
// The tenant can create Jobs in its namespace, with any labels. The
// driver names its Job at random (NewName) and finds it again only by
// Owned: the label, a controller reference to the RestoreJob's UID, and
// the Pod template it built, all together.
package rehearsaljob

import (
	"reflect"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearse"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/stagingjob"
)

// Paths in the Pod.
const (
	// Command is the binary in the driver's image.
	Command = stagingjob.Command
	// WorkDir is where the emptyDir is mounted.
	WorkDir = "/rehearsal"
	// TerminationLog is where the binary writes its report.
	TerminationLog = stagingjob.TerminationLog
	// ContainerName is the Job's one container.
	ContainerName = "rehearse"
)

// Bounds of the Job.
const (
	ExitRefused      = rehearse.ExitRefused
	BackoffLimit     = 2
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
	Object         stagingjob.Object
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
func NewName() string { return stagingjob.RandomName("etcd-rehearsal-") }

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
	o := rehearse.Options{WorkDir: WorkDir, Staging: staging.Options{
		Endpoint: s.Object.Endpoint, Bucket: s.Object.Bucket, Key: s.Object.Key, Region: s.Object.Region, PathStyle: s.Object.PathStyle,
		Size: s.Object.Size, SHA256: strings.TrimPrefix(s.Object.SHA256, "sha256:"),
		AllowedEndpointCIDRs: s.AllowedEndpointCIDRs, AllowHTTP: s.AllowHTTP, TerminationLog: TerminationLog,
	}}
	if s.LiveRevision > 0 {
		o.Staging.RevisionFloor = s.LiveRevision
	} else {
		o.Staging.BumpRevision = staging.UnknownLiveBump
	}
	return o
}

// Build returns the Job of s, controlled by the RestoreJob owner.
func Build(s Spec, owner metav1.OwnerReference) *batchv1.Job {
	deadline := int64(max(s.Deadline/time.Second, 60))
	sizeLimit := WorkDirSize(s.Object.Size)
	owner.Controller, owner.BlockOwnerDeletion = ptr(true), ptr(true)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.JobName, Labels: Labels(s.RestoreJobUID),
			Annotations:     map[string]string{"etcd-backup-driver.cozystack.io/restore-job": s.RestoreJobName},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(BackoffLimit)),
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: ptr(int32(TTLAfterFinished / time.Second)),
			PodFailurePolicy:        stagingjob.FailurePolicy(ExitRefused),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(s.RestoreJobUID)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr(false),
					EnableServiceLinks:           ptr(false),
					SecurityContext:              stagingjob.PodSecurityContext(),
					Containers: []corev1.Container{{
						Name: ContainerName, Image: s.Image, Command: []string{Command},
						Args: append([]string{rehearse.Subcommand}, s.Options().Args()...), Env: stagingjob.CredentialsEnv(s.Object.SecretName, s.CAPEM),
						ImagePullPolicy:          corev1.PullIfNotPresent,
						TerminationMessagePath:   TerminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						VolumeMounts:             []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}},
						Resources:                stagingjob.Resources("128Mi", MemoryLimit),
						SecurityContext:          stagingjob.ContainerSecurityContext(),
					}},
					Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &sizeLimit}}}},
				},
			},
		},
	}
}

// Owned reports whether j is the rehearsal Job the driver built for the
// RestoreJob of uid as want: it carries the label with that UID, its
// controller is that RestoreJob, and its Pod template runs exactly want's
// image, command, arguments and environment. A Job a tenant made with the
// same label (it cannot set a controller reference it may not also forge,
// and could point the command elsewhere) fails one of these and is never
// read.
func Owned(j *batchv1.Job, uid string, want *batchv1.Job) bool {
	if j.Labels[backupsv1alpha1.RehearsalLabel] != uid {
		return false
	}
	owner := metav1.GetControllerOf(j)
	if owner == nil || string(owner.UID) != uid || owner.Kind != "RestoreJob" || owner.APIVersion != backupsv1alpha1.GroupVersion.String() {
		return false
	}
	got, exp := j.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	if len(got) != 1 || len(exp) != 1 || len(j.Spec.Template.Spec.InitContainers) != 0 {
		return false
	}
	return got[0].Image == exp[0].Image && reflect.DeepEqual(got[0].Command, exp[0].Command) &&
		reflect.DeepEqual(got[0].Args, exp[0].Args) && reflect.DeepEqual(got[0].Env, exp[0].Env) &&
		got[0].TerminationMessagePath == exp[0].TerminationMessagePath
}

func ptr[T any](v T) *T { return &v }
