package rehearsal

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/backupjob"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// refusal is a terminal reason a dry run cannot go on.
type refusal struct {
	reason  backupsv1alpha1.RestoreReason
	message string
}

func refuse(reason backupsv1alpha1.RestoreReason, format string, args ...any) *refusal {
	return &refusal{reason: reason, message: fmt.Sprintf(format, args...)}
}

// The one application kind and name the Etcd driver backs up, restores
// and rehearses: the chart pins its release, HelmRelease and EtcdCluster
// to backupjob.ClusterName.
const (
	etcdKind    = "Etcd"
	clusterName = backupjob.ClusterName
)

// preflight checks a dry run as a real restore's preflight does, without
// claiming or changing anything: the Backup is Ready and verified, the
// target is its own application's EtcdCluster here, the endpoint passes
// the policy, the credentials Secret holds both keys. It returns the Job
// spec built from the Backup's signed facts (no name, no live revision).
func (r *Reconciler) preflight(ctx context.Context, rj *backupsv1alpha1.RestoreJob, b *backupsv1alpha1.Backup) (Spec, *refusal, error) {
	if r.Image == "" {
		return Spec{}, refuse(backupsv1alpha1.ReasonNoStagingImage,
			"the driver has no image for the rehearsal Job (--staging-image); ask the platform operator"), nil
	}
	if b.Status.Phase != backupsv1alpha1.BackupPhaseReady {
		return Spec{}, refuse(backupsv1alpha1.ReasonBackupNotReady,
			"Backup %s is %q, not Ready; rehearse a Ready Backup", b.Name, b.Status.Phase), nil
	}
	v, err := provenance.Verify(ctx, r.Keys, b)
	if err != nil {
		return Spec{}, nil, err
	}
	if !v.Verified {
		return Spec{}, refuse(backupsv1alpha1.ReasonUnverifiedBackup,
			"Backup %s does not carry this driver's valid signature (%s); only Backups the driver recorded are rehearsed", b.Name, v.Message), nil
	}
	app := b.Spec.ApplicationRef
	if app.Kind != etcdKind || app.Name != clusterName {
		return Spec{}, refuse(backupsv1alpha1.ReasonUnsupportedTarget,
			"Backup %s is of %s %s; the Etcd driver rehearses only its Etcd application %q", b.Name, app.Kind, app.Name, clusterName), nil
	}
	if t := rj.Spec.TargetApplicationRef; t != nil && (t.Kind != app.Kind || t.Name != app.Name || t.APIGroupOrEmpty() != app.APIGroupOrEmpty()) {
		return Spec{}, refuse(backupsv1alpha1.ReasonUnsupportedTarget,
			"spec.targetApplicationRef names %s %s; a rehearsal (as a restore) is in place, onto the Backup's own application %s", t.Kind, t.Name, app.Name), nil
	}
	if v.Facts.Application != app.Name || v.Facts.Namespace != rj.Namespace {
		return Spec{}, refuse(backupsv1alpha1.ReasonApplicationMismatch,
			"Backup %s was signed for application %s/%s, not %s/%s", b.Name, v.Facts.Namespace, v.Facts.Application, rj.Namespace, app.Name), nil
	}
	var cluster etcdv1alpha2.EtcdCluster
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: clusterName}, &cluster); apierrors.IsNotFound(err) {
		return Spec{}, refuse(backupsv1alpha1.ReasonSourceClusterNotFound,
			"EtcdCluster %s/%s does not exist; a rehearsal compares the Backup with the live cluster", rj.Namespace, clusterName), nil
	} else if err != nil {
		return Spec{}, nil, fmt.Errorf("read EtcdCluster %s/%s: %w", rj.Namespace, clusterName, err)
	}
	sum := strings.TrimPrefix(v.Facts.Checksum, "sha256:")
	if raw, err := hex.DecodeString(sum); err != nil || len(raw) != 32 || v.Facts.SizeBytes <= 32 || v.Facts.Key == "" {
		return Spec{}, refuse(backupsv1alpha1.ReasonUnrecognisedArtifact,
			"Backup %s records no object key, size or sha256 checksum to rehearse against", b.Name), nil
	}
	allowHTTP, err := r.strategyAllowsHTTP(ctx, b, v.Facts.Endpoint)
	if err != nil {
		return Spec{}, nil, err
	}
	if err := r.Policy.CheckURL(v.Facts.Endpoint, allowHTTP); err != nil {
		return Spec{}, refuse(backupsv1alpha1.ReasonEndpointRefused, "the Backup's S3 endpoint is refused: %v", err), nil
	}
	var s corev1.Secret
	if err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: rj.Namespace, Name: v.Facts.SecretName}, &s); apierrors.IsNotFound(err) {
		return Spec{}, refuse(backupsv1alpha1.ReasonCredentialsUnavailable,
			"the Backup's credentials Secret %s does not exist in %s", v.Facts.SecretName, rj.Namespace), nil
	} else if err != nil {
		return Spec{}, nil, fmt.Errorf("read Secret %s/%s: %w", rj.Namespace, v.Facts.SecretName, err)
	}
	if len(s.Data[s3object.AccessKeyIDKey]) == 0 || len(s.Data[s3object.SecretAccessKeyKey]) == 0 {
		return Spec{}, refuse(backupsv1alpha1.ReasonCredentialsUnavailable,
			"Secret %s holds no %s and %s", v.Facts.SecretName, s3object.AccessKeyIDKey, s3object.SecretAccessKeyKey), nil
	}
	return Spec{
		Namespace: rj.Namespace, RestoreJobName: rj.Name, RestoreJobUID: string(rj.UID), Image: r.Image,
		Object: stagingstep.Object{Endpoint: v.Facts.Endpoint, Bucket: v.Facts.Bucket, Key: v.Facts.Key, Region: v.Facts.Region,
			PathStyle: v.Facts.ForcePathStyle, SecretName: v.Facts.SecretName, Size: v.Facts.SizeBytes, SHA256: sum},
		Deadline: r.deadline(), AllowedEndpointCIDRs: r.AllowedEndpointCIDRs, AllowHTTP: allowHTTP, CAPEM: r.S3CAPEM,
	}, nil, nil
}

// strategyAllowsHTTP: a plain-http endpoint is allowed only when the
// StrategyPolicy of the Etcd strategy the Backup names allows it, as for a
// restore.
func (r *Reconciler) strategyAllowsHTTP(ctx context.Context, b *backupsv1alpha1.Backup, endpoint string) (bool, error) {
	p, err := strategypolicy.Of(ctx, r.Reader, b.Spec.StrategyRef.Name)
	return p.AllowsHTTP(endpoint), err
}
