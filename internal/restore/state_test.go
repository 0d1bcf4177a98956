package restore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// world builds an observation of a restore in its destructive phase: claim
// held, artifact verified, capture taken (with a safety Backup to roll back
// to), HelmRelease suspended, the old cluster still there.
func world() *observation {
	job := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rj", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(t0), Finalizers: []string{backupsv1alpha1.RestoreFinalizer}}}
	started := metav1.NewTime(t0)
	job.Status.StartedAt = &started
	job.Status.Phase = backupsv1alpha1.RestoreJobPhaseRunning
	b := &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "b-uid"},
		Spec: backupsv1alpha1.BackupSpec{ApplicationRef: appRef(), StrategyRef: strategyRef()},
		Status: backupsv1alpha1.BackupStatus{Phase: backupsv1alpha1.BackupPhaseReady,
			Artifact: &backupsv1alpha1.BackupArtifact{URI: "s3://" + testBucket + "/tenant/etcd/b-aaaaa.db", SizeBytes: 4096,
				Checksum: "sha256:" + strings.Repeat("ab", 32)}}}
	src := artifact.Source{Bucket: testBucket, Endpoint: "https://s3.example.com", Key: "tenant/etcd/b-aaaaa.db", SecretName: testSecret}
	live := liveCluster("ns", "")
	cluster := &etcdv1alpha2.EtcdCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, cluster); err != nil {
		panic(err)
	}
	cluster.UID = "old-uid"
	rb := restoreSource{Bucket: testBucket, Endpoint: src.Endpoint, Key: "tenant/etcd/rj-safety.db", BackupName: "rj-safety"}
	o := &observation{
		now: t0.Add(time.Minute), job: job, backup: b, source: src, app: testApp, driverNS: "driver",
		verdict: provenance.Verdict{Verified: true, Facts: provenance.Facts{Application: testApp}},
		target:  claim.Target{Namespace: "ns", Cluster: clusterName},
		holder:  &claim.Holder{Namespace: "ns", Name: "rj", UID: "uid-1"},
		capture: &capture{namespace: "driver", name: "cap", app: testApp, cluster: live, hrPrior: hrNotSuspended,
			source: sourceFrom(src, &backupsv1alpha1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b"}}), rollback: &rb},
		hr:      &helmv2.HelmRelease{Spec: helmv2.HelmReleaseSpec{Suspend: true}},
		cluster: cluster,
		// Staged: the staging Job of this job completed.
		stagingImage: "driver:test",
		stagingClaim: true,
		staging: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: stagingjob.Name(job.UID),
			Labels: map[string]string{backupsv1alpha1.StagingLabel: string(job.UID)}},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
	}
	o.opts, _ = restoreoptions.Parse(nil)
	return o
}

// sealInCapture records the success of ours in the capture, as the driver
// does once it found the re-created cluster healthy.
func sealInCapture(o *observation) {
	o.capture.recreated, o.capture.succeeded = o.cluster.UID, true
}

// ours makes the live cluster the one this job re-created from key.
func ours(o *observation, from, key string, ready int32, available bool) {
	o.cluster = o.cluster.DeepCopy()
	o.cluster.UID = "new-uid"
	o.cluster.SetAnnotations(map[string]string{backupsv1alpha1.RestoredByAnnotation: string(o.job.UID), backupsv1alpha1.RestoredFromAnnotation: from})
	// Through the staging claim: the file of the restore's source, or of
	// the safety Backup's; anything else is another claim.
	p := &etcdv1alpha2.PVCSource{ClaimName: stagingjob.Name(o.job.UID), SubPath: stagingjob.RestoreFile}
	switch key {
	case o.capture.source.Key:
	case o.capture.rollback.Key:
		p.SubPath = stagingjob.RollbackFile
	default:
		p.ClaimName = "another-claim"
	}
	o.cluster.Spec.Bootstrap = &etcdv1alpha2.BootstrapSpec{Restore: &etcdv1alpha2.RestoreSpec{Source: etcdv1alpha2.RestoreSource{PVC: p}}}
	o.cluster.Status.ReadyMembers = ready
	if available {
		o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
	}
}

func bootstrapFailedCluster(o *observation, from, key string) {
	ours(o, from, key, 0, false)
	o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionFalse,
		Reason: etcdv1alpha2.ReasonBootstrapFailed, Message: "seed restore failed"}}
}

func withCondition(o *observation, typ string, status metav1.ConditionStatus, reason backupsv1alpha1.RestoreReason, msg string, at time.Time) {
	o.job.Status.Conditions = append(o.job.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: string(reason),
		Message: msg, LastTransitionTime: metav1.NewTime(at)})
}

// safetyRunning puts the restore before its capture, waiting for a safety
// snapshot created age ago that has no outcome.
func safetyRunning(o *observation, age time.Duration) {
	o.capture = nil
	withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
		"ok ["+fingerprint(o)+"]", t0)
	o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
	o.now = t0.Add(age)
	o.snapshot = &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: safetyName(o.job),
		CreationTimestamp: metav1.NewTime(t0)}, Status: etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseStarted}}
}

// stagedAbove gives the staging Job a restore file staged above live.
func stagedAbove(o *observation, live int64) {
	o.staging = o.staging.DeepCopy()
	o.staging.Spec.Template.Spec.Containers = []corev1.Container{{Name: "stage", Args: []string{"--key=k", fmt.Sprintf("--revision-floor=%d", live)}}}
}

// rechecked records the read made just before the purge.
func rechecked(o *observation, rev int64, err error, attempt int) {
	o.recheck = revisionRead{state: liverevision.Done, result: liverevision.Result[int64]{Value: rev, Err: err, Ended: o.now, Attempt: attempt}}
}

func purgedWorld(o *observation) {
	withCondition(o, backupsv1alpha1.RestoreConditionPurged, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterPurged, "", t0)
}

func TestDecide(t *testing.T) {
	const key = "tenant/etcd/b-aaaaa.db"
	const safetyKey = "tenant/etcd/rj-safety.db"
	for name, tc := range map[string]struct {
		mutate func(o *observation)
		want   state
		reason backupsv1alpha1.RestoreReason
	}{
		"foreign strategy, no finalizer: untouched": {func(o *observation) {
			o.job.Finalizers = nil
			o.backup.Spec.StrategyRef.Kind = "Velero"
		}, stateIgnore, ""},
		"Etcd strategy, no finalizer yet": {func(o *observation) { o.job.Finalizers = nil }, stateAddFinalizer, ""},
		"Backup missing past the deadline": {func(o *observation) {
			o.job.Finalizers, o.backup, o.job.Status = nil, nil, backupsv1alpha1.RestoreJobStatus{}
			o.now = t0.Add(time.Hour)
		}, stateConclude, backupsv1alpha1.ReasonBackupNotFound},
		"queued behind another RestoreJob": {func(o *observation) {
			o.job.Status.StartedAt, o.capture = nil, nil
			o.holder = &claim.Holder{Namespace: "ns", Name: "other", UID: "uid-2"}
		}, stateWaitClaim, backupsv1alpha1.ReasonWaitingForClaim},
		"queued while the holder has deleted the cluster: wait, not refuse": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.cluster = nil, nil, nil
			o.holder = &claim.Holder{Namespace: "ns", Name: "other", UID: "uid-2"}
		}, stateWaitClaim, backupsv1alpha1.ReasonWaitingForClaim},
		"a claim whose holder is gone is broken": {func(o *observation) {
			o.job.Status.StartedAt, o.capture = nil, nil
			o.holder, o.holderGone = &claim.Holder{Namespace: "ns", Name: "other", UID: "uid-2"}, true
		}, stateBreakStaleClaim, backupsv1alpha1.ReasonClaimBroken},
		"claim free and no cluster: refused": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.cluster, o.holder = nil, nil, nil, nil
		}, stateConclude, backupsv1alpha1.ReasonSourceClusterNotFound},
		"claim free and no cluster, but a capture of it, safety snapshot declined: claims": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.holder = nil, nil, nil
			o.prior, o.cluster = &priorCapture{name: "cap-0", cluster: liveCluster("ns", ""), model: o.cluster}, nil
			no := false
			o.opts.SafetySnapshot = &no
		}, stateAcquireClaim, ""},
		"claim free and no cluster, but a capture of it: refused without declining the safety snapshot": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.holder = nil, nil, nil
			o.prior, o.cluster = &priorCapture{name: "cap-0", cluster: liveCluster("ns", ""), model: o.cluster}, nil
		}, stateConclude, backupsv1alpha1.ReasonClusterNotAvailable},
		"claim free and no cluster, but member PVCs remain: refused": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.holder = nil, nil, nil
			o.prior, o.cluster, o.pvcs = &priorCapture{name: "cap-0", cluster: liveCluster("ns", ""), model: o.cluster}, nil, 3
			no := false
			o.opts.SafetySnapshot = &no
		}, stateConclude, backupsv1alpha1.ReasonSourceClusterNotFound},
		"claimed, verified, no cluster: captured from the earlier capture": {func(o *observation) {
			o.capture = nil
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
				"ok ["+fingerprint(o)+"]", t0)
			o.prior, o.cluster = &priorCapture{name: "cap-0", cluster: liveCluster("ns", ""), model: o.cluster}, nil
			no := false
			o.opts.SafetySnapshot = &no
		}, stateCapture, backupsv1alpha1.ReasonSpecCaptured},
		"absent cluster captured, not staged yet: read the live revision first": {func(o *observation) {
			o.capture.from, o.cluster, o.staging = "cap-0", nil, nil
		}, stateReadRevision, backupsv1alpha1.ReasonStaging},
		"not staged yet, the read runs: wait (off the workers)": {func(o *observation) {
			o.staging, o.liveRead.state = nil, liverevision.Running
		}, stateWaitRevision, backupsv1alpha1.ReasonStaging},
		"not staged yet, the read ended (even failed): stage": {func(o *observation) {
			o.staging, o.liveRead.state, o.liveRead.result.Err = nil, liverevision.Done, errors.New("timeout")
		}, stateStage, backupsv1alpha1.ReasonStaging},
		"absent cluster captured and staged: re-create": {func(o *observation) { o.capture.from, o.cluster = "cap-0", nil },
			stateRecreate, backupsv1alpha1.ReasonClusterPurged},
		"unverified and not where this namespace's backups go: refused": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.holder = nil, nil, nil
			o.verdict, o.admission = provenance.Verdict{Reason: provenance.ReasonUnsigned}, "it points elsewhere"
		}, stateConclude, backupsv1alpha1.ReasonUnverifiedBackup},
		"unverified but admitted: claims": {func(o *observation) {
			o.job.Status.StartedAt, o.capture, o.holder = nil, nil, nil
			o.verdict = provenance.Verdict{Reason: provenance.ReasonUnsigned}
			o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
		}, stateAcquireClaim, ""},
		"edited after the claim: refused before the capture": {func(o *observation) {
			o.capture = nil
			o.verdict, o.admission = provenance.Verdict{Reason: provenance.ReasonAltered}, "it points elsewhere"
		}, stateConclude, backupsv1alpha1.ReasonUnverifiedBackup},
		"claimed, not yet verified: verify": {func(o *observation) { o.capture = nil }, stateVerifyArtifact, backupsv1alpha1.ReasonVerifyingArtifact},
		"verification recorded for another source: verify again": {func(o *observation) {
			o.capture = nil
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified, "ok [0000000000]", t0)
		}, stateVerifyArtifact, backupsv1alpha1.ReasonVerifyingArtifact},
		"verification refused this source: conclude": {func(o *observation) {
			o.capture = nil
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionFalse, backupsv1alpha1.ReasonArtifactMissing,
				"gone ["+fingerprint(o)+"]", t0)
		}, stateConclude, backupsv1alpha1.ReasonArtifactMissing},
		"verified by size only, nothing pins the sha256: refused before the staging": {func(o *observation) {
			o.capture = nil
			o.backup.Status.Artifact.Checksum = ""
			o.opts.Verify = restoreoptions.VerifySize
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
				"ok ["+fingerprint(o)+"]", t0)
		}, stateConclude, backupsv1alpha1.ReasonUnrecognisedArtifact},
		"verified in full, no checksum recorded: the measured sha256 pins it": {func(o *observation) {
			o.capture = nil
			o.backup.Status.Artifact.Checksum = ""
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
				"s3://b/k: 4096 bytes, sha256:"+strings.Repeat("cd", 32)+", etcd integrity trailer intact (verify: Full) ["+fingerprint(o)+"]", t0)
			o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
		}, stateCreateSafetySnapshot, backupsv1alpha1.ReasonSafetySnapshotRunning},
		"verified, cluster Available: safety snapshot": {func(o *observation) {
			o.capture = nil
			withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
				"ok ["+fingerprint(o)+"]", t0)
			o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
		}, stateCreateSafetySnapshot, backupsv1alpha1.ReasonSafetySnapshotRunning},
		"safety snapshot running: wait": {func(o *observation) { safetyRunning(o, 10*time.Minute) },
			stateWaitSafetySnapshot, backupsv1alpha1.ReasonSafetySnapshotRunning},
		"safety snapshot without outcome past the restore deadline: still recorded first": {func(o *observation) {
			safetyRunning(o, 31*time.Minute)
		}, stateWaitSafetySnapshot, backupsv1alpha1.ReasonSafetySnapshotRunning},
		"safety snapshot without outcome past its bound: refused, nothing touched": {func(o *observation) {
			safetyRunning(o, safetySnapshotBound)
		}, stateConclude, backupsv1alpha1.ReasonSafetySnapshotFailed},
		"safety snapshot deleted before it completed: refused": {func(o *observation) {
			safetyRunning(o, time.Minute)
			gone := metav1.NewTime(o.now)
			o.snapshot.DeletionTimestamp = &gone
		}, stateConclude, backupsv1alpha1.ReasonSafetySnapshotFailed},
		"concluded, safety snapshot without outcome past its bound: deleted, not waited for": {func(o *observation) {
			safetyRunning(o, safetySnapshotBound+time.Minute)
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonSafetySnapshotFailed, "x", t0)
		}, stateAbandonSafetySnapshot, ""},
		"concluded, abandoned safety snapshot being deleted: the hand-back goes on": {func(o *observation) {
			safetyRunning(o, safetySnapshotBound+time.Minute)
			gone := metav1.NewTime(o.now)
			o.snapshot.DeletionTimestamp = &gone
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonSafetySnapshotFailed, "x", t0)
			o.hr.Spec.Suspend = false
		}, stateReleaseClaim, ""},
		"HelmRelease resumed by someone mid-restore is suspended again": {func(o *observation) { o.hr.Spec.Suspend = false },
			stateSuspendHelmRelease, backupsv1alpha1.ReasonHelmReleaseSuspended},
		"old cluster present: delete it": {func(o *observation) {}, stateDeleteCluster, backupsv1alpha1.ReasonPurgingCluster},
		"staged above a live revision: read it again before the purge": {func(o *observation) { stagedAbove(o, 4242) },
			stateReadRevision, backupsv1alpha1.ReasonStaging},
		"the read before the purge runs: wait": {func(o *observation) {
			stagedAbove(o, 4242)
			o.recheck.state = liverevision.Running
		}, stateWaitRevision, backupsv1alpha1.ReasonStaging},
		"the live revision moved within the budget: purge": {func(o *observation) {
			stagedAbove(o, 4242)
			rechecked(o, 4242+stagingjob.RecheckBudget-1, nil, 1)
		}, stateDeleteCluster, backupsv1alpha1.ReasonPurgingCluster},
		"the live revision moved past the budget: refused, nothing touched": {func(o *observation) {
			stagedAbove(o, 4242)
			rechecked(o, 4242+stagingjob.RecheckBudget, nil, 1)
		}, stateConclude, backupsv1alpha1.ReasonLiveRevisionOvertaken},
		"the read before the purge failed: read again": {func(o *observation) {
			stagedAbove(o, 4242)
			rechecked(o, 0, errors.New("timeout"), recheckAttempts-1)
		}, stateReadRevision, backupsv1alpha1.ReasonStaging},
		"the read before the purge failed every time: refused, nothing touched": {func(o *observation) {
			stagedAbove(o, 4242)
			rechecked(o, 0, errors.New("timeout"), recheckAttempts)
		}, stateConclude, backupsv1alpha1.ReasonLiveRevisionUnconfirmed},
		"an old answer is not the purge's: read again": {func(o *observation) {
			stagedAbove(o, 4242)
			rechecked(o, 4242, nil, 1)
			o.recheck.result.Ended = o.now.Add(-recheckFresh - time.Second)
		}, stateReadRevision, backupsv1alpha1.ReasonStaging},
		"cluster gone but PVCs remain: no shortcut": {func(o *observation) { o.cluster, o.pvcs = nil, 2 },
			stateWaitPurge, backupsv1alpha1.ReasonPurgingCluster},
		"cluster and PVCs gone: re-create": {func(o *observation) { o.cluster = nil },
			stateRecreate, backupsv1alpha1.ReasonClusterPurged},
		"the HelmRelease's cluster re-created after the purge: rolled over": {purgedWorld,
			stateDeleteCluster, backupsv1alpha1.ReasonReplacingRecreatedCluster},
		"the HelmRelease's cluster re-created after the purge, being deleted: wait": {func(o *observation) {
			purgedWorld(o)
			now := metav1.NewTime(t0)
			o.cluster.DeletionTimestamp = &now
		}, stateWaitPurge, backupsv1alpha1.ReasonReplacingRecreatedCluster},
		"the HelmRelease's cluster put back before the purge was recorded: rolled over": {func(o *observation) {
			o.capture.uid = "captured-uid"
		}, stateDeleteCluster, backupsv1alpha1.ReasonReplacingRecreatedCluster},
		"the captured cluster itself: purged": {func(o *observation) { o.capture.uid = o.cluster.UID },
			stateDeleteCluster, backupsv1alpha1.ReasonPurgingCluster},
		"a cluster someone else made after the purge: left alone": {func(o *observation) {
			purgedWorld(o)
			o.cluster.Labels = map[string]string{fluxNameLabel: testApp}
		}, stateConclude, backupsv1alpha1.ReasonClusterReplaced},
		"our cluster with another source, the HelmRelease's: rolled over": {func(o *observation) { ours(o, "b", "other.db", 3, true) },
			stateDeleteCluster, backupsv1alpha1.ReasonReplacingRecreatedCluster},
		"our cluster with another source, not the HelmRelease's: left alone": {func(o *observation) {
			ours(o, "b", "other.db", 3, true)
			o.cluster.Labels = nil
		}, stateConclude, backupsv1alpha1.ReasonClusterReplaced},
		"Available with only the seed ready is not success": {func(o *observation) { ours(o, "b", key, 1, true) },
			stateWaitHealthy, backupsv1alpha1.ReasonEtcdClusterBootstrapping},
		"Available and every member ready: the success is sealed on the cluster": {func(o *observation) { ours(o, "b", key, 3, true) },
			stateRestoreProgressDeadline, ""},
		"sealed by this job, even if unhealthy now: the hand-back starts, no conclusion of its own": {func(o *observation) {
			ours(o, "b", key, 0, false)
			sealInCapture(o)
		}, stateRestoreHelmRelease, ""},
		"sealed by this job, HelmRelease resumed, claim released: the end is written": {func(o *observation) {
			ours(o, "b", key, 3, true)
			sealInCapture(o)
			o.hr.Spec.Suspend, o.holder = false, nil
		}, stateFinish, backupsv1alpha1.ReasonRestoreCompleted},
		"sealed in the capture, the cluster rewritten without its marks: the hand-back goes on": {func(o *observation) {
			ours(o, "b", key, 3, true)
			sealInCapture(o)
			o.cluster.Annotations = nil
			o.hr.Spec.Suspend = false
		}, stateReleaseClaim, ""},
		"sealed in the capture, cluster gone, claim released: the end is written, not ClaimLost": {func(o *observation) {
			ours(o, "b", key, 3, true)
			sealInCapture(o)
			o.cluster = nil
			o.hr.Spec.Suspend, o.holder = false, nil
		}, stateFinish, backupsv1alpha1.ReasonRestoreCompleted},
		// Seals a tenant can write (issue 32, item 4): not the driver's.
		"a seal on the re-created cluster's annotations only: sealed in the capture first": {func(o *observation) {
			ours(o, "b", key, 3, true)
			o.cluster.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(o.job.UID)
		}, stateRestoreProgressDeadline, ""},
		"a seal on the HelmRelease only: not sealed, the re-created cluster is waited for": {func(o *observation) {
			ours(o, "b", key, 0, false)
			o.hr.Annotations = map[string]string{backupsv1alpha1.RestoreSucceededAnnotation: string(o.job.UID)}
		}, stateWaitHealthy, backupsv1alpha1.ReasonEtcdClusterBootstrapping},
		"restored-by and a seal on the cluster captured live: it is purged as planned": {func(o *observation) {
			o.capture.uid = o.cluster.UID
			o.cluster.Annotations = map[string]string{backupsv1alpha1.RestoredByAnnotation: string(o.job.UID),
				backupsv1alpha1.RestoreSucceededAnnotation: string(o.job.UID)}
		}, stateDeleteCluster, backupsv1alpha1.ReasonPurgingCluster},
		"a cluster other than the one the capture sealed: not this job's": {func(o *observation) {
			ours(o, "b", key, 3, true)
			sealInCapture(o)
			o.cluster.UID = "another-uid"
			o.hr.Spec.Suspend, o.holder = false, nil
		}, stateFinish, backupsv1alpha1.ReasonRestoreCompleted},
		"a capture of an earlier driver: its seal on the cluster holds and is carried into the capture first": {func(o *observation) {
			ours(o, "b", key, 0, false)
			o.capture.legacy = true
			o.cluster.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(o.job.UID)
		}, stateCarrySeal, ""},
		"a capture of an earlier driver: its seal on the HelmRelease is carried too": {func(o *observation) {
			ours(o, "b", key, 3, true)
			o.capture.legacy = true
			o.cluster.Annotations = nil
			o.hr.Annotations = map[string]string{backupsv1alpha1.RestoreSucceededAnnotation: string(o.job.UID)}
		}, stateCarrySeal, ""},
		"a capture of an earlier driver, its seal carried: the HelmRelease is resumed": {func(o *observation) {
			ours(o, "b", key, 0, false)
			o.capture.legacy = true
			o.cluster.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = string(o.job.UID)
			sealInCapture(o)
		}, stateRestoreHelmRelease, ""},
		"a capture of an earlier driver, its seal carried: the cluster's marks no longer matter": {func(o *observation) {
			ours(o, "b", key, 3, true)
			o.capture.legacy, o.capture.uid = true, "old-uid"
			sealInCapture(o)
			o.cluster.Annotations = nil
			o.hr.Spec.Suspend = false
		}, stateReleaseClaim, ""},
		"the cluster this process created is known by its UID, not by annotations": {func(o *observation) {
			ours(o, "b", key, 3, true)
			purgedWorld(o)
			o.created = "yet-another-uid"
		}, stateDeleteCluster, backupsv1alpha1.ReasonReplacingRecreatedCluster},
		"sealed by another RestoreJob: not this one's success": {func(o *observation) {
			ours(o, "b", key, 3, true)
			o.cluster.Annotations[backupsv1alpha1.RestoreSucceededAnnotation] = "another-uid"
		}, stateRestoreProgressDeadline, ""},
		"healthy with the restore's raised progress deadline: it goes back first": {func(o *observation) {
			ours(o, "b", key, 3, true)
			raised := int32(1799)
			o.cluster.Spec.ProgressDeadlineSeconds = &raised
		}, stateRestoreProgressDeadline, ""},
		"healthy past the deadline with the raised progress deadline: put back, not rolled back": {func(o *observation) {
			ours(o, "b", key, 3, true)
			raised := int32(1799)
			o.cluster.Spec.ProgressDeadlineSeconds = &raised
			o.now = t0.Add(31 * time.Minute)
		}, stateRestoreProgressDeadline, ""},
		"bootstrap failed: roll back": {func(o *observation) { bootstrapFailedCluster(o, "b", key) },
			stateStartRollback, backupsv1alpha1.ReasonRollingBack},
		"bootstrap failed, rollback declined": {func(o *observation) {
			bootstrapFailedCluster(o, "b", key)
			no := false
			o.opts.Rollback = &no
		}, stateConclude, backupsv1alpha1.ReasonBootstrapFailed},
		"bootstrap failed, no safety Backup": {func(o *observation) {
			bootstrapFailedCluster(o, "b", key)
			o.capture.rollback = nil
		}, stateConclude, backupsv1alpha1.ReasonBootstrapFailed},
		"deadline passed while bootstrapping: roll back": {func(o *observation) {
			ours(o, "b", key, 1, true)
			o.now = t0.Add(31 * time.Minute)
		}, stateStartRollback, backupsv1alpha1.ReasonRollingBack},
		"deadline passed before the purge: fail, nothing to undo": {func(o *observation) {
			o.capture = nil
			o.now = t0.Add(31 * time.Minute)
		}, stateConclude, backupsv1alpha1.ReasonDeadlineExceeded},
		"restoreTimeoutSeconds overrides the default": {func(o *observation) {
			o.opts.RestoreTimeoutSeconds = 30
		}, stateConclude, backupsv1alpha1.ReasonDeadlineExceeded},
		"rolling back: the failed cluster is deleted": {func(o *observation) {
			bootstrapFailedCluster(o, "b", key)
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
		}, stateDeleteCluster, backupsv1alpha1.ReasonRollingBack},
		"rolling back: re-create from the safety Backup": {func(o *observation) {
			o.cluster = nil
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
		}, stateRecreate, backupsv1alpha1.ReasonRollingBack},
		"rolled back and healthy: concluded as failed, saying so": {func(o *observation) {
			ours(o, "rj-safety", safetyKey, 3, true)
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
		}, stateConclude, backupsv1alpha1.ReasonBootstrapFailed},
		"rolling back: a cluster the HelmRelease re-created is deleted": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
		}, stateDeleteCluster, backupsv1alpha1.ReasonRollingBack},
		"rolling back: someone else's cluster is left alone": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
			o.cluster.Labels = nil
		}, stateConclude, backupsv1alpha1.ReasonRollbackFailed},
		"rollback bootstrap failed too": {func(o *observation) {
			bootstrapFailedCluster(o, "rj-safety", safetyKey)
			withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
		}, stateConclude, backupsv1alpha1.ReasonRollbackFailed},
		"claim taken over after the capture": {func(o *observation) { o.holder = &claim.Holder{Namespace: "ns", Name: "other", UID: "uid-2"} },
			stateConclude, backupsv1alpha1.ReasonClaimLost},
		"deleted before anything was destroyed": {func(o *observation) {
			now := metav1.NewTime(t0)
			o.job.DeletionTimestamp = &now
		}, stateConclude, backupsv1alpha1.ReasonRestoreJobDeleted},
		"deleted after the purge: the restore goes on": {func(o *observation) {
			now := metav1.NewTime(t0)
			o.job.DeletionTimestamp = &now
			o.cluster = nil
		}, stateRecreate, backupsv1alpha1.ReasonClusterPurged},
		"concluded: the HelmRelease goes back first": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonDeadlineExceeded, "x", t0)
		}, stateRestoreHelmRelease, ""},
		"concluded without a healthy cluster: the HelmRelease is kept suspended, claim released": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonDeadlineExceeded, "x", t0)
			withCondition(o, backupsv1alpha1.RestoreConditionHelmReleaseReconciled, metav1.ConditionFalse, backupsv1alpha1.ReasonHelmReleaseKeptSuspended, "x", t0)
		}, stateReleaseClaim, ""},
		"concluded, HelmRelease was suspended before: left alone, claim released": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionTrue, backupsv1alpha1.ReasonRestoreCompleted, "x", t0)
			o.capture.hrPrior = hrSuspended
		}, stateReleaseClaim, ""},
		"concluded success, claim released: the capture goes": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionTrue, backupsv1alpha1.ReasonRestoreCompleted, "x", t0)
			o.hr.Spec.Suspend, o.holder, o.staging = false, nil, nil
		}, stateDeleteCapture, ""},
		"concluded, claim released, staging Job there: the capture goes (the claim is settled with the finalizer)": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionTrue, backupsv1alpha1.ReasonRestoreCompleted, "x", t0)
			o.hr.Spec.Suspend, o.holder = false, nil
		}, stateDeleteCapture, ""},
		"concluded, capture gone, staging Job there: the finalizer goes (with the claim's settling)": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionTrue, backupsv1alpha1.ReasonRestoreCompleted, "x", t0)
			o.hr.Spec.Suspend, o.holder, o.capture = false, nil, nil
		}, stateRemoveFinalizer, ""},
		"concluded failure after the purge keeps the capture": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonDeadlineExceeded, "x", t0)
			withCondition(o, backupsv1alpha1.RestoreConditionPurged, metav1.ConditionTrue, backupsv1alpha1.ReasonClusterPurged, "x", t0)
			o.hr.Spec.Suspend, o.holder, o.staging = false, nil, nil
		}, stateRemoveFinalizer, ""},
		"concluded failure before the purge: the capture goes": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonDeadlineExceeded, "x", t0)
			o.hr.Spec.Suspend, o.holder, o.staging = false, nil, nil
		}, stateDeleteCapture, ""},
		"handed back: the terminal phase is the last write": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonDeadlineExceeded, "x", t0)
			o.hr.Spec.Suspend, o.holder, o.job.Finalizers, o.staging, o.capture = false, nil, nil, nil, nil
		}, stateFinish, backupsv1alpha1.ReasonDeadlineExceeded},
		"concluded with a safety snapshot still running: it is recorded first": {func(o *observation) {
			withCondition(o, backupsv1alpha1.RestoreConditionOutcome, metav1.ConditionFalse, backupsv1alpha1.ReasonRestoreJobDeleted, "x", t0)
			o.snapshot = &etcdv1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: metav1.NewTime(t0)},
				Status: etcdv1alpha2.EtcdSnapshotStatus{Phase: etcdv1alpha2.SnapshotPhaseStarted}}
		}, stateWaitSafetySnapshot, ""},
		"claim taken, start not yet written: the first step under the claim": {func(o *observation) {
			o.job.Status.StartedAt, o.capture = nil, nil
		}, stateVerifyArtifact, backupsv1alpha1.ReasonVerifyingArtifact},
		"finished and cleaned up: a later suspension is not undone": {func(o *observation) {
			o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
			o.job.Finalizers, o.holder, o.capture = nil, nil, nil
		}, stateIgnore, ""},
		"succeeded with its capture left (a sealed success): removed after the end": {func(o *observation) {
			o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
			o.holder = nil
		}, stateDeleteCapture, ""},
	} {
		t.Run(name, func(t *testing.T) {
			o := world()
			tc.mutate(o)
			d := decide(o, 30*time.Minute)
			if d.state != tc.want || d.reason != tc.reason {
				t.Fatalf("decide = %s/%s (%s), want %s/%s", d.state, d.reason, d.message, tc.want, tc.reason)
			}
		})
	}
}

// The re-created cluster carries the restore's source, this job's marks and
// an operator deadline no later than the restore's own.
func TestRecreatedCluster(t *testing.T) {
	o := world()
	o.cluster = nil
	d := decide(o, 30*time.Minute)
	obj, err := recreatedCluster(o, recreateSource(o), d.deadline)
	if err != nil {
		t.Fatal(err)
	}
	claim, _, _ := unstructured.NestedString(obj.Object, "spec", "bootstrap", "restore", "source", "pvc", "claimName")
	sub, _, _ := unstructured.NestedString(obj.Object, "spec", "bootstrap", "restore", "source", "pvc", "subPath")
	pds, _, _ := unstructured.NestedInt64(obj.Object, "spec", "progressDeadlineSeconds")
	if claim != stagingjob.Name(o.job.UID) || sub != stagingjob.RestoreFile || pds != 29*60-30 {
		t.Fatalf("claim %q/%q, progressDeadlineSeconds %d", claim, sub, pds)
	}
	if obj.GetAnnotations()[backupsv1alpha1.RestoredByAnnotation] != "uid-1" || obj.GetAnnotations()[backupsv1alpha1.RestoredFromAnnotation] != "b" {
		t.Fatalf("annotations %v", obj.GetAnnotations())
	}
	withCondition(o, backupsv1alpha1.RestoreConditionRollback, metav1.ConditionTrue, backupsv1alpha1.ReasonBootstrapFailed, "failed", t0)
	if src := recreateSource(o); src.BackupName != "rj-safety" {
		t.Fatalf("a rollback re-creates from the safety Backup, got %+v", src)
	}
	if got := progressDeadlineSeconds(-time.Second); got != 1 {
		t.Fatalf("a spent budget still gives the CRD's minimum, got %d", got)
	}
}

// Failure messages after the capture say how to recover.
func TestRecoveryAdvice(t *testing.T) {
	o := world()
	o.cluster = nil // purged, nothing re-created: the HelmRelease stays suspended
	msg := recoveryAdvice(o)
	for _, want := range []string{"ConfigMap driver/cap", "rj-safety", "kept suspended", "runbook.md#restorejob-helmreleasekeptsuspended",
		`kubectl -n ns patch helmrelease etcd --type merge -p '{"spec":{"suspend":false}}'`} {
		if !strings.Contains(msg, want) {
			t.Errorf("advice %q does not mention %q", msg, want)
		}
	}
	// Rolled back and healthy: handed back.
	o = world()
	ours(o, "rj-safety", o.capture.rollback.Key, 3, true)
	if msg := recoveryAdvice(o); !strings.Contains(msg, "returned to its prior state (NotSuspended)") || strings.Contains(msg, "kept suspended") {
		t.Errorf("with a healthy cluster the HelmRelease goes back: %q", msg)
	}
	o.capture = nil
	if recoveryAdvice(o) != "Nothing was changed." {
		t.Errorf("before the capture nothing was changed, got %q", recoveryAdvice(o))
	}
}

// Names stay within the limits the operator and Kubernetes impose, whatever
// the RestoreJob is called.
func TestChildNames(t *testing.T) {
	for _, name := range []string{
		"a-very-long-restore-job-name-that-goes-on-and-on-and-on-for-ever-and-ever",
		"restore-from-the-nightly-backup.2026-06-01",
		strings.Repeat("r", 253),
	} {
		rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "u"}}
		if n := safetyName(rj); len(n) > 48 || strings.Contains(n, ".") {
			t.Errorf("safety name %q is not a DNS label of at most 48 characters", n)
		}
		if n := captureName(rj); len(n) > 253 {
			t.Errorf("capture name %q is %d characters", n, len(n))
		}
		other := rj.DeepCopy()
		other.UID = "v"
		if safetyName(rj) == safetyName(other) || captureName(rj) == captureName(other) {
			t.Error("a re-created RestoreJob of the same name must not reuse the child names")
		}
	}
}

// The capture keeps unknown spec fields, labels and annotations, and drops
// server-set metadata and status.
func TestCapturedCluster(t *testing.T) {
	live := liveCluster("ns", "x")
	live.SetResourceVersion("42")
	live.SetUID("old")
	live.Object["status"] = map[string]any{"readyMembers": int64(3)}
	got := capturedCluster(live)
	if got.GetResourceVersion() != "" || got.GetUID() != "" {
		t.Error("server-set metadata was captured")
	}
	if _, ok := got.Object["status"]; ok {
		t.Error("status was captured")
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "additionalMetadata", "annotations", "extra"); v != "x" {
		t.Error("unknown spec field lost")
	}
	if got.GetAnnotations()["meta.helm.sh/release-name"] != "etcd" || got.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
		t.Error("labels or annotations lost")
	}
}

// An unverified Backup's object must be exactly one the namespace's
// strategy could have written.
func TestMatchRendered(t *testing.T) {
	rendered := []strategyS3{{Bucket: "bkt", Endpoint: "https://s3", Key: "tenant-a/etcd/", Secret: "creds"}}
	for key, ok := range map[string]bool{
		"tenant-a/etcd/nightly-abc.db":        true,
		"tenant-a/etcd/sub/nightly.db":        false,
		"tenant-a/etcd/../tenant-b/etcd/x.db": false,
		"tenant-b/etcd/nightly.db":            false,
		"tenant-a/etcd/.db":                   false,
		"tenant-a/etcd/nightly.tar":           false,
	} {
		src := artifact.Source{Bucket: "bkt", Endpoint: "https://s3", Key: key, SecretName: "creds"}
		if got := matchRendered(src, toTemplates(rendered)) == ""; got != ok {
			t.Errorf("key %q admitted=%v, want %v", key, got, ok)
		}
	}
	other := artifact.Source{Bucket: "bkt", Endpoint: "https://evil", Key: "tenant-a/etcd/x.db", SecretName: "creds"}
	if matchRendered(other, toTemplates(rendered)) == "" {
		t.Error("another endpoint was admitted")
	}
}

// A dry run (spec.options.dryRun) is the rehearsal controller's, and a
// RestoreJob does what it was asked when it started (issue 37, item 5;
// Cozystack's CRD lets the spec change): a job that has not started
// follows its options; a restore that started (its finalizer, its claim or
// capture, its Claimed or Outcome condition) goes on exactly as it would
// when dryRun is set later, and says so in a condition; a dry run that
// started (a rehearsal's Ready reason) stays the rehearsal's when dryRun
// is dropped. Malformed options are no dry run.
func TestDecideFollowsWhatTheJobStartedAs(t *testing.T) {
	dry := &runtime.RawExtension{Raw: []byte(`{"dryRun":true}`)}
	asking := func(o *observation, raw *runtime.RawExtension) *observation {
		o.job.Spec.Options = raw
		o.opts, o.optsErr = restoreoptions.Parse(raw)
		return o
	}
	fresh := func() *observation {
		o := world()
		o.job.Finalizers, o.job.Status = nil, backupsv1alpha1.RestoreJobStatus{}
		o.holder, o.capture = nil, nil
		return o
	}
	if d := decide(fresh(), time.Hour); d.state != stateAddFinalizer {
		t.Fatalf("a real restore's first step is %s, want AddFinalizer", d.state)
	}
	if d := decide(asking(fresh(), dry), time.Hour); d.state != stateIgnore {
		t.Fatalf("a dry run's first step is %s, want Ignore", d.state)
	}
	malformed := &runtime.RawExtension{Raw: []byte(`{"dryRun":true,"bogus":1}`)}
	if d := decide(asking(fresh(), malformed), time.Hour); d.state == stateIgnore {
		t.Error("malformed options are taken for a dry run")
	}

	ended := func() *observation {
		o := world()
		o.job.Status.Phase = backupsv1alpha1.RestoreJobPhaseSucceeded
		return o
	}
	// The claim and the capture (in the driver's namespace) are a record
	// of the restore even with the finalizer taken off by hand.
	unfinalized := func() *observation {
		o := world()
		o.job.Finalizers = nil
		return o
	}
	conditioned := func() *observation {
		o := fresh()
		o.job.Finalizers = nil
		meta.SetStatusCondition(&o.job.Status.Conditions, metav1.Condition{Type: backupsv1alpha1.RestoreConditionOutcome,
			Status: metav1.ConditionFalse, Reason: string(backupsv1alpha1.ReasonBackupNotFound), Message: "gone"})
		return o
	}
	for name, make := range map[string]func() *observation{"mid-restore": world, "ended": ended, "finalizer removed": unfinalized, "concluded": conditioned} {
		want := decide(make(), time.Hour)
		o := asking(make(), dry)
		got := decide(o, time.Hour)
		if got.state != want.state || got.reason != want.reason {
			t.Errorf("%s with dryRun set later: step %s (%s), want %s (%s) as without", name, got.state, got.reason, want.state, want.reason)
		}
		if o.job.Status.Phase.IsTerminal() || got.state == stateIgnore || got.state == stateAddFinalizer {
			// No status of their own: the next step's carries it.
			continue
		}
		c := meta.FindStatusCondition(desiredStatus(o, got).Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored)
		if c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("%s: the ignored dryRun is not said (%v)", name, c)
		}
		if c := meta.FindStatusCondition(desiredStatus(make(), want).Conditions, backupsv1alpha1.RestoreConditionDryRunChangeIgnored); c != nil {
			t.Errorf("%s: an ignored change is said without one: %v", name, c)
		}
	}

	// A dry run the rehearsal started, its dryRun dropped: still Ignore,
	// never a finalizer.
	for _, reason := range []backupsv1alpha1.RestoreReason{backupsv1alpha1.ReasonRehearsing, backupsv1alpha1.ReasonRehearsalFailed} {
		o := fresh()
		now := metav1.NewTime(o.now)
		o.job.Status = backupsv1alpha1.RestoreJobStatus{Phase: backupsv1alpha1.RestoreJobPhaseRunning, StartedAt: &now,
			Conditions: []metav1.Condition{{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(reason)}}}
		if d := decide(o, time.Hour); d.state != stateIgnore {
			t.Errorf("a started dry run (%s) whose options dropped dryRun: step %s, want Ignore", reason, d.state)
		}
	}
}
