package cpfence

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// RestartTimeout bounds how long a restore waits for Kamaji to bring a
// restarted control plane back; past it the restore goes on and says so.
const RestartTimeout = 5 * time.Minute

// PodLabels select the kube-apiserver Pods of control plane name.
func PodLabels(name string) client.MatchingLabels {
	return client.MatchingLabels{kamajiv1alpha1.NameLabel: name, kamajiv1alpha1.ComponentLabel: kamajiv1alpha1.ComponentDeployment}
}

// restartRecord is the RestartedPodsAnnotation: when the restart began and
// which Pods it deleted.
type restartRecord struct {
	At   time.Time   `json:"at"`
	Pods []types.UID `json:"pods"`
}

func recordOf(t *kamajiv1alpha1.TenantControlPlane) (*restartRecord, error) {
	raw, ok := t.GetAnnotations()[backupsv1alpha1.RestartedPodsAnnotation]
	if !ok {
		return nil, nil
	}
	var r restartRecord
	if len(raw) > 4096 {
		return nil, fmt.Errorf("annotation %s is too long", backupsv1alpha1.RestartedPodsAnnotation)
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", backupsv1alpha1.RestartedPodsAnnotation, err)
	}
	return &r, nil
}

// Progress is where a control plane's restart stands.
type Progress int

const (
	// NotRestarted: no restart was recorded.
	NotRestarted Progress = iota
	// Restarting: the recorded Pods are not all gone, or no new one is
	// Ready yet.
	Restarting
	// Restarted: every recorded Pod is gone and a new one is Ready (or
	// there was none to restart).
	Restarted
	// RestartTimedOut: RestartTimeout passed while Restarting.
	RestartTimedOut
)

// RestartProgress judges t's restart from its Pods as they are now.
func RestartProgress(t *kamajiv1alpha1.TenantControlPlane, pods []corev1.Pod, now time.Time) Progress {
	rec, err := recordOf(t)
	if rec == nil && err == nil {
		return NotRestarted
	}
	if err != nil {
		// A record the driver cannot read is not a restart it can follow.
		return RestartTimedOut
	}
	if len(rec.Pods) == 0 {
		return Restarted
	}
	oldLeft, newReady := false, false
	for i := range pods {
		p := &pods[i]
		if slices.Contains(rec.Pods, p.UID) {
			oldLeft = true
		} else if p.DeletionTimestamp.IsZero() && podReady(p) {
			newReady = true
		}
	}
	switch {
	case !oldLeft && newReady:
		return Restarted
	case !now.Before(rec.At.Add(RestartTimeout)):
		return RestartTimedOut
	}
	return Restarting
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Restart records t's current kube-apiserver Pods on t, then deletes them
// (each by UID, never a Pod made since). Repeating it after a crash deletes
// what is left of the recorded Pods and nothing else.
func Restart(ctx context.Context, c client.Client, t *kamajiv1alpha1.TenantControlPlane, pods []corev1.Pod, now time.Time) error {
	rec, err := recordOf(t)
	if err != nil {
		return err
	}
	if rec == nil {
		rec = &restartRecord{At: now.UTC().Truncate(time.Second)}
		for i := range pods {
			if pods[i].DeletionTimestamp.IsZero() {
				rec.Pods = append(rec.Pods, pods[i].UID)
			}
		}
		raw, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
		ann := t.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[backupsv1alpha1.RestartedPodsAnnotation] = string(raw)
		t.SetAnnotations(ann)
		if err := c.Patch(ctx, t, patch); err != nil {
			return fmt.Errorf("record the restart of TenantControlPlane %s: %w", Key(t), err)
		}
	}
	for i := range pods {
		p := &pods[i]
		if !slices.Contains(rec.Pods, p.UID) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		uid := p.UID
		if err := c.Delete(ctx, p, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("restart control plane %s: delete Pod %s: %w", Key(t), p.Name, err)
		}
	}
	return nil
}
