package plankeeper

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// migrate moves the settings the Plan holds in fields of the driver's
// earlier Plan CRD (retention, drill, the scheduler's, the time zone) to
// where they live now, once: it reads the Plan unstructured (the typed
// Plan has no such fields), writes the annotations (and the time zone as
// the CRON_TZ= prefix of spec.schedule.cron) in one patch, says so in an
// Event, and notes in the record that the Plan was read. When an
// annotation already says something different it writes nothing and
// leaves the conflicts for the PolicyValid condition; it looks again at
// the next reconcile. On Cozystack's Plan CRD the fields are pruned and
// there is nothing to move.
func (r *Reconciler) migrate(ctx context.Context, w *work) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(backupsv1alpha1.GroupVersion.WithKind("Plan"))
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(w.plan), u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read Plan %s/%s for settings of the earlier CRD: %w", w.plan.Namespace, w.plan.Name, err)
	}
	if u.GetUID() != w.plan.UID {
		return nil // another Plan of the same name: the next reconcile reads it
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	m := planpolicy.Migrate(spec, w.plan.Annotations)
	if len(m.Conflicts) > 0 {
		w.conflicts = m.Conflicts
		return nil
	}
	if !m.Empty() {
		base := w.plan.DeepCopy()
		if w.plan.Annotations == nil {
			w.plan.Annotations = map[string]string{}
		}
		for k, v := range m.Annotations {
			w.plan.Annotations[k] = v
		}
		if m.Cron != "" {
			w.plan.Spec.Schedule.Cron = m.Cron
		}
		if err := r.Client.Patch(ctx, w.plan, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("move the settings of Plan %s/%s to annotations: %w", w.plan.Namespace, w.plan.Name, err)
		}
		var moved []string
		for _, l := range m.Moved {
			to := l.Annotation
			if to == "" {
				to = "spec.schedule.cron"
			}
			moved = append(moved, fmt.Sprintf("%s (%s) to %s", l.Field, l.Value, to))
		}
		msg := "moved settings of the driver's earlier Plan CRD to where they live now: " + strings.Join(moved, ", ") +
			"; the old fields are no longer read"
		log.FromContext(ctx).Info("moved a Plan's settings to annotations", "moved", len(m.Moved))
		r.Recorder.Eventf(w.plan, nil, corev1.EventTypeNormal, backupsv1alpha1.PlanReasonSettingsMigrated, "Migrate", "%s", textlimit.Note(msg))
	}
	w.rec.SettingsRead = true
	return nil
}
