package keeper

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// baseBackup is a Backup a chain can follow, with its signed facts.
type baseBackup struct {
	Backup *backupsv1alpha1.Backup
	// Revision is the signed manifest's revision: the chain holds every
	// revision after it.
	Revision int64
}

// newestBase is the Plan's newest base Backup (bases), or nil.
func (r *Reconciler) newestBase(ctx context.Context, plan *backupsv1alpha1.Plan) (*baseBackup, error) {
	bases, err := r.bases(ctx, plan)
	if err != nil {
		return nil, err
	}
	var newest *baseBackup
	for i := range bases {
		if newest == nil || goodbackup.Newer(bases[i].Backup, newest.Backup) {
			newest = &bases[i]
		}
	}
	return newest, nil
}

// bases are the Plan's Backups a chain can follow: good (goodbackup.Good,
// so not being deleted), their provenance checked with the driver's key,
// for this Plan and application, whose inspection recorded a manifest the
// driver signed: the manifest gives the revision the chain starts after.
// Spec.TakenAt is set to the signed time.
func (r *Reconciler) bases(ctx context.Context, plan *backupsv1alpha1.Plan) ([]baseBackup, error) {
	var list backupsv1alpha1.BackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(plan.Namespace),
		client.MatchingLabels{backupsv1alpha1.PlanNameLabel: names.LabelValue(plan.Name)}); err != nil {
		return nil, fmt.Errorf("list Backups of Plan %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	var out []baseBackup
	for i := range list.Items {
		base, err := r.baseOf(ctx, plan, &list.Items[i])
		if err != nil {
			return nil, err
		}
		if base != nil {
			out = append(out, *base)
		}
	}
	return out, nil
}

// baseOf is b as a base of the Plan's chains (see bases), or nil.
func (r *Reconciler) baseOf(ctx context.Context, plan *backupsv1alpha1.Plan, b *backupsv1alpha1.Backup) (*baseBackup, error) {
	app := backupsv1alpha1.NormalizeApplicationRef(plan.Spec.ApplicationRef)
	v, err := provenance.Verify(ctx, r.Keys, b)
	if err != nil {
		return nil, err
	}
	if !v.Verified || v.Facts.Plan != plan.Name || v.Facts.Application != app.Name || !goodbackup.Good(b, true) || b.Status.Artifact == nil {
		return nil, nil
	}
	rev, err := pointintime.SignedRevision(ctx, r.Keys, b)
	if err != nil || rev <= 0 {
		return nil, err
	}
	b.Spec.TakenAt = metav1.NewTime(v.TakenAt())
	return &baseBackup{Backup: b, Revision: rev}, nil
}

// spec is the capture the driver runs for rec's chain on base: the S3
// location and the tenant's key of the base Backup (its objects' prefix,
// where the chain goes), the admin's segment bounds and memory, the
// tenant's etcd client Service.
func (r *Reconciler) spec(_ context.Context, plan *backupsv1alpha1.Plan, rec *driverv1alpha1.CaptureProgress, base *baseBackup,
	p strategypolicy.Policy) (Spec, error) {
	pit := p.PointInTime
	chain, err := pointintime.ChainOf(base.Backup, base.Revision)
	if err != nil {
		return Spec{}, err
	}
	src := chain.Source
	allowHTTP := p.AllowsHTTP(src.Endpoint)
	if err := r.Policy.CheckURL(src.Endpoint, allowHTTP); err != nil {
		return Spec{}, err
	}
	o := capture.Options{
		EtcdEndpoints: []string{"https://" + liverevision.ServiceHost(plan.Namespace) + ":2379"},
		Endpoint:      src.Endpoint, Bucket: src.Bucket, Region: src.Region, PathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle,
		AllowedEndpointCIDRs: r.AllowedEndpointCIDRs, AllowHTTP: allowHTTP,
		Prefix:          chain.Dir,
		Base:            chain.Base,
		SegmentInterval: pit.SegmentInterval, SegmentBytes: pit.MaxSegmentBytes,
		TerminationLog: report.TerminationLog,
	}
	s := Spec{Namespace: plan.Namespace, Name: rec.Name, Record: rec.UID, Plan: plan.Name, Image: r.Image, Options: o,
		SecretName: src.SecretName, CAPEM: r.S3CAPEM, MemoryMiB: pit.MemoryMiB}
	if err := s.FullOptions().Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}
