package backupjob_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/manager"
)

var errCrash = errors.New("injected crash")

// The first manager creates the snapshot and "crashes" before it can record
// anything; the second starts with a cache that does not show the snapshot
// yet. Deterministic naming must still yield exactly one snapshot.
func TestCrashAfterSnapshotCreateAndStaleCacheKeepOneSnapshot(t *testing.T) {
	w := newWorld(t)
	w.everything()
	job := w.job("crashy")

	var created atomic.Bool
	firstCtx, stopFirst := context.WithCancel(context.Background())
	w.startDriverCtx(firstCtx, func(o *manager.Options) {
		o.WrapClient = func(c client.Client) client.Client {
			return wrap(c, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if err := c.Create(ctx, obj, opts...); err != nil {
						return err
					}
					if _, ok := obj.(*etcdv1alpha2.EtcdSnapshot); ok {
						created.Store(true)
						return errCrash // the write landed; the controller never hears of it
					}
					return nil
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					if created.Load() {
						return errCrash // dead: no status write after the create
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			})
		}
	})
	w.create(job)
	w.g.Eventually(created.Load).WithTimeout(30 * time.Second).Should(BeTrue())
	stopFirst()
	w.g.Expect(w.snapshotsOf(w.get(job).(*backupsv1alpha1.BackupJob))).To(HaveLen(1))

	var staleReads atomic.Int32
	w.startDriver(func(o *manager.Options) {
		o.WrapClient = func(c client.Client) client.Client {
			return wrap(c, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*etcdv1alpha2.EtcdSnapshot); ok && staleReads.Add(1) == 1 {
						return apierrors.NewNotFound(etcdv1alpha2.GroupVersion.WithResource("etcdsnapshots").GroupResource(), key.Name)
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
		}
	})
	w.g.Eventually(staleReads.Load).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 1))
	snap := w.awaitSnapshot(job)
	w.operatorFinishes(snap, etcdv1alpha2.SnapshotPhaseComplete)
	w.awaitPhase(job, backupsv1alpha1.BackupJobPhaseSucceeded, 30*time.Second)
	w.g.Expect(w.snapshotsOf(job)).To(HaveLen(1))
}

// watchless lets the interceptor wrap a manager's client, which cannot watch.
type watchless struct{ client.Client }

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

func wrap(c client.Client, funcs interceptor.Funcs) client.Client {
	return interceptor.NewClient(watchless{c}, funcs)
}
