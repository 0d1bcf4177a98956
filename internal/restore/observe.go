package restore

import (
	"context"
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// clusterName is the EtcdCluster every etcd application renders.
const clusterName = "etcd"

// instanceLabel selects the member PVCs of the cluster.
const instanceLabel = "app.kubernetes.io/instance"

// observation is everything a decision needs, read live from the API server
// (not the cache) so that a decision never rests on a view older than the
// driver's own last write.
type observation struct {
	now time.Time
	job *backupsv1alpha1.RestoreJob

	opts    jobOptions
	optsErr error

	// backup is nil when it does not exist.
	backup    *backupsv1alpha1.Backup
	source    artifact.Source
	sourceErr error

	// app is the application restored: the capture's once it exists, else
	// the Backup's.
	app    string
	holder *claim.Holder

	snapshot     *etcdv1alpha2.EtcdSnapshot
	safetyBackup *backupsv1alpha1.Backup
	// inflight names other EtcdSnapshots of the cluster still running
	// (BackupJobs that started before the claim); the cluster is not
	// touched under them.
	inflight []string

	capture    *capture
	captureErr error

	hr *helmv2.HelmRelease

	cluster *unstructured.Unstructured
	// clusterTyped is cluster seen through the typed mirror, for status.
	clusterTyped *etcdv1alpha2.EtcdCluster
	pvcs         int
}

// observe reads the world for job. It returns nil when job is gone.
func (r *Reconciler) observe(ctx context.Context, key client.ObjectKey) (*observation, error) {
	o := &observation{now: r.now(), job: &backupsv1alpha1.RestoreJob{}}
	if found, err := r.get(ctx, key, o.job); err != nil || !found {
		return nil, err
	}
	o.opts, o.optsErr = parseOptions(o.job.Spec.Options)
	ns := o.job.Namespace

	var cm corev1.ConfigMap
	if found, err := r.get(ctx, client.ObjectKey{Namespace: ns, Name: captureName(o.job)}, &cm); err != nil {
		return nil, err
	} else if found {
		o.capture, o.captureErr = parseCapture(&cm, o.job)
	}

	backup := &backupsv1alpha1.Backup{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: ns, Name: o.job.Spec.BackupRef.Name}, backup); err != nil {
		return nil, err
	} else if found {
		o.backup = backup
		o.source, o.sourceErr = artifact.Resolve(backup)
		o.app = backup.Spec.ApplicationRef.Name
	}
	if o.capture != nil && o.capture.app != "" {
		o.app = o.capture.app
	}
	if o.app == "" {
		return o, nil
	}

	var err error
	if o.holder, err = claim.Get(ctx, r.Reader, ns, o.app); err != nil {
		return nil, err
	}
	if err := r.observeSafety(ctx, o); err != nil {
		return nil, err
	}
	hr := &helmv2.HelmRelease{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: ns, Name: o.app}, hr); err != nil {
		return nil, err
	} else if found {
		o.hr = hr
	}
	if err := r.observeCluster(ctx, o); err != nil {
		return nil, err
	}
	return o, nil
}

func (r *Reconciler) observeSafety(ctx context.Context, o *observation) error {
	name := safetyName(o.job)
	snap := &etcdv1alpha2.EtcdSnapshot{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, snap); err != nil {
		return err
	} else if found && snap.Labels[backupsv1alpha1.RestoreJobUIDLabel] == string(o.job.UID) {
		o.snapshot = snap
	}
	b := &backupsv1alpha1.Backup{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, b); err != nil {
		return err
	} else if found && b.Labels[backupsv1alpha1.RestoreJobUIDLabel] == string(o.job.UID) {
		o.safetyBackup = b
	}
	var snaps etcdv1alpha2.EtcdSnapshotList
	if err := r.Reader.List(ctx, &snaps, client.InNamespace(o.job.Namespace)); err != nil {
		return fmt.Errorf("list EtcdSnapshots in %s: %w", o.job.Namespace, err)
	}
	for _, s := range snaps.Items {
		running := s.Status.Phase != etcdv1alpha2.SnapshotPhaseComplete && s.Status.Phase != etcdv1alpha2.SnapshotPhaseFailed
		if running && s.Name != name && s.Spec.ClusterRef.Name == clusterName {
			o.inflight = append(o.inflight, s.Name)
		}
	}
	return nil
}

func (r *Reconciler) observeCluster(ctx context.Context, o *observation) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(etcdv1alpha2.GroupVersion.WithKind("EtcdCluster"))
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: clusterName}, u); err != nil {
		return err
	} else if found {
		typed := &etcdv1alpha2.EtcdCluster{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return fmt.Errorf("read EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
		}
		o.cluster, o.clusterTyped = u, typed
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.Reader.List(ctx, &pvcs, client.InNamespace(o.job.Namespace),
		client.MatchingLabels{instanceLabel: clusterName}); err != nil {
		return fmt.Errorf("list PVCs of EtcdCluster %s/%s: %w", o.job.Namespace, clusterName, err)
	}
	o.pvcs = len(pvcs.Items)
	return nil
}

// get reads one object live; NotFound is (false, nil).
func (r *Reconciler) get(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	err := r.Reader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %T %s: %w", obj, key, err)
	}
	return true, nil
}
