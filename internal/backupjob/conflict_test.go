package backupjob_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

// A status write that meets a newer version of the job (under load, the
// cache is a moment behind the driver's own last write) is decided again on
// the newer object, not reported as a reconcile error: at a thousand
// tenants those errors, each logged with a stack trace, hid real ones.
func TestStatusConflictIsDecidedAgainWithoutReconcileError(t *testing.T) {
	var patches atomic.Int32
	decidedAgainWithoutError(t, "conflicted", func(jobName string) interceptor.Funcs {
		return interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if _, ok := obj.(*backupsv1alpha1.BackupJob); ok && obj.GetName() == jobName && patches.Add(1) <= 2 {
					return apierrors.NewConflict(backupsv1alpha1.GroupVersion.WithResource("backupjobs").GroupResource(),
						obj.GetName(), errors.New("the object has been modified"))
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}
	})
	NewWithT(t).Expect(patches.Load()).To(BeNumerically(">", 2), "both injected conflicts were met")
}

// The snapshot's hand-over to its Backup that meets a newer snapshot (the
// operator's last status write, not in the cache yet) is decided again,
// not reported as a reconcile error. Seen failing before: the conflict was
// returned, logged with a stack trace and counted (and the test above
// failed now and then on it).
func TestHandOverConflictIsDecidedAgainWithoutReconcileError(t *testing.T) {
	var patches atomic.Int32
	decidedAgainWithoutError(t, "handover-conflict", func(string) interceptor.Funcs {
		return interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, ok := obj.(*etcdv1alpha2.EtcdSnapshot); ok && obj.GetLabels()[backupsv1alpha1.SnapshotHistoryLabel] == "true" && patches.Add(1) == 1 {
					return apierrors.NewConflict(etcdv1alpha2.GroupVersion.WithResource("etcdsnapshots").GroupResource(),
						obj.GetName(), errors.New("the object has been modified"))
				}
				return c.Patch(ctx, obj, patch, opts...)
			},
		}
	})
	NewWithT(t).Expect(patches.Load()).To(BeNumerically(">", 1), "the injected conflict was met")
}

// decidedAgainWithoutError runs job name to success through a driver whose
// writes pass through the interceptors funcs makes, and expects no
// reconcile error.
func decidedAgainWithoutError(t *testing.T, name string, funcs func(job string) interceptor.Funcs) {
	w := newWorld(t)
	w.everything()
	job := w.job(name)
	w.startDriver(func(o *manager.Options) {
		o.WrapClient = func(c client.Client) client.Client { return wrap(c, funcs(job.Name)) }
	})
	before := reconcileErrors(w.g, "backupjob")
	w.create(job)
	snap := w.awaitSnapshot(job)
	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	w.g.Expect(reconcileErrors(w.g, "backupjob") - before).To(BeZero())
}

// reconcileErrors is controller-runtime's reconcile error count for the
// named controller, from the process's metrics registry.
func reconcileErrors(g *WithT, controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
