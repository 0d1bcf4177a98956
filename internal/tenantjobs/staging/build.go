// Package staging builds the Job (and its PersistentVolumeClaim) that
// stages a restore: in the tenant's namespace, before anything is
// destroyed, it streams the Backup's snapshot (and the safety Backup's)
// from S3, checks size, sha256 and etcd's integrity trailer against what
// the driver verified, raises the snapshot's revision above the live
// cluster's and marks everything below compacted (`etcd-stage`, the step
// in ./step), and leaves the result on the claim. The re-created
// EtcdCluster boots from that claim (spec.bootstrap.restore.source.pvc),
// so etcd starts from exactly the bytes that were checked: whoever holds
// the bucket key cannot swap the object after the check. The restore
// drives the Job (internal/restore, staging.go).
//
// The Job runs the driver's own image hardened as every tenant Job is
// (tenantjobs.JobSpec): no service account token, a non-root user with a
// read-only root filesystem, bounded CPU and memory, and a
// podFailurePolicy that ends it at once when the artifact is refused
// (report.ExitRefused, a code no crash produces) while network hiccups
// and crashes are retried.
package staging

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Files on the staging claim, and where the Job mounts it.
const (
	RestoreFile  = "restore.db"
	RollbackFile = "rollback.db"
	MountPath    = "/staging"
	// Command is the binary the Job runs, as every tenant Job does.
	Command = tenantjobs.Command
)

// Revision margins. UnknownLiveBump is etcd's own recommendation when the
// live revision cannot be read (1,000,000,000: more than any cluster
// writes between two backups). A rollback lands above anything the
// restored cluster can have reached in its short, fenced life.
const (
	UnknownLiveBump = step.UnknownLiveBump
	RollbackMargin  = 1_000_000_000
)

// Object is one S3 object to stage, as the driver verified it (every
// tenant Job's description of an object, the staging step's), under the
// name internal/restore knows it by.
type Object = step.Object

// Spec is what a staging Job is built from.
type Spec struct {
	// JobName and ClaimName are the Job's and the claim's names (NewName);
	// empty means Name of the RestoreJob's UID.
	JobName, ClaimName string
	Namespace          string
	RestoreJobName     string
	RestoreJobUID      types.UID
	Image              string
	Restore            Object
	// Rollback is the safety Backup's object, staged next to the restore's
	// so a rollback boots from verified, raised bytes too.
	Rollback *Object
	// LiveRevision is the live cluster's revision; 0 when it could not be
	// read (the revision is then raised by UnknownLiveBump).
	LiveRevision int64
	// StorageClassName of the claim: the cluster's members'.
	StorageClassName *string
	// Deadline bounds the Job (activeDeadlineSeconds).
	Deadline time.Duration
	// AllowedEndpointCIDRs and AllowHTTP are the driver's endpoint policy.
	AllowedEndpointCIDRs []string
	AllowHTTP            bool
	// CAPEM is the driver's extra S3 CA bundle (public certificates).
	CAPEM string
	// Point, when set, is the point Restore (the base) is replayed to
	// before it is staged (a restore to a point: point.go).
	Point *pointreplay.Point
}

// SourceAnnotation is the claim's annotation naming the S3 object a file on
// it was staged from (s3://bucket/key), for people reading the cluster.
func SourceAnnotation(file string) string { return "etcd-backup-driver.cozystack.io/source-" + file }

// TTLAfterFinished is how long a finished Job (and its Pods' logs) stays
// before Kubernetes removes it: the restore deletes only a Job that is
// still running when it hands back, and settles the claim without it.
const TTLAfterFinished = 24 * time.Hour

// Name was the Job's and the claim's name, derived from the RestoreJob's
// UID, which the tenant knows: it could make a Job and a claim at that name
// before the driver did, and have them taken for the driver's. A restore
// now stages under NewName's (its capture records them); Name stays for
// restores whose capture an earlier driver made.
func Name(uid types.UID) string { return "etcd-staging-" + names.Hash(string(uid)) }

// NewName is a fresh staging name no one can guess: "etcd-staging-" and
// 12 random characters (60 bits). A restore draws one for its Job and
// another for its claim when it captures the cluster, and records both in
// the capture, where tenants cannot read them; it creates the claim before
// the Job, so the claim's name, which the Job shows, tells nothing of the
// Job's.
func NewName() string { return tenantjobs.RandomName("etcd-staging-") }

// Labels mark the Job, its Pods and the claim as a restore's staging.
func Labels(uid types.UID) map[string]string {
	return tenantjobs.Labels(backupsv1alpha1.StagingLabel, string(uid), "etcd-staging")
}

// ClaimSize is room for both files twice over (a staged file is written
// next to its download before the rename) plus slack.
func ClaimSize(s Spec) resource.Quantity {
	n := s.Restore.Size
	if s.Rollback != nil {
		n += s.Rollback.Size
	}
	return *resource.NewQuantity(2*n+64<<20+pointRoom(s), resource.BinarySI)
}

// names are the Job's and the claim's names of s.
func (s Spec) names() (job, claim string) {
	job, claim = s.JobName, s.ClaimName
	if job == "" {
		job = Name(s.RestoreJobUID)
	}
	if claim == "" {
		claim = Name(s.RestoreJobUID)
	}
	return job, claim
}

// Build returns the claim and the Job of s.
func Build(s Spec) (*corev1.PersistentVolumeClaim, *batchv1.Job) {
	jobName, name := s.names()
	meta := metav1.ObjectMeta{Namespace: s.Namespace, Name: jobName, Labels: Labels(s.RestoreJobUID),
		Annotations: map[string]string{"etcd-backup-driver.cozystack.io/restore-job": s.RestoreJobName}}
	pvcMeta := *meta.DeepCopy()
	pvcMeta.Name = name
	pvcMeta.Annotations[SourceAnnotation(RestoreFile)] = "s3://" + s.Restore.Bucket + "/" + s.Restore.Key
	if s.Rollback != nil {
		pvcMeta.Annotations[SourceAnnotation(RollbackFile)] = "s3://" + s.Rollback.Bucket + "/" + s.Rollback.Key
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: pvcMeta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: s.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: ClaimSize(s)}},
		},
	}
	restorePlan, rollbackPlan := revisionPlans(s.LiveRevision)
	restore := container(s, restoreContainer, s.Restore, RestoreFile, restorePlan, s.Point)
	pod := tenantjobs.Pod{
		Labels:     Labels(s.RestoreJobUID),
		Containers: []tenantjobs.Container{restore},
		Volumes: []corev1.Volume{{Name: "staging", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
	}
	if s.Rollback != nil {
		pod.InitContainers = []tenantjobs.Container{container(s, "stage-rollback", *s.Rollback, RollbackFile, rollbackPlan, nil)}
	}
	return pvc, &batchv1.Job{ObjectMeta: *meta.DeepCopy(), Spec: tenantjobs.JobSpec(pod, s.Deadline, TTLAfterFinished)}
}

// revisionPlan is how far one staged file's revision is raised: above a
// floor, or by a fixed bump.
type revisionPlan struct{ floor, bump int64 }

// revisionPlans are the restore's and the rollback's.
func revisionPlans(live int64) (restore, rollback revisionPlan) {
	if live > 0 {
		return revisionPlan{floor: live}, revisionPlan{floor: live + RollbackMargin}
	}
	return revisionPlan{bump: UnknownLiveBump}, revisionPlan{bump: UnknownLiveBump + RollbackMargin}
}

// restoreContainer stages the restore's own file (FloorOf reads it).
const restoreContainer = "stage"

// container stages o into file, replayed to point first when there is
// one (with the memory that takes: point.go).
func container(s Spec, name string, o Object, file string, p revisionPlan, point *pointreplay.Point) tenantjobs.Container {
	opts := step.Options{
		RevisionFloor: p.floor, BumpRevision: p.bump, Out: MountPath + "/" + file, TerminationLog: report.TerminationLog,
	}.WithSource(o.Source(s.AllowedEndpointCIDRs, s.AllowHTTP))
	c := tenantjobs.Container{
		Name: name, Image: s.Image, Env: tenantjobs.CredentialsEnv(o.SecretName, s.CAPEM),
		Mounts:        []corev1.VolumeMount{{Name: "staging", MountPath: MountPath}},
		RequestMemory: "64Mi", LimitMemory: "256Mi",
	}
	if point != nil {
		opts.Point = *point
		c.RequestMemory, c.LimitMemory = pointMemory(o.Size)
	}
	c.Args = opts.Args()
	return c
}

// Describe says what s stages, for status messages.
func Describe(s Spec) string {
	msg := fmt.Sprintf("staging s3://%s/%s", s.Restore.Bucket, s.Restore.Key)
	if p := s.Point; p != nil {
		msg += fmt.Sprintf(" replayed to %s (chain s3://%s/%s)", p.Target, s.Restore.Bucket, p.Chain)
	}
	if s.Rollback != nil {
		msg += fmt.Sprintf(" and the safety snapshot s3://%s/%s", s.Rollback.Bucket, s.Rollback.Key)
	}
	_, claim := s.names()
	return msg + " onto PersistentVolumeClaim " + claim
}

// RecheckBudget is how far the live revision may move past the one a
// Job's snapshot was staged above before the purge is refused: half the
// margin the staging adds above it (step.DefaultMargin), so the other
// half covers the writes that still land while the old cluster stops.
const RecheckBudget = step.DefaultMargin / 2

// FloorOf is the live revision the restore's file of Job j was staged
// above (its --revision-floor), or 0 when it was raised by a fixed bump
// (the revision could not be read). It is read from the Pod template,
// which a Job never changes, not from an annotation.
func FloorOf(j *batchv1.Job) int64 {
	for _, c := range j.Spec.Template.Spec.Containers {
		if c.Name != restoreContainer {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--revision-floor="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return 0
}
