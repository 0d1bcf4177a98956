package restore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// ---- the test's etcd-operator and Flux -----------------------------------

// operator plays the etcd-operator and helm-controller in one namespace:
// completes snapshots, removes the PVCs of a deleted cluster, brings a
// re-created cluster up, and marks resumed HelmReleases Ready.
type operator struct {
	ns string
	mu sync.Mutex
	// holdBootstrap keeps re-created clusters from becoming healthy.
	holdBootstrap bool
	// failSnapshots fails every EtcdSnapshot.
	failSnapshots bool
	// bootstrapAfter, when set, lets a re-created cluster become healthy
	// only once a RestoreJob of the namespace reports this Ready reason
	// (so every waiting state is seen, deterministically).
	bootstrapAfter backupsv1alpha1.RestoreReason
	// leaveSnapshot is a snapshot the operator does not complete.
	leaveSnapshot string
	stop          context.CancelFunc
}

func startOperator(t *testing.T, ns string) *operator {
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{ns: ns, stop: cancel}
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			op.step(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return op
}

func (op *operator) set(f func(op *operator)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

func (op *operator) step(ctx context.Context) {
	op.mu.Lock()
	hold, fail, after, leave := op.holdBootstrap, op.failSnapshots, op.bootstrapAfter, op.leaveSnapshot
	op.mu.Unlock()
	if after != "" && !hold {
		hold = !anyJobReports(ctx, op.ns, after)
	}
	var snaps etcdv1alpha2.EtcdSnapshotList
	if k.List(ctx, &snaps, client.InNamespace(op.ns)) == nil {
		for i := range snaps.Items {
			s := &snaps.Items[i]
			if s.Status.Phase != "" || s.Name == leave {
				continue
			}
			if fail {
				s.Status.Phase = etcdv1alpha2.SnapshotPhaseFailed
				s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "JobFailed",
					Message: "snapshot job failed", LastTransitionTime: metav1.Now()}}
			} else {
				key := artifact.ObjectKey(s.Spec.Destination.S3.Key, s.Name)
				s.Status.Phase = etcdv1alpha2.SnapshotPhaseComplete
				s.Status.Artifact = &etcdv1alpha2.SnapshotArtifact{URI: artifact.URI(s.Spec.Destination.S3.Bucket, key),
					SizeBytes: 4096, Checksum: "sha256:" + strings.Repeat("ab", 32)}
			}
			_ = k.Status().Update(ctx, s)
		}
	}
	c := &etcdv1alpha2.EtcdCluster{}
	err := k.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: clusterName}, c)
	switch {
	case apierrors.IsNotFound(err):
		var pvcs corev1.PersistentVolumeClaimList
		if k.List(ctx, &pvcs, client.InNamespace(op.ns)) == nil {
			for i := range pvcs.Items {
				p := &pvcs.Items[i]
				if len(p.Finalizers) > 0 {
					p.Finalizers = nil
					_ = k.Update(ctx, p)
				}
				_ = k.Delete(ctx, p)
			}
		}
	case err == nil && c.Spec.Bootstrap != nil && !hold && !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable):
		_ = markHealthy(ctx, client.ObjectKey{Namespace: op.ns, Name: clusterName})
	}
	hr := &helmv2.HelmRelease{}
	if k.Get(ctx, client.ObjectKey{Namespace: op.ns, Name: testApp}, hr) == nil && !hr.Spec.Suspend {
		ready := meta.FindStatusCondition(hr.Status.Conditions, "Ready")
		if ready == nil || ready.ObservedGeneration < hr.Generation {
			meta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
				Reason: "UpgradeSucceeded", Message: "release reconciled", ObservedGeneration: hr.Generation})
			_ = k.Status().Update(ctx, hr)
		}
	}
}
