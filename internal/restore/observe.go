package restore

import (
	"context"
	"fmt"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cpfence"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// clusterName is the EtcdCluster every etcd application renders.
const clusterName = "etcd"

// applicationName is the only name an Etcd application has (the chart pins
// its release and HelmRelease to it); it owns EtcdCluster clusterName.
const applicationName = "etcd"

// instanceLabel selects the member PVCs of the cluster.
const instanceLabel = "app.kubernetes.io/instance"

// fluxNameLabel is set by helm-controller on every object a HelmRelease
// applies; its value is the HelmRelease's name.
const fluxNameLabel = "helm.toolkit.fluxcd.io/name"

// observation is everything a decision needs. It is read from the
// manager's cache, which may lag the driver's own last write by a moment:
// every write the decision leads to is idempotent or guarded (UID
// preconditions, optimistic locks, creates that tolerate AlreadyExists), a
// reconcile takes one step and is woken again by that step's own watch
// event, and the steps that record or destroy something (claim, capture,
// delete) confirm what they rely on with the API server first.
type observation struct {
	now time.Time
	job *backupsv1alpha1.RestoreJob
	// driverNS is the driver's namespace, where captures and claims live.
	driverNS string

	opts    restoreoptions.Options
	optsErr error

	// backup is nil when it does not exist. For a restore to a point
	// it is the base (preflight.go: observePoint), not spec.backupRef's Backup.
	backup *backupsv1alpha1.Backup
	// point is a restore to a point's target and base (nil for none).
	point     *pointState
	verdict   provenance.Verdict
	source    artifact.Source
	sourceErr error
	// admission says, for an unverified Backup, whether its location is
	// one this namespace's strategies write to now ("" when it is).
	admission string
	// credsErr is why the source's credentials Secret is unusable (nil
	// when it is, or when it was not read).
	credsErr error
	// credsUnread: the credentials are to be checked before the claim
	// (readCredentials reads them once the view is caught up).
	credsUnread bool
	// httpAllowed: the Backup's Etcd strategy allows a plain-http
	// endpoint (the staging Job is told so).
	httpAllowed bool
	// endpointErr is why the endpoint policy refuses the source's
	// endpoint: its address, or plain http its strategy does not allow.
	endpointErr error

	// app is the application restored: the capture's once it exists, else
	// the Backup's.
	app    string
	target claim.Target
	holder *claim.Holder
	// holderGone: the claim's holder no longer exists (or finished without
	// releasing it), so the claim is stale.
	holderGone bool

	snapshot     *etcdv1alpha2.EtcdSnapshot
	safetyBackup *backupsv1alpha1.Backup
	// safetyConflict says why an object at the safety name is not ours.
	safetyConflict string
	// safetyDestErr is why the safety snapshot's destination is refused.
	safetyDestErr error
	// inflight names other EtcdSnapshots of the cluster still running
	// (BackupJobs that started before the claim); the cluster is not
	// touched under them.
	inflight []string

	capture    *capture
	captureErr error

	hr *helmv2.HelmRelease
	// resumedAt is when this process resumed hr for this job (zero when
	// it did not, or forgot in a restart).
	resumedAt time.Time

	// cluster is the live EtcdCluster (its typed mirror: the capture reads
	// the whole object itself).
	cluster *etcdv1alpha2.EtcdCluster
	pvcs    int
	// prior is, while an absent cluster is not captured yet, the newest
	// capture of it an earlier restore left (nil when none).
	prior *priorCapture

	// stagingImage is the driver's staging image ("" when none).
	stagingImage string
	// staging is this job's staging Job; stagingConflict says why an
	// object at its name is not; stagingReport is what a failed one's
	// Pods said.
	staging         *batchv1.Job
	stagingClaim    bool
	stagingConflict string
	stagingReport   string
	// stagingClaimUnread: the staging is judged on a claim not read yet
	// (readStagingClaim reads it once the view is caught up).
	stagingClaimUnread bool

	// planes are the Kamaji control planes storing in the etcd (and those
	// this job fenced); planePods are the Pods of the fenced ones, read
	// once the outcome is decided.
	planes    cpfence.Planes
	planePods map[string][]corev1.Pod

	// created is the UID of the cluster this process re-created for the
	// job ("" when it did not, or forgot in a restart).
	created types.UID

	// liveRead and recheck are this job's reads of the live revision, as
	// this process made them (liverevision.Reads): for the staging, and
	// again just before the purge.
	liveRead, recheck revisionRead
}

// revisionRead is where one read of the live revision stands.
type revisionRead struct {
	state  liverevision.State
	result liverevision.Result[int64]
}

// observe reads the world for job. It returns nil when job is gone.
func (r *Reconciler) observe(ctx context.Context, key client.ObjectKey) (*observation, error) {
	o := &observation{now: r.now(), job: &backupsv1alpha1.RestoreJob{}, driverNS: r.Namespace, stagingImage: r.StagingImage}
	if found, err := r.get(ctx, key, o.job); err != nil || !found {
		return nil, err
	}
	o.resumedAt = r.resumes.at(o.job.UID)
	o.created = r.madeCluster.uidOf(o.job.UID)
	o.opts, o.optsErr = restoreoptions.Parse(o.job.Spec.Options)
	ns := o.job.Namespace
	o.target = claim.Target{Namespace: ns, Cluster: clusterName}

	var cm corev1.ConfigMap
	if found, err := r.get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: captureName(o.job)}, &cm); err != nil {
		return nil, err
	} else if found {
		o.capture, o.captureErr = parseCapture(&cm, o.job)
	}

	var err error
	if o.holder, err = r.Claims.Get(ctx, o.target); err != nil {
		return nil, err
	}
	if o.holder != nil && !o.holder.HeldBy(o.job) {
		if o.holderGone, err = r.holderGone(ctx, o.holder); err != nil {
			return nil, err
		}
	}
	if err := r.observeBackup(ctx, o); err != nil {
		return nil, err
	}
	if o.capture != nil && o.capture.app != "" {
		o.app = o.capture.app
	}
	if o.app == "" && !controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) {
		return o, nil
	}
	// A job with its finalizer but neither Backup nor capture (the tenant
	// deleted its Backup, before the capture or after it went) is observed
	// all the same: its hand-back records or abandons the safety snapshot
	// (whose label names the application), lifts the fenced control planes
	// and hands the staging claim to the cluster that boots from it.
	if err := r.observeSafety(ctx, o); err != nil {
		return nil, err
	}
	if o.app == "" && o.snapshot != nil {
		o.app = o.snapshot.Labels[backupsv1alpha1.ApplicationNameLabel]
	}
	if o.app == applicationName {
		// RBAC lets the driver read only the HelmRelease of that name.
		hr := &helmv2.HelmRelease{}
		if found, err := r.get(ctx, client.ObjectKey{Namespace: ns, Name: o.app}, hr); err != nil {
			return nil, err
		} else if found {
			o.hr = hr
		}
	}
	if err := r.observeCluster(ctx, o); err != nil {
		return nil, err
	}
	if o.cluster == nil && o.capture == nil && outcomeOf(o.job) == nil && !o.job.Status.Phase.IsTerminal() {
		if err := r.observePriorCapture(ctx, o); err != nil {
			return nil, err
		}
	}
	if err := r.observePlanes(ctx, o); err != nil {
		return nil, err
	}
	if err := r.observeStaging(ctx, o); err != nil {
		return nil, err
	}
	if r.reads != nil {
		o.liveRead.state, o.liveRead.result = r.reads.Look(liverevision.Key{Job: o.job.UID, Purpose: liverevision.ForStaging})
		o.recheck.state, o.recheck.result = r.reads.Look(liverevision.Key{Job: o.job.UID, Purpose: liverevision.BeforePurge})
	}
	return o, nil
}

// observeBackup reads the Backup, its provenance and, while nothing is
// captured yet, whether it may be restored and its credentials exist.
func (r *Reconciler) observeBackup(ctx context.Context, o *observation) error {
	b := &backupsv1alpha1.Backup{}
	key := client.ObjectKey{Namespace: o.job.Namespace, Name: o.job.Spec.BackupRef.Name}
	found, err := r.get(ctx, key, b)
	if err == nil && !found && r.LiveReader != nil {
		// A RestoreJob created right after its Backup can come before
		// the Backup reaches the cache: a missing Backup is confirmed
		// live, or a job of another driver's Backup would be marked
		// waiting (BackupNotFound) as if it were this driver's.
		if err = r.LiveReader.Get(ctx, key, b); err == nil {
			found = true
		} else if apierrors.IsNotFound(err) {
			err = nil
		}
	}
	if err != nil || !found {
		return err
	}
	o.backup = b
	o.app = b.Spec.ApplicationRef.Name
	if err := r.observePoint(ctx, o, b); err != nil {
		return err
	}
	b = o.backup
	o.source, o.sourceErr = artifact.Resolve(b)
	if o.sourceErr == nil {
		if o.httpAllowed, err = r.strategyAllowsHTTP(ctx, b, o.source.Endpoint); err != nil {
			return err
		}
		o.endpointErr = r.Policy.CheckURL(o.source.Endpoint, o.httpAllowed)
	}
	if o.verdict, err = provenance.Verify(ctx, r.Keys, b); err != nil {
		return err
	}
	if o.capture != nil || o.job.Status.Phase.IsTerminal() || outcomeOf(o.job) != nil ||
		!controllerutil.ContainsFinalizer(o.job, backupsv1alpha1.RestoreFinalizer) || o.sourceErr != nil {
		return nil
	}
	if !o.verdict.Verified {
		if o.admission, err = r.admit(ctx, o); err != nil {
			return err
		}
	}
	// Checked before the claim (readCredentials, once the view is caught
	// up); the artifact check reads them again.
	o.credsUnread = o.job.Status.StartedAt == nil && !o.holder.HeldBy(o.job)
	return nil
}

// strategyAllowsHTTP reports whether a plain-http endpoint may be used
// for b: only when the StrategyPolicy of the Etcd strategy b names allows
// it (spec.allowHTTPEndpoint), as when the destination was rendered. The
// policy is read (from the cache) only for an http endpoint.
func (r *Reconciler) strategyAllowsHTTP(ctx context.Context, b *backupsv1alpha1.Backup, endpoint string) (bool, error) {
	if !strings.HasPrefix(strings.ToLower(endpoint), "http://") || !isEtcdStrategy(b) {
		return false, nil
	}
	p, err := strategypolicy.Of(ctx, r.Reader, b.Spec.StrategyRef.Name)
	return p.AllowsHTTP(endpoint), err
}

// holderGone reports whether the claim's holder is gone (claim.HolderGone,
// the test BackupJobs and the claim sweeper use too).
func (r *Reconciler) holderGone(ctx context.Context, h *claim.Holder) (bool, error) {
	return claim.HolderGone(ctx, r.Reader, h)
}

func (r *Reconciler) observeSafety(ctx context.Context, o *observation) error {
	o.safetyDestErr = checkSafetyDestination(o, r.Policy)
	name := safetyName(o.job)
	snap := &etcdv1alpha2.EtcdSnapshot{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, snap); err != nil {
		return err
	} else if found {
		if isOurSafetySnapshot(snap, o.job, safetyDestination(o)) {
			o.snapshot = snap
		} else {
			o.safetyConflict = fmt.Sprintf("EtcdSnapshot %s/%s exists and was not made by this RestoreJob", snap.Namespace, snap.Name)
		}
	}
	b := &backupsv1alpha1.Backup{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, b); err != nil {
		return err
	} else if found {
		v, err := provenance.Verify(ctx, r.Keys, b)
		if err != nil {
			return err
		}
		// Labels are tenant-writable; only the signature says the driver
		// recorded this Backup for this RestoreJob.
		if v.Verified && b.Labels[backupsv1alpha1.RestoreJobUIDLabel] == string(o.job.UID) && o.snapshot != nil &&
			v.Facts.SnapshotUID == string(o.snapshot.UID) {
			o.safetyBackup = b
		} else {
			o.safetyConflict = fmt.Sprintf("Backup %s/%s exists and is not the safety Backup this RestoreJob recorded", b.Namespace, b.Name)
		}
	}
	var snaps etcdv1alpha2.EtcdSnapshotList
	if err := r.Reader.List(ctx, &snaps, client.InNamespace(o.job.Namespace)); err != nil {
		return fmt.Errorf("list EtcdSnapshots in %s: %w", o.job.Namespace, err)
	}
	for _, s := range snaps.Items {
		if !s.Ended() && s.Name != name && s.Spec.ClusterRef.Name == clusterName {
			o.inflight = append(o.inflight, s.Name)
		}
	}
	return nil
}

func (r *Reconciler) observeCluster(ctx context.Context, o *observation) error {
	c := &etcdv1alpha2.EtcdCluster{}
	if found, err := r.get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: clusterName}, c); err != nil {
		return err
	} else if found {
		o.cluster = c
	}
	// Member PVCs are cached as metadata only: they are only counted.
	var pvcs metav1.PartialObjectMetadataList
	pvcs.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
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
