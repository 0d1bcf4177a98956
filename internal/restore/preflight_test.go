package restore

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// Writes a refused RestoreJob may make: its own finalizer and status, and
// a claim it takes and gives back.
func onlyOwnWrites(log []string) bool {
	for _, w := range log {
		if !strings.HasPrefix(w, "status") && !strings.HasPrefix(w, "patch RestoreJob") && !strings.HasSuffix(w, " Lease") {
			return false
		}
	}
	return true
}

func setVersion(v string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, "spec", "version") }
}

// Every refusal is terminal, explains itself, and changes nothing: the
// cluster, its volumes and the HelmRelease are as they were.
func TestPreflightRefusals(t *testing.T) {
	str := func(s string) *string { return &s }
	resign := func(b *backupsv1alpha1.Backup) *backupsv1alpha1.Backup {
		if err := provenance.Seal(context.Background(), testKeys, b); err != nil {
			panic(err)
		}
		return b
	}
	for name, tc := range map[string]struct {
		app    appOpts
		backup func(ns string) *backupsv1alpha1.Backup
		job    func(rj *backupsv1alpha1.RestoreJob)
		// after runs once the Backup exists (tampering with S3).
		after func(b *backupsv1alpha1.Backup)
		want  backupsv1alpha1.RestoreReason
	}{
		"Backup not Ready": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Status.Phase = backupsv1alpha1.BackupPhaseFailed
				return resign(b)
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
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Spec.ApplicationRef = backupsv1alpha1.TypedLocalObjectReference{APIGroup: str("apps.cozystack.io"), Kind: "Postgres", Name: testApp}
				return resign(b)
			},
			want: backupsv1alpha1.ReasonUnsupportedTarget,
		},
		"Backup of an application that does not own the cluster": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Spec.ApplicationRef.Name = "other"
				return resign(b)
			},
			want: backupsv1alpha1.ReasonUnsupportedTarget,
		},
		"cluster managed by another HelmRelease": {
			app: appOpts{mutate: func(u *unstructured.Unstructured) {
				u.SetLabels(map[string]string{"helm.toolkit.fluxcd.io/name": "someone-else"})
			}},
			want: backupsv1alpha1.ReasonApplicationMismatch,
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
		"unverified Backup pointing at another tenant's object": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				putObject("victim/etcd/theirs.db", testenv.Snapshot(2, "victim"))
				b.Status.Artifact.URI = artifact.URI(testBucket, "victim/etcd/theirs.db")
				return b
			},
			want: backupsv1alpha1.ReasonUnverifiedBackup,
		},
		"endpoint in a denied range": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Status.UnderlyingResources = nil
				b.Spec.DriverMetadata[artifact.MetaEndpoint] = "https://169.254.169.254"
				return resign(b)
			},
			want: backupsv1alpha1.ReasonEndpointRefused,
		},
		"credentials Secret missing": {app: appOpts{noSecret: true}, want: backupsv1alpha1.ReasonCredentialsUnavailable},
		"no live EtcdCluster":        {app: appOpts{noCluster: true}, want: backupsv1alpha1.ReasonSourceClusterNotFound},
		"paused cluster": {
			app: appOpts{mutate: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "replicas")
			}},
			want: backupsv1alpha1.ReasonClusterPaused,
		},
		"in-memory cluster": {
			app: appOpts{mutate: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "Memory", "spec", "storage", "medium")
			}},
			want: backupsv1alpha1.ReasonMemoryStorage,
		},
		"volume too small for the restore": {
			app: appOpts{mutate: func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "10Ki", "spec", "storage", "size")
			}},
			want: backupsv1alpha1.ReasonInsufficientStorage,
		},
		"snapshot from a newer etcd": {app: appOpts{mutate: setVersion("3.5.21")}, want: backupsv1alpha1.ReasonEtcdVersionTooOld},
		"no copy possible":           {app: appOpts{notAvailable: true}, want: backupsv1alpha1.ReasonClusterNotAvailable},
		"safety snapshot demanded of an unavailable cluster": {
			app: appOpts{notAvailable: true},
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"safetySnapshot":true}`)}
			},
			want: backupsv1alpha1.ReasonClusterNotAvailable,
		},
		"malformed options": {
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"restoreTimeoutSeconds":"soon"}`)}
			},
			want: backupsv1alpha1.ReasonMalformedOptions,
		},
		"misspelt option": {
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"safetySnaphot":false}`)}
			},
			want: backupsv1alpha1.ReasonMalformedOptions,
		},
		"timeout beyond the cap": {
			job: func(rj *backupsv1alpha1.RestoreJob) {
				rj.Spec.Options = &runtime.RawExtension{Raw: []byte(`{"restoreTimeoutSeconds":9999999}`)}
			},
			want: backupsv1alpha1.ReasonMalformedOptions,
		},
		"object deleted out of band": {
			after: func(b *backupsv1alpha1.Backup) { removeObject(b) },
			want:  backupsv1alpha1.ReasonArtifactMissing,
		},
		"object truncated": {
			after: func(b *backupsv1alpha1.Backup) { putObject(objectKey(b), testenv.Snapshot(1, "short")) },
			want:  backupsv1alpha1.ReasonArtifactSizeMismatch,
		},
		"object overwritten with random bytes of the same size": {
			after: func(b *backupsv1alpha1.Backup) {
				putObject(objectKey(b), bytes.Repeat([]byte{0x5a}, int(b.Status.Artifact.SizeBytes)))
			},
			want: backupsv1alpha1.ReasonArtifactChecksumMismatch,
		},
		"wrong checksum recorded": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Status.Artifact.Checksum = "sha256:" + strings.Repeat("0", 64)
				return resign(b)
			},
			want: backupsv1alpha1.ReasonArtifactChecksumMismatch,
		},
		"corrupt object, no checksum recorded": {
			backup: func(ns string) *backupsv1alpha1.Backup {
				b := unsignedBackup(ns, "b", "b-aaaaa")
				b.Status.Artifact.Checksum = ""
				return resign(b)
			},
			after: func(b *backupsv1alpha1.Backup) {
				data := testenv.Snapshot(2, "b-aaaaa")
				data[100] ^= 0xff
				putObject(objectKey(b), data)
			},
			want: backupsv1alpha1.ReasonArtifactCorrupt,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			deployApp(t, ns, tc.app)
			var before *unstructured.Unstructured
			if !tc.app.noCluster {
				before = getCluster(g, ns)
			}
			b := ourBackup(ns, "b", "b-aaaaa")
			if tc.backup != nil {
				b = tc.backup(ns)
			}
			g.Expect(k.Create(ctx, b)).To(Succeed())
			if tc.after != nil {
				tc.after(b)
			}
			rj := newRestoreJob(ns, "restore", "b", "")
			if tc.job != nil {
				tc.job(rj)
			}
			g.Expect(k.Create(ctx, rj)).To(Succeed())
			done := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
			g.Expect(readyReason(done)).To(Equal(string(tc.want)), "message: %s", done.Status.Message)
			g.Expect(done.Status.Message).To(ContainSubstring("Nothing was changed"))
			g.Expect(onlyOwnWrites(writes.of(ns))).To(BeTrue(), "writes: %v", writes.of(ns))
			g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
			g.Expect(leaseCount(g, ns)).To(BeZero())
			if before != nil {
				g.Expect(getCluster(g, ns).GetUID()).To(Equal(before.GetUID()))
				g.Expect(pvcCount(g, ns)).To(Equal(3))
			}
			g.Eventually(func() []string { return eventReasons(ns) }).WithTimeout(10 * time.Second).
				Should(ContainElement(string(tc.want)))
		})
	}
}

func objectKey(b *backupsv1alpha1.Backup) string {
	src, err := artifact.Resolve(b)
	if err != nil {
		panic(err)
	}
	return src.Key
}

func removeObject(b *backupsv1alpha1.Backup) {
	if err := s3c.RemoveObject(context.Background(), testBucket, objectKey(b), minio.RemoveObjectOptions{}); err != nil {
		panic(err)
	}
}

func pvcCount(g Gomega, ns string) int {
	var list corev1.PersistentVolumeClaimList
	g.Expect(k.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return len(list.Items)
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
			// The core's shared finalizer, as Cozystack's core controller
			// puts on every RestoreJob, does not make it ours.
			rj := newRestoreJob(ns, "restore", "b", "")
			rj.Finalizers = []string{backupsv1alpha1.CleanupFinalizer}
			g.Expect(k.Create(ctx, rj)).To(Succeed())
			g.Consistently(func(g Gomega) {
				rj := getJob(g, ns, "restore")
				g.Expect(rj.Finalizers).To(Equal([]string{backupsv1alpha1.CleanupFinalizer}))
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
	op.Set(func(op *testenv.Operator) { op.FailSnapshots = true })
	old := getCluster(g, ns)
	g.Expect(k.Create(ctx, ourBackup(ns, "b", "b-aaaaa"))).To(Succeed())
	g.Expect(k.Create(ctx, newRestoreJob(ns, "restore", "b", ""))).To(Succeed())
	rj := waitPhase(t, ns, "restore", backupsv1alpha1.RestoreJobPhaseFailed)
	g.Expect(readyReason(rj)).To(Equal(string(backupsv1alpha1.ReasonSafetySnapshotFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring("snapshot job failed"))
	g.Expect(getCluster(g, ns).GetUID()).To(Equal(old.GetUID()))
	g.Expect(getHR(g, ns).Spec.Suspend).To(BeFalse())
	g.Expect(leaseCount(g, ns)).To(BeZero())
	_, err := getCapture(g, rj)
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
