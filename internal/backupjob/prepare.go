package backupjob

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategytemplate"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// ClusterName is the name the etcd chart gives every EtcdCluster.
const ClusterName = "etcd"

// ApplicationName is the only name an Etcd application has: the chart pins
// its release (and so its HelmRelease) to "etcd", and it renders the one
// EtcdCluster "etcd" of the namespace. A job naming another application
// would snapshot this one's cluster under a different name.
const ApplicationName = "etcd"

// plan is everything needed to create a job's EtcdSnapshot.
type plan struct {
	strategyRef    backupsv1alpha1.TypedLocalObjectReference
	parameters     map[string]string
	destination    strategyv1alpha1.EtcdS3Template
	deletionPolicy driverv1alpha1.DeletionPolicy
	etcdVersion    string
}

// errNotOurs means the job belongs to another driver and must be left alone.
var errNotOurs = errors.New("BackupJob is not for the Etcd strategy")

// prepare checks, in order, everything a job needs before its snapshot may
// be created. It returns errNotOurs for other drivers' jobs, an outcome to
// record while the job waits or has failed, or the plan to act on.
func (r *Reconciler) prepare(ctx context.Context, job *backupsv1alpha1.BackupJob) (*plan, *outcome, error) {
	strategyRef, params, out := r.resolveClass(ctx, job)
	if out != nil {
		return nil, out, nil
	}
	if !strategyv1alpha1.IsEtcd(strategyRef) {
		return nil, nil, errNotOurs
	}
	pending := backupsv1alpha1.BackupJobPhasePending

	app := backupsv1alpha1.NormalizeApplicationRef(job.Spec.ApplicationRef)
	if *app.APIGroup != appsv1alpha1.GroupVersion.Group || app.Kind != appsv1alpha1.EtcdKind || app.Name != ApplicationName {
		o := failed(backupsv1alpha1.BackupReasonInvalidApplicationRef,
			"the Etcd strategy backs up the application %s/%s %q of a namespace (the etcd chart pins that name), but applicationRef is %s/%s %q",
			appsv1alpha1.GroupVersion.Group, appsv1alpha1.EtcdKind, ApplicationName,
			textlimit.Value(*app.APIGroup), textlimit.Value(app.Kind), textlimit.Value(app.Name))
		return nil, &o, nil
	}

	strategy, err := strategypolicy.Get(ctx, r.Client, strategyRef.Name)
	if err != nil {
		o := missing(err, pending, backupsv1alpha1.BackupReasonStrategyNotReady,
			"waiting for Etcd strategy %q (named by BackupClass %q) to exist", strategyRef.Name, job.Spec.BackupClassName)
		return nil, &o, nil
	}
	if err := strategy.Check(); err != nil {
		o := failed(backupsv1alpha1.BackupReasonInvalidStrategyPolicy, "%v", err)
		return nil, &o, nil
	}

	var application appsv1alpha1.Etcd
	if err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: app.Name}, &application); err != nil {
		o := missing(err, pending, backupsv1alpha1.BackupReasonApplicationNotFound,
			"waiting for Etcd application %s/%s to exist", job.Namespace, app.Name)
		return nil, &o, nil
	}

	dest, out := r.render(strategy, &application, params)
	if out != nil {
		return nil, out, nil
	}
	if out := r.brokeredSecret(ctx, strategy, job.Namespace, &dest); out != nil {
		return nil, out, nil
	}
	if r.Credentials != nil {
		r.Credentials.Observe(strategy.Name, job.Namespace, dest.CredentialsSecretRef.Name)
	}

	version, out := r.gate(ctx, job)
	if out != nil {
		return nil, out, nil
	}
	return &plan{strategyRef: strategyRef, parameters: params, destination: dest, deletionPolicy: strategy.Policy.DeletionPolicy, etcdVersion: version}, nil, nil
}

// resolveClass finds the strategy the job's BackupClass binds to its
// application kind: the first entry whose (defaulted) group and kind match.
func (r *Reconciler) resolveClass(ctx context.Context, job *backupsv1alpha1.BackupJob) (backupsv1alpha1.TypedLocalObjectReference, map[string]string, *outcome) {
	var class backupsv1alpha1.BackupClass
	if err := r.Get(ctx, client.ObjectKey{Name: job.Spec.BackupClassName}, &class); err != nil {
		o := missing(err, backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupReasonBackupClassNotFound,
			"waiting for BackupClass %q to exist", job.Spec.BackupClassName)
		return backupsv1alpha1.TypedLocalObjectReference{}, nil, &o
	}
	app := backupsv1alpha1.NormalizeApplicationRef(job.Spec.ApplicationRef)
	if s, ok := class.StrategyFor(app); ok {
		return s.StrategyRef, s.Parameters, nil
	}
	o := failed(backupsv1alpha1.BackupReasonNoMatchingStrategy,
		"BackupClass %q binds no strategy for application kind %s/%s; add an entry for it to spec.strategies",
		class.Name, *app.APIGroup, app.Kind)
	return backupsv1alpha1.TypedLocalObjectReference{}, nil, &o
}

// render renders and validates the strategy's destination for application.
func (r *Reconciler) render(strategy strategypolicy.Strategy, application *appsv1alpha1.Etcd, params map[string]string) (strategyv1alpha1.EtcdS3Template, *outcome) {
	obj, err := strategytemplate.ApplicationObject(application)
	if err != nil {
		o := retry(err)
		return strategyv1alpha1.EtcdS3Template{}, &o
	}
	dest, err := strategytemplate.RenderFor(strategy.Etcd, obj, params,
		strategytemplate.Options{Policy: r.Policy, AllowHTTP: strategy.Policy.AllowHTTPEndpoint})
	switch {
	case errors.Is(err, strategytemplate.ErrInvalid):
		o := failed(backupsv1alpha1.BackupReasonInvalidDestination, "%v", err)
		return dest, &o
	case err != nil:
		o := failed(backupsv1alpha1.BackupReasonTemplateError, "%v", err)
		return dest, &o
	}
	return dest, nil
}

// gate holds the job back while a restore owns the cluster or the cluster
// is not Available. It returns the cluster's etcd version.
func (r *Reconciler) gate(ctx context.Context, job *backupsv1alpha1.BackupJob) (string, *outcome) {
	// The claim store reads live: a restore that claimed the cluster a
	// moment ago may not be in the cache yet, and this is the last check
	// before the snapshot touches the cluster.
	target := claim.Target{Namespace: job.Namespace, Cluster: ClusterName}
	holder, err := r.Claims.Get(ctx, target)
	if err != nil {
		o := retry(err)
		return "", &o
	}
	if holder != nil {
		// A claim whose RestoreJob is gone holds nothing: the backup goes
		// ahead, and releases it on the way (a BackupJob is often the
		// first to see it).
		gone, err := r.Claims.ReleaseIfGone(ctx, r.APIReader, target, holder)
		if err != nil {
			o := retry(err)
			return "", &o
		}
		if !gone {
			o := waiting(backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupReasonRestoreInProgress,
				"waiting for RestoreJob %q to finish restoring EtcdCluster %s/%s", holder.Name, job.Namespace, ClusterName)
			return "", &o
		}
	}
	var cluster etcdv1alpha2.EtcdCluster
	err = r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: ClusterName}, &cluster)
	if err != nil {
		o := missing(err, backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupReasonEtcdClusterNotAvailable,
			"waiting for EtcdCluster %s/%s to exist", job.Namespace, ClusterName)
		return "", &o
	}
	if c := meta.FindStatusCondition(cluster.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable); c == nil || c.Status != "True" {
		detail := "no Available condition yet"
		if c != nil {
			detail = fmt.Sprintf("Available=%s, reason %s: %s", c.Status, c.Reason, c.Message)
		}
		o := waiting(backupsv1alpha1.BackupJobPhasePending, backupsv1alpha1.BackupReasonEtcdClusterNotAvailable,
			"waiting for EtcdCluster %s/%s to become Available (%s)", job.Namespace, ClusterName, detail)
		return "", &o
	}
	return cluster.Spec.Version, nil
}

// missing turns a Get error into a wait (NotFound) or a retry (anything else).
func missing(err error, phase backupsv1alpha1.BackupJobPhase, reason, format string, args ...any) outcome {
	if apierrors.IsNotFound(err) {
		return waiting(phase, reason, format, args...)
	}
	return retry(err)
}
