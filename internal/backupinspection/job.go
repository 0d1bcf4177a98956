package backupinspection

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/inspectjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/snapshotinspect"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// jobName is the inspection Job's name for b: a MAC of the Backup's UID
// under the active provenance key, which the tenant does not hold, so no
// one can create a Job of that name before the driver does. A key
// rotation during an inspection only makes the driver start another one.
func (r *Reconciler) jobName(ctx context.Context, b *backupsv1alpha1.Backup) (string, error) {
	_, key, err := r.Keys.Active(ctx)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("etcd-backup-driver inspection job\n" + string(b.UID)))
	sum := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:10])
	return "etcd-inspect-" + strings.ToLower(sum), nil
}

// spec is the Job the driver builds for b.
func (r *Reconciler) spec(b *backupsv1alpha1.Backup, name string, p strategypolicy.Policy) (inspectjob.Spec, error) {
	src, err := artifact.Resolve(b)
	if err != nil {
		return inspectjob.Spec{}, err
	}
	httpAllowed := p.AllowsHTTP(src.Endpoint)
	if err := r.Policy.CheckURL(src.Endpoint, httpAllowed); err != nil {
		return inspectjob.Spec{}, err
	}
	o := inspectjob.Object{Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Key, Region: src.Region,
		PathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle, SecretName: src.SecretName}
	if a := b.Status.Artifact; a != nil {
		o.Size, o.SHA256 = a.SizeBytes, a.Checksum
	}
	if o.Size <= 0 || o.SHA256 == "" {
		return inspectjob.Spec{}, fmt.Errorf("the Backup records no size or checksum of its object")
	}
	return inspectjob.Spec{
		Namespace: b.Namespace, JobName: name, BackupName: b.Name, BackupUID: b.UID, Image: r.Image, Object: o,
		Deadline: r.deadline(), AllowedEndpointCIDRs: r.AllowedEndpointCIDRs, AllowHTTP: httpAllowed, CAPEM: r.S3CAPEM,
	}, nil
}

// inspect follows b's Job: creates it, waits for it, records its end.
func (r *Reconciler) inspect(ctx context.Context, b *backupsv1alpha1.Backup, p strategypolicy.Policy) (ctrl.Result, error) {
	name, err := r.jobName(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	spec, err := r.spec(b, name, p)
	if err != nil {
		return ctrl.Result{}, r.refuse(ctx, b, backupsv1alpha1.BackupReasonInspectionRefused,
			"the snapshot cannot be inspected: "+err.Error())
	}
	want := inspectjob.Build(spec)
	var job batchv1.Job
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, &job)
	if apierrors.IsNotFound(err) {
		if running, err := r.running(ctx); err != nil || running >= max(r.MaxJobs, 1) {
			if err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: slotRecheck}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending,
				fmt.Sprintf("waiting for a slot: %d inspections may run at once (--max-inspection-jobs)", max(r.MaxJobs, 1)))
		}
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("create inspection Job %s/%s: %w", b.Namespace, name, err)
		}
		log.FromContext(ctx).Info("inspecting the snapshot", "job", name)
		return ctrl.Result{}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending,
			"inspecting the snapshot in Job "+name)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !built(&job, want, b) {
		return ctrl.Result{}, r.refuse(ctx, b, backupsv1alpha1.BackupReasonInspectionRefused,
			"Job "+name+" is not the inspection Job the driver builds for this Backup (it was replaced or edited): delete it and the driver inspects again")
	}
	switch outcome, why := inspectjob.OutcomeOf(&job); outcome {
	case inspectjob.Running:
		return ctrl.Result{}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending,
			"inspecting the snapshot in Job "+name)
	case inspectjob.Inspected:
		return ctrl.Result{}, r.record(ctx, b, &job, p)
	case inspectjob.Refused:
		return ctrl.Result{}, r.failed(ctx, b, &job, backupsv1alpha1.BackupReasonInspectionRefused, why)
	default:
		return ctrl.Result{}, r.failed(ctx, b, &job, backupsv1alpha1.BackupReasonInspectionFailed, why)
	}
}

// slotRecheck is how soon a Backup waiting for an inspection slot looks
// again.
const slotRecheck = 20 * time.Second

// running counts the inspection Jobs that have not ended.
func (r *Reconciler) running(ctx context.Context) (int, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.HasLabels{backupsv1alpha1.InspectionLabel}); err != nil {
		return 0, fmt.Errorf("list inspection Jobs: %w", err)
	}
	n := 0
	for i := range jobs.Items {
		if o, _ := inspectjob.OutcomeOf(&jobs.Items[i]); o == inspectjob.Running && jobs.Items[i].DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// built reports whether job is the one the driver builds for b: owned by
// b (its UID), labelled for it, and running exactly want's Pod template
// (image, command, arguments, environment, volumes). A look-alike a
// tenant made under the name is never read.
func built(job, want *batchv1.Job, b *backupsv1alpha1.Backup) bool {
	if !ownedBy(job, b.UID) || job.Labels[backupsv1alpha1.InspectionLabel] != string(b.UID) {
		return false
	}
	got, exp := job.Spec.Template.Spec, want.Spec.Template.Spec
	return runsContainers(got, exp, true) && equality.Semantic.DeepEqual(got.Volumes, exp.Volumes)
}

// report reads the report of job's succeeded Pod.
func (r *Reconciler) report(ctx context.Context, job *batchv1.Job, wantSucceeded bool) (snapshotinspect.Report, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return snapshotinspect.Report{}, fmt.Errorf("list the inspection Job's Pods: %w", err)
	}
	var last error = fmt.Errorf("the inspection Job %s has no Pod with a report", job.Name)
	for i := range pods.Items {
		p := &pods.Items[i]
		owner := metav1.GetControllerOf(p)
		if owner == nil || owner.UID != job.UID || !runsTemplate(p, job) {
			continue
		}
		if wantSucceeded && p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		rep, err := inspectjob.ReportOf(p)
		if err == nil {
			return rep, nil
		}
		last = err
	}
	return snapshotinspect.Report{}, last
}

// runsTemplate: the Pod runs the Job's containers as built (a Pod a tenant
// made with the Job as its owner runs something else).
func runsTemplate(p *corev1.Pod, job *batchv1.Job) bool {
	return runsContainers(p.Spec, job.Spec.Template.Spec, false)
}

// runsContainers: spec runs want's containers (image, command and
// arguments; with full, their environment and mounts too) and no init
// containers.
func runsContainers(spec, want corev1.PodSpec, full bool) bool {
	if len(spec.Containers) != len(want.Containers) || len(spec.InitContainers) != 0 {
		return false
	}
	for i, e := range want.Containers {
		g := spec.Containers[i]
		if g.Image != e.Image || !equality.Semantic.DeepEqual(g.Command, e.Command) || !equality.Semantic.DeepEqual(g.Args, e.Args) {
			return false
		}
		if full && (!equality.Semantic.DeepEqual(g.Env, e.Env) || !equality.Semantic.DeepEqual(g.VolumeMounts, e.VolumeMounts)) {
			return false
		}
	}
	return true
}

// ownedBy: o has an owner reference to uid.
func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// backupOwner is the name of the Backup o's owner references name, or "".
func backupOwner(o metav1.Object) string {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "Backup" && ref.APIVersion == backupsv1alpha1.GroupVersion.String() {
			return ref.Name
		}
	}
	return ""
}
