package restore

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// Writes a refused RestoreJob may make: its own finalizer and status.
func onlyOwnWrites(log []string) bool {
	for _, w := range log {
		if !strings.HasPrefix(w, "status") && !strings.HasPrefix(w, "patch RestoreJob") {
			return false
		}
	}
	return true
}

// Every refusal is terminal, explains itself, and changes nothing.
func TestPreflightRefusals(t *testing.T) {
	str := func(s string) *string { return &s }
	for name, tc := range map[string]struct {
		noCluster    bool
		notAvailable bool
		backup       func(ns string) *backupsv1alpha1.Backup
		job          func(rj *backupsv1alpha1.RestoreJob)
		want         backupsv1alpha1.RestoreReason
	}{
		"Backup not Ready": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := ourBackup(ns, "b", "b-aaaaa")
				b.Status.Phase = backupsv1alpha1.BackupPhaseFailed
				return b
			},
			want: backupsv1alpha1.ReasonBackupNotReady,
		},
		"to-copy target": {
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.TargetApplicationRef = &backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "other"}
			},
			want: backupsv1alpha1.ReasonUnsupportedTarget,
		},
		"Backup of another application kind": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := ourBackup(ns, "b", "b-aaaaa")
				b.Spec.ApplicationRef = backupsv1alpha1.TypedLocalObjectReference{APIGroup: str("apps.cozystack.io"), Kind: "Postgres", Name: testApp}
				return b
			},
			want: backupsv1alpha1.ReasonUnsupportedTarget,
		},
		"unrecognised artefact": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := ourBackup(ns, "b", "b-aaaaa")
				b.Status.UnderlyingResources = &runtime.RawExtension{Raw: []byte(`{"kind":"Velero","apiVersion":"v1"}`)}
				return b
			},
			want: backupsv1alpha1.ReasonUnrecognisedArtifact,
		},
		"no restorable object key": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := ourBackup(ns, "b", "b-aaaaa")
				b.Status.UnderlyingResources, b.Status.Artifact = nil, nil
				delete(b.Spec.DriverMetadata, artifact.MetaSnapshotName)
				return b
			},
			want: backupsv1alpha1.ReasonNoObjectKey,
		},
		"no live EtcdCluster": {noCluster: true, want: backupsv1alpha1.ReasonSourceClusterNotFound},
		"malformed options": {
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"restoreTimeoutSeconds":"soon"}`)}
			},
			want: backupsv1alpha1.ReasonMalformedOptions,
		},
		"safety snapshot demanded of an unavailable cluster": {
			notAvailable: true,
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"safetySnapshot":true}`)}
			},
			want: backupsv1alpha1.ReasonClusterNotAvailable,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			if !tc.noCluster {
				deployApp(t, ns, appOpts{notAvailable: tc.notAvailable})
			} else {
				g.Expect(k.Create(ctx, helmRelease(ns, false))).To(Succeed())
			}
			b := ourBackup(ns, "b", "b-aaaaa")
			if tc.backup != nil {
				b = tc.backup(ns)
			}
			g.Expect(k.Create(ctx, b)).To(Succeed())
			rj := newRestoreJob(ns, "restore", "b", "")
			if tc.job != nil {
				tc.job(rj)
			}
			g.Expect(k.Create(ctx, rj)).To(Succeed())
			done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
			g.Expect(readyReason(done)).To(Equal(string(tc.want)))
			g.Expect(done.Status.Message).To(ContainSubstring("Nothing was changed"))
			g.Expect(onlyOwnWrites(writes.of(ns))).To(BeTrue(), "writes: %v", writes.of(ns))
			g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
			g.Expect(leaseCount(g, ns)).To(BeZero())
			g.Eventually(func() []string { return eventReasons(ns) }).WithTimeout(10 * time.Second).
				Should(ContainElement(string(tc.want)))
		})
	}
}

// RestoreJobs of other strategies are another driver's: no finalizer, no
// status, no write at all.
func TestForeignStrategyLeftUntouched(t *testing.T) {
	for name, ref := range map[string]backupsv1alpha1.TypedLocalObjectReference{
		"foreign group": {APIGroup: strPtr("velero.strategy.example.com"), Kind: "Etcd", Name: "x"},
		"foreign kind":  {APIGroup: strPtr("strategy.backups.cozystack.io"), Kind: "Job", Name: "x"},
		"no group":      {Kind: "Etcd", Name: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			deployApp(t, ns, appOpts{})
			b := ourBackup(ns, "b", "b-aaaaa")
			b.Spec.StrategyRef = ref
			g.Expect(k.Create(ctx, b)).To(Succeed())
			g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
			g.Consistently(func(g Gomega) {
				rj := getJob(g, ns, "restore")
				g.Expect(rj.Finalizers).To(BeEmpty())
				g.Expect(rj.Status.Phase).To(BeEmpty())
			}).WithTimeout(2 * time.Second).Should(Succeed())
			g.Expect(writes.of(ns)).To(BeEmpty())
		})
	}
}

func strPtr(s string) *string { return &s }

// A missing Backup is waited for (visible), picked up when it appears, and
// fails the job only at the deadline.
func TestBackupNotFound(t *testing.T) {
	t.Run("appears later", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		startOperator(t, ns)
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "late", `{"safetySnapshot":false}`))).To(Succeed())
		rj := waitReason(t, ns, "restore", backupsv1alpha1.ReasonBackupNotFound)
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhasePending))
		g.Expect(k.Create(ctx, ourBackup(ns, "late", "late-aaaaa"))).To(Succeed())
		waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
		g.Expect(bootstrapKey(getCluster(g, ns))).To(Equal("tenant/etcd/late-aaaaa.db"))
	})
	t.Run("never appears", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		ns := newNamespace(t)
		deployApp(t, ns, appOpts{})
		g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "missing", `{"restoreTimeoutSeconds":2}`))).To(Succeed())
		rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
		g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonBackupNotFound)))
		g.Expect(onlyOwnWrites(writes.of(ns))).To(BeTrue())
	})
}

// A failed safety snapshot stops the restore before anything destructive.
func TestSafetySnapshotFailed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	op := startOperator(t, ns)
	op.set(func(op *operator) { op.failSnapshots = true })
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonSafetySnapshotFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring("snapshot job failed"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(leaseCount(g, ns)).To(BeZero())
	err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: captureName(rj)}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	for _, w := range writes.of(ns) {
		g.Expect(w).NotTo(Or(ContainSubstring("EtcdCluster"), ContainSubstring("HelmRelease"), ContainSubstring("ConfigMap")))
	}
}

// A Backup read that fails (API server timeout) is retried, never a failure.
func TestTransientBackupReadRetries(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	deployApp(t, ns, appOpts{})
	startOperator(t, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	failBackupReads(ns, 4)
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", `{"safetySnapshot":false}`))).To(Succeed())
	waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseSucceeded)
	g.Expect(failedBackupReads(ns)).To(Equal(4))
	g.Expect(writes.of(ns)).NotTo(ContainElement(ContainSubstring("Failed")))
	g.Expect(writes.of(ns)).NotTo(ContainElement("status " + string(backupsv1alpha1.ReasonBackupNotFound)))
}
