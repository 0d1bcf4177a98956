package manager

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
)

// cacheOptions says what the driver's caches hold. Each holds only what
// the driver may read (RBAC grants no more) and, of the kinds cached at
// scale, only the fields it reads (internal/cachetrim): restore claims and
// captures in the driver's namespace ns, member PVCs, the one EtcdCluster
// and HelmRelease name, staging Jobs, and trimmed history.
func cacheOptions(ns string) cache.Options {
	return cache.Options{
		DefaultTransform: cachetrim.Plain,
		ByObject:         byObject(ns),
	}
}

// byObject is the per-kind cache configuration: one entry per kind, so a
// selector can be added to any of them (for example a shard's label).
func byObject(ns string) map[client.Object]cache.ByObject {
	own := map[string]cache.Config{ns: {}}
	byName := fields.OneTermEqualSelector("metadata.name", restore.ClusterName)
	return map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Namespaces: own,
			Label: labels.SelectorFromSet(labels.Set{claim.ComponentLabel: claim.ComponentValue})},
		&corev1.ConfigMap{}:             {Namespaces: own, Label: labels.SelectorFromSet(restore.CaptureLabels())},
		&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(restore.MemberPVCLabels())},
		&etcdv1alpha2.EtcdCluster{}:     {Field: byName},
		&helmv2.HelmRelease{}:           {Field: byName, Transform: cachetrim.HelmRelease},
		&batchv1.Job{}:                  {Label: restore.StagingJobSelector()},
		&etcdv1alpha2.EtcdSnapshot{}:    {Transform: cachetrim.Snapshot},
		&backupsv1alpha1.BackupJob{}:    {Transform: cachetrim.BackupJob},
	}
}
