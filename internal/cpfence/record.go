package cpfence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
)

// A restore writes down which control planes it fences before it fences
// them, in a ConfigMap of the driver's own namespace, where tenants cannot
// write; the hand-back restarts and lifts exactly those, read from there,
// never from a fresh search. Between the fence and the lift, a namespace
// may lose the sharing label (its control plane would be left read-only
// for good) or gain it (its control plane, never fenced, would join the
// hand-back).

// Labels of the records: ComponentLabel=RecordComponent, with the
// RestoreJob's namespace (backupsv1alpha1.CaptureForLabel) and UID
// (backupsv1alpha1.RestoreJobUIDLabel), as its capture has, so a record's
// change wakes its restore.
const (
	ComponentLabel  = "app.kubernetes.io/component"
	RecordComponent = "etcd-restore-fence"
	recordKey       = "fenced-control-planes.json"
)

// Ref is one fenced control plane, by UID: one re-created under the same
// name is not the one fenced.
type Ref struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// Record is what one restore fenced, as read from its ConfigMap.
type Record struct {
	Planes []Ref
	cm     *corev1.ConfigMap
}

// has reports whether the record holds t (namespace, name and UID).
func (rec *Record) has(t *kamajiv1alpha1.TenantControlPlane) bool {
	return rec != nil && slices.Contains(rec.Planes, refOf(t))
}

func refOf(t *kamajiv1alpha1.TenantControlPlane) Ref {
	return Ref{Namespace: t.Namespace, Name: t.Name, UID: t.UID}
}

// RecordName is the record's name for job in the driver's namespace:
// unique per RestoreJob (namespace, name and UID).
func RecordName(job metav1.Object) string {
	return names.Subdomain(names.MaxSubdomain, "restore-fence", job.GetNamespace(), job.GetName(), names.Hash(string(job.GetUID())))
}

// ReadRecord reads job's record in namespace driverNS; nil when it has
// none. A record that is not job's (labels), or does not parse, is an
// error: the fence it stands for is lifted only by hand.
func ReadRecord(ctx context.Context, r client.Reader, driverNS string, job metav1.Object) (*Record, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: driverNS, Name: RecordName(job)}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the fence record of RestoreJob %s/%s: %w", job.GetNamespace(), job.GetName(), err)
	}
	if cm.Labels[backupsv1alpha1.RestoreJobUIDLabel] != string(job.GetUID()) || cm.Labels[ComponentLabel] != RecordComponent {
		return nil, fmt.Errorf("ConfigMap %s/%s is not the fence record of RestoreJob %s/%s", cm.Namespace, cm.Name, job.GetNamespace(), job.GetName())
	}
	rec := &Record{cm: &cm}
	dec := json.NewDecoder(bytes.NewReader([]byte(cm.Data[recordKey])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec.Planes); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, recordKey, err)
	}
	return rec, nil
}

// note writes the record of job so that it holds every plane of p (and
// what it held), before any is fenced: created when p has no record, else
// updated under the resourceVersion read (a record the view has not seen
// yet is a conflict, retried).
func note(ctx context.Context, c client.Client, driverNS string, job metav1.Object, p Planes) error {
	want := []Ref{}
	if p.record != nil {
		want = append(want, p.record.Planes...)
	}
	for i := range p.Items {
		if r := refOf(&p.Items[i]); !slices.Contains(want, r) {
			want = append(want, r)
		}
	}
	if p.record != nil && len(want) == len(p.record.Planes) {
		return nil
	}
	raw, err := json.Marshal(want)
	if err != nil {
		return err
	}
	if p.record == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: driverNS, Name: RecordName(job), Labels: map[string]string{
				ComponentLabel:                      RecordComponent,
				backupsv1alpha1.CaptureForLabel:     job.GetNamespace(),
				backupsv1alpha1.RestoreJobNameLabel: names.LabelValue(job.GetName()),
				backupsv1alpha1.RestoreJobUIDLabel:  string(job.GetUID()),
			}},
			Data: map[string]string{recordKey: string(raw)},
		}
		if err := c.Create(ctx, cm); err != nil {
			return fmt.Errorf("record the control planes RestoreJob %s/%s fences: %w", job.GetNamespace(), job.GetName(), err)
		}
		return nil
	}
	cm := p.record.cm.DeepCopy()
	patch := client.MergeFromWithOptions(p.record.cm, client.MergeFromWithOptimisticLock{})
	cm.Data = map[string]string{recordKey: string(raw)}
	if err := c.Patch(ctx, cm, patch); err != nil {
		return fmt.Errorf("record the control planes RestoreJob %s/%s fences: %w", job.GetNamespace(), job.GetName(), err)
	}
	return nil
}

// FenceAll fences every control plane of p for job, each written down in
// job's record (in driverNS) before it is fenced.
func FenceAll(ctx context.Context, c client.Client, driverNS string, job metav1.Object, p Planes) error {
	if err := note(ctx, c, driverNS, job, p); err != nil {
		return err
	}
	for i := range p.Items {
		if err := Fence(ctx, c, &p.Items[i], job.GetUID()); err != nil {
			return err
		}
	}
	return nil
}

// DropRecord deletes p's record once nothing it holds is fenced by uid any
// more; it reports whether it deleted one.
func DropRecord(ctx context.Context, c client.Client, p Planes, uid types.UID) (bool, error) {
	if p.record == nil || len(p.FencedBy(uid)) > 0 {
		return false, nil
	}
	cm := p.record.cm
	if err := c.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete the fence record %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return true, nil
}
