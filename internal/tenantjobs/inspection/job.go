package inspection

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// jobName is the inspection Job's name for b: keyed with the active
// provenance key (tenantjobs.KeyedName), which the tenant does not hold,
// so no one can create a Job of that name before the driver does.
func (r *Reconciler) jobName(ctx context.Context, b *backupsv1alpha1.Backup) (string, error) {
	_, key, err := r.Keys.Active(ctx)
	if err != nil {
		return "", err
	}
	return tenantjobs.KeyedName("etcd-inspect-", key, "etcd-backup-driver inspection job", b.UID), nil
}

// spec is the Job the driver builds for b.
func (r *Reconciler) spec(b *backupsv1alpha1.Backup, name string, p strategypolicy.Policy) (Spec, error) {
	src, err := artifact.Resolve(b)
	if err != nil {
		return Spec{}, err
	}
	httpAllowed := p.AllowsHTTP(src.Endpoint)
	if err := r.Policy.CheckURL(src.Endpoint, httpAllowed); err != nil {
		return Spec{}, err
	}
	o := stagingstep.Object{Endpoint: src.Endpoint, Bucket: src.Bucket, Key: src.Key, Region: src.Region,
		PathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle, SecretName: src.SecretName}
	if a := b.Status.Artifact; a != nil {
		o.Size, o.SHA256 = a.SizeBytes, a.Checksum
	}
	if o.Size <= 0 || o.SHA256 == "" {
		return Spec{}, fmt.Errorf("the Backup records no size or checksum of its object")
	}
	return Spec{
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
	want := Build(spec)
	var job batchv1.Job
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, &job)
	if apierrors.IsNotFound(err) {
		if wait := r.retryWait(b); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		wait, err := r.waitForSlot(ctx, b.Namespace)
		if err != nil {
			return ctrl.Result{}, err
		}
		if wait != "" {
			return ctrl.Result{RequeueAfter: slotRecheck}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending,
				"waiting for a slot: "+wait)
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
	if !tenantjobs.Mine(&job, want) {
		// Not evidence against the Backup: an earlier release built it
		// (another image or arguments), or someone replaced it. It is not
		// the driver's to delete; the driver inspects again once it is gone.
		return ctrl.Result{RequeueAfter: retryFirst}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionRetrying,
			"Job "+name+" is not the inspection Job the driver builds for this Backup (an earlier release built it, or it was replaced or edited): "+
				"the driver inspects again when it is gone (delete it, or it goes a day after it ended); the Backup still counts as good")
	}
	switch outcome, why := tenantjobs.OutcomeOf(&job); outcome {
	case tenantjobs.Running:
		return ctrl.Result{}, r.setInspected(ctx, b, metav1.ConditionFalse, backupsv1alpha1.BackupReasonInspectionPending,
			"inspecting the snapshot in Job "+name)
	case tenantjobs.Succeeded:
		return r.record(ctx, b, &job, p)
	default:
		return r.ended(ctx, b, &job, outcome, why)
	}
}

// report reads the report of job's newest Pod (tenantjobs.ReadReport).
func (r *Reconciler) report(ctx context.Context, job *batchv1.Job) (step.Report, error) {
	var rep step.Report
	err := tenantjobs.ReadReport(ctx, r.APIReader, job, ContainerName, &rep)
	return rep, err
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
