package inspection

import (
	"context"
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupdeletion"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/contentdrop"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// failed records a Job that ended without a manifest.
func (r *Reconciler) failed(ctx context.Context, b *backupsv1alpha1.Backup, job *batchv1.Job, reason, why string) error {
	msg := "the inspection Job " + job.Name + " failed"
	if rep, err := r.report(ctx, job); err == nil && rep.Message != "" {
		msg += ": " + string(rep.Reason) + ": " + rep.Message
	} else if why != "" {
		msg += ": " + why
	}
	msg += "; this Backup does not count as a good one. The driver inspects it again when the Job is gone (deleted, or a day after it ended)"
	return r.refuse(ctx, b, reason, msg)
}

// record signs the Job's manifest, compares it with the previous good one
// and writes both, with the Inspected and ContentDrop conditions, in one
// update of the Backup. The hold on the previous good Backup is written
// first: a crash in between leaves a hold and no record, and the next
// pass finds the same previous Backup and writes the record.
func (r *Reconciler) record(ctx context.Context, b *backupsv1alpha1.Backup, job *batchv1.Job, p strategypolicy.Policy) (ctrl.Result, error) {
	rep, err := r.report(ctx, job)
	if err != nil {
		return r.retry(ctx, b, job, "the inspection Job "+job.Name+" succeeded but its report cannot be read: "+err.Error())
	}
	if rep.Manifest == nil {
		return r.retry(ctx, b, job, "the inspection Job "+job.Name+" succeeded but its report carries no manifest")
	}
	return ctrl.Result{}, r.write(ctx, b, job, rep.Manifest, p)
}

// write signs m, compares it with the previous good manifest and records
// both (see record).
func (r *Reconciler) write(ctx context.Context, b *backupsv1alpha1.Backup, job *batchv1.Job, reported *driverv1alpha1.BackupManifest, p strategypolicy.Policy) error {
	m := reported.DeepCopy()
	m.InspectedAt = metav1.NewTime(r.now().UTC().Truncate(1e9))
	if job.Status.CompletionTime != nil {
		m.InspectedAt = *job.Status.CompletionTime
	}
	if err := provenance.SealManifest(ctx, r.Keys, b, m); err != nil {
		return err
	}
	prev, err := r.previousGood(ctx, b)
	if err != nil {
		return err
	}
	drop := metav1.Condition{Type: backupsv1alpha1.BackupConditionContentDrop, Status: metav1.ConditionFalse,
		Reason: backupsv1alpha1.BackupReasonContentUnchanged, Message: "no earlier inspected Backup of this application and plan to compare with"}
	var drops []contentdrop.Drop
	if prev != nil {
		drops = contentdrop.Compare(artifact.Manifest(prev), m, contentdrop.ThresholdsOf(p.Inspection))
		drop.Message = "compared with Backup " + prev.Name + ": nothing dropped beyond the strategy's thresholds"
	}
	if len(drops) > 0 {
		if err := r.hold(ctx, prev, b.Name); err != nil {
			return err
		}
		drop.Status, drop.Reason = metav1.ConditionTrue, backupsv1alpha1.BackupReasonContentDropped
		drop.Message = textlimit.Message(contentdrop.Message(drops, prev.Name) +
			"; Backup " + prev.Name + " is held from retention until its annotation " + driverv1alpha1.ContentDropHoldAnnotation + " is removed")
	}
	before := b.DeepCopy()
	if err := artifact.SetManifest(b, m); err != nil {
		return err
	}
	if err := artifact.SetInspectionRetry(b, nil); err != nil {
		return err
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.BackupConditionInspected,
		Status: metav1.ConditionTrue, Reason: backupsv1alpha1.BackupReasonInspected, Message: textlimit.Message(summary(m))})
	meta.SetStatusCondition(&b.Status.Conditions, drop)
	if err := r.patch(ctx, before, b); err != nil {
		return err
	}
	inspectionsTotal.WithLabelValues(backupsv1alpha1.BackupReasonInspected).Inc()
	log.FromContext(ctx).Info("recorded the Backup's manifest", "revision", m.Revision, "keys", m.Keys, "contentDrop", len(drops) > 0)
	if len(drops) > 0 {
		contentDropsTotal.Inc()
		r.Recorder.Eventf(b, prev, "Warning", backupsv1alpha1.BackupReasonContentDropped, "Inspect", "%s", textlimit.Note(drop.Message))
	}
	return nil
}

// summary says what a manifest holds in a line.
func summary(m *driverv1alpha1.BackupManifest) string {
	parts := []string{fmt.Sprintf("revision %d, %d keys, %d bytes", m.Revision, m.Keys, m.DBSizeBytes)}
	for _, k := range m.Keyspaces {
		parts = append(parts, fmt.Sprintf("%s: %d objects in %d namespaces", k.Prefix, k.Objects, k.Namespaces))
	}
	if len(m.Keyspaces) == 0 {
		parts = append(parts, "no Kubernetes keyspace")
	}
	return strings.Join(parts, "; ")
}

// previousGood is the newest Backup of b's application and plan taken
// before b that is sound (goodbackup.Sound) with a manifest the driver
// signed (an inspection that failed never makes one), or nil. A Backup
// marked ContentDrop is sound: the next one compares with it, so a drop
// is reported once (the Backup before it is held).
func (r *Reconciler) previousGood(ctx context.Context, b *backupsv1alpha1.Backup) (*backupsv1alpha1.Backup, error) {
	var list backupsv1alpha1.BackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return nil, err
	}
	var earlier []*backupsv1alpha1.Backup
	for i := range list.Items {
		c := &list.Items[i]
		if c.UID != b.UID && backupdeletion.IsEtcdBackup(c) && artifact.Manifest(c) != nil &&
			meta.IsStatusConditionTrue(c.Status.Conditions, backupsv1alpha1.BackupConditionInspected) &&
			c.Spec.ApplicationRef.Name == b.Spec.ApplicationRef.Name && planOf(c) == planOf(b) && goodbackup.Newer(b, c) {
			earlier = append(earlier, c)
		}
	}
	sort.Slice(earlier, func(i, j int) bool { return goodbackup.Newer(earlier[i], earlier[j]) })
	for _, c := range earlier {
		ok, err := provenance.VerifyManifest(ctx, r.Keys, c)
		if err != nil {
			return nil, err
		}
		if goodbackup.Sound(c, ok) {
			return c, nil
		}
	}
	return nil, nil
}

func planOf(b *backupsv1alpha1.Backup) string {
	if b.Spec.PlanRef == nil {
		return ""
	}
	return b.Spec.PlanRef.Name
}

// hold marks prev as kept from retention for the drop in Backup dropped,
// signed (contentdrop.Hold): a hold a tenant wrote first is replaced.
func (r *Reconciler) hold(ctx context.Context, prev *backupsv1alpha1.Backup, dropped string) error {
	before := prev.DeepCopy()
	if err := contentdrop.Hold(ctx, r.Keys, prev, dropped); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(before.Annotations, prev.Annotations) {
		return nil
	}
	return r.patch(ctx, before, prev)
}
