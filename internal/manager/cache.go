package manager

import (
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/informerguard"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
)

// cacheOptions says what the driver's caches hold. Each holds only what
// the driver may read (RBAC grants no more) and, of the kinds cached at
// scale, only the fields it reads (internal/cachetrim): restore claims and
// captures in the driver's namespace ns, member PVCs (metadata only), the one EtcdCluster
// and HelmRelease name, the driver's tenant Jobs (look-alikes trimmed),
// and trimmed history. StrategyPolicies
// (few, cluster-scoped) are cached whole: every reader of the admin's
// settings asks internal/strategypolicy, which reads them from here.
// caBytes is the size of the extra S3 CA bundle (--s3-ca-file) the
// driver hands its tenant Jobs, which their size allows for.
func cacheOptions(ns string, caBytes int) cache.Options {
	return cache.Options{
		DefaultTransform: cachetrim.Plain,
		ByObject:         byObject(ns, caBytes),
	}
}

// notHistory selects the EtcdSnapshots not yet handed to their Backup:
// every reader of the cache looks for unfinished snapshots; history (one
// per Backup, the bulk of them) is read live by the rare path that needs
// it (a BackupJob that crashed before recording its end).
func notHistory() labels.Selector {
	req, err := labels.NewRequirement(backupsv1alpha1.SnapshotHistoryLabel, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// metadataOnly are the kinds watched as metadata only
// (metav1.PartialObjectMetadata): of a tenant's member PVCs a restore only
// counts those left. A typed read of them is refused (informerguard), so
// no second, whole cache of PVCs can start.
func metadataOnly() map[schema.GroupVersionKind]informerguard.Form {
	return map[schema.GroupVersionKind]informerguard.Form{
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"): informerguard.Metadata,
	}
}

// byObject is the per-kind cache configuration: one entry per kind, so a
// selector can be added to any of them (for example a shard's label).
// Jobs are those labelled part of the driver (a restore's staging, a
// Backup's inspection, a rehearsal): a tenant can label Jobs so too, and
// one bigger than the driver builds is kept trimmed (cachetrim.Job).
func byObject(ns string, caBytes int) map[client.Object]cache.ByObject {
	own := map[string]cache.Config{ns: {}}
	byName := fields.OneTermEqualSelector("metadata.name", restore.ClusterName)
	return map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Namespaces: own,
			Label: labels.SelectorFromSet(labels.Set{claim.ComponentLabel: claim.ComponentValue})},
		&corev1.ConfigMap{}:             {Namespaces: own, Label: restore.ConfigMapSelector()},
		&corev1.PersistentVolumeClaim{}: {Label: labels.SelectorFromSet(restore.MemberPVCLabels())},
		&etcdv1alpha2.EtcdCluster{}:     {Field: byName},
		&helmv2.HelmRelease{}:           {Field: byName, Transform: cachetrim.HelmRelease},
		&batchv1.Job{}: {Label: labels.SelectorFromSet(labels.Set{tenantjobs.PartOfLabel: tenantjobs.PartOf}),
			Transform: cachetrim.Job(tenantjobs.CacheBudget(caBytes), append(tenantjobs.LabelKeys(), shard.Label)...)},
		&etcdv1alpha2.EtcdSnapshot{}:     {Label: notHistory(), Transform: cachetrim.Snapshot},
		&backupsv1alpha1.BackupJob{}:     {Transform: cachetrim.BackupJob},
		&backupsv1alpha1.Backup{}:        {Transform: cachetrim.Backup},
		&driverv1alpha1.StrategyPolicy{}: {},
		// The point-in-time captures: one Deployment and one record per
		// followed Plan.
		&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{tenantjobs.PartOfLabel: tenantjobs.PartOf}),
			Transform: cachetrim.Deployment(tenantjobs.CacheBudget(caBytes), append(keeper.LabelKeys(), shard.Label)...)},
		&driverv1alpha1.CaptureProgress{}: {},
	}
}
