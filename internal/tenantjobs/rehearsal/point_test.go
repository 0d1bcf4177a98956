package rehearsal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/pointchain"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// inspected gives b the manifest the driver's inspection would sign for
// its snapshot at revision rev: only such a Backup is a base.
func inspected(t *testing.T, b *backupsv1alpha1.Backup, rev int64) {
	t.Helper()
	m := driverv1alpha1.BackupManifest{Revision: rev, CompactedRevision: 1, Keys: 1, DBSizeBytes: 1 << 20, InspectedAt: metav1.Now()}
	if err := provenance.SealManifest(context.Background(), testKeys, b, &m); err != nil {
		t.Fatal(err)
	}
	if err := artifact.SetManifest(b, &m); err != nil {
		t.Fatal(err)
	}
}

// chainOf is the store of the chain following b at rev, where the
// capture would have written it (pointintime.ChainOf), and its base.
func chainOf(t *testing.T, b *backupsv1alpha1.Backup, rev int64) (changelog.Store, changelog.Base) {
	t.Helper()
	c, err := pointintime.ChainOf(b, rev)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	return changelog.Store{S3: s3object.Store{Policy: policy, AllowHTTP: true},
		Creds:  s3object.Credentials{AccessKeyID: s3Creds.AccessKeyID, SecretAccessKey: s3Creds.SecretAccessKey},
		Bucket: s3object.Location{Endpoint: testEndpoint, Bucket: testBucket, ForcePathStyle: true},
		Chain:  c.Prefix, Limits: changelog.DefaultLimits}, c.Base
}

func dryRunTo(ns, name, backup, point string) *backupsv1alpha1.RestoreJob {
	rj := dryRun(ns, name, backup)
	rj.Spec.Options = restoreoptions.Options{DryRun: true, PointInTime: point}.Raw()
	return rj
}

// pointFixture is a tenant whose Backup nightly (at revision base) is
// followed by a captured chain: namespace d and a pod in it (up to
// revision point), then namespace b and its pods deleted, as the live
// etcd did too; a later Backup evening holds the end. It returns the
// chain's segments as stored.
type pointFixture struct {
	ns          string
	cli         *clientv3.Client
	nightly     *backupsv1alpha1.Backup
	base, point int64
	// at is when the chain's revisions up to the point were received;
	// the later ones came 10 s after.
	at       time.Time
	store    changelog.Store
	segments []pointchain.Segment
}

func newPointFixture(t *testing.T) pointFixture {
	t.Helper()
	ctx := context.Background()
	f := pointFixture{ns: newNamespace(t)}
	deployApp(t, f.ns)
	cli := liveEtcd(t, f.ns)
	f.cli = cli
	f.nightly, _ = backupOf(t, f.ns, "nightly", cli)
	f.base = revision(t, cli)
	inspected(t, f.nightly, f.base)
	create(t, f.nightly)

	put(t, cli, "/registry/namespaces/d")
	put(t, cli, "/registry/pods/d/p0")
	f.point = revision(t, cli)
	del(t, cli, "/registry/namespaces/b")
	del(t, cli, "/registry/pods/b/")
	at := time.Now()
	f.at = at
	var base changelog.Base
	f.store, base = chainOf(t, f.nightly, f.base)
	f.segments = pointchain.Upload(ctx, t, f.store, base,
		[]changelog.Revision{pointchain.Put(f.base+1, at, "/registry/namespaces/d", "{}"), pointchain.Put(f.base+2, at, "/registry/pods/d/p0", "{}")},
		[]changelog.Revision{pointchain.Delete(f.base+3, at.Add(10*time.Second), "/registry/namespaces/b"),
			pointchain.Delete(f.base+4, at.Add(10*time.Second), "/registry/pods/b/p0", "/registry/pods/b/p1", "/registry/pods/b/p2")})
	if f.point != f.base+2 || revision(t, cli) != f.base+4 {
		t.Fatalf("the live etcd's revisions (point %d, now %d) are not the chain's (base %d)", f.point, revision(t, cli), f.base)
	}
	evening, _ := backupOf(t, f.ns, "evening", cli)
	// Taken after the chain's last change.
	evening.Spec.TakenAt = metav1.NewTime(at.Add(20 * time.Second))
	if err := provenance.Seal(ctx, testKeys, evening); err != nil {
		t.Fatal(err)
	}
	inspected(t, evening, f.base+4)
	create(t, evening)
	return f
}

// The dry run of a point: the RestoreJob names the newest Backup
// (evening, after the point); the driver rehearses the restore to the
// point from the base at or before it (nightly) and its chain, replayed
// in the Job (the real etcd-stage): namespace d, made before the point,
// is there after; namespace b, deleted after the point, comes back; the
// counts are those at the point. The base is pinned on the RestoreJob
// (pointintime's pin, as a restore's) and named with the point in its
// status and on the base Backup.
func TestDryRunToAPointReportsTheCountsAtThatPoint(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newPointFixture(t)
	liveRev := f.base + 4

	create(t, dryRunTo(f.ns, "to-point", "evening", fmt.Sprint(f.point)))
	rj := waitEnd(t, f.ns, "to-point")
	ready := readyOf(rj)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %s", ready.Reason, rj.Status.Message)
	rep := reportOf(t, rj)
	g.Expect(rep.NamespacesReturning).To(Equal([]string{"b"}))
	g.Expect(rep.NamespacesVanishing).To(BeEmpty(), "namespace d was made before the point: the replay brings it")
	g.Expect(changeOf(rep, "pods")).To(Equal(&driverv1alpha1.CountChange{Name: "pods", Before: 7, After: 10}))
	g.Expect(changeOf(rep, "namespaces")).To(Equal(&driverv1alpha1.CountChange{Name: "namespaces", Before: 3, After: 4}))
	g.Expect(rep.RevisionAfter).To(Equal(liveRev + stagingstep.DefaultMargin))
	g.Expect(rj.Status.Message).To(ContainSubstring(fmt.Sprintf("a restore to %d (base Backup nightly at revision %d", f.point, f.base)))
	g.Expect(rj.Status.Message).To(ContainSubstring("bring back namespaces b"))

	var pin pointintime.Pin
	g.Expect(json.Unmarshal([]byte(rj.Annotations[pointintime.PinAnnotation]), &pin)).To(Succeed())
	g.Expect(pin.Point).To(Equal(fmt.Sprint(f.point)))
	g.Expect(pin.Backup).To(Equal("nightly"))
	g.Expect(pin.BackupUID).To(Equal(f.nightly.UID))

	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	want := pointreplay.Point{Chain: f.store.Chain, Base: changelog.Base{Revision: f.base, SHA256: strings.TrimPrefix(f.nightly.Status.Artifact.Checksum, "sha256:")},
		Target: changelog.Target{Revision: f.point}}
	g.Expect(jobs.Items[0].Spec.Template.Spec.Containers[0].Args).To(ContainElements(want.Args()))

	got := &backupsv1alpha1.Backup{}
	g.Expect(k.Get(ctx, client.ObjectKeyFromObject(f.nightly), got)).To(Succeed())
	g.Expect(artifact.LastRehearsal(got)).NotTo(BeNil())
	g.Expect(artifact.LastRehearsal(got).Succeeded).To(BeTrue())
	g.Expect(artifact.LastRehearsal(got).PointInTime).To(Equal(fmt.Sprint(f.point)))
}

// A segment of the chain corrupted in S3 (its recorded sha256 kept) ends
// the dry run with the replay's reason, as it would end the restore
// before anything was destroyed.
func TestDryRunToAPointOfACorruptedChainFails(t *testing.T) {
	g := NewWithT(t)
	f := newPointFixture(t)
	seg := f.segments[0]
	bad := append([]byte(nil), seg.Data...)
	bad[len(bad)-1] ^= 0xff
	pointchain.Replace(context.Background(), t, f.store, seg.Key, bad, pointchain.SHA256(seg.Data))

	create(t, dryRunTo(f.ns, "to-point", "nightly", fmt.Sprint(f.point)))
	rj := waitEnd(t, f.ns, "to-point")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonRehearsalFailed)))
	g.Expect(rj.Status.Message).To(ContainSubstring(string(pointreplay.ReasonChainChecksum)))
	g.Expect(rj.Status.Message).To(ContainSubstring(fmt.Sprintf("of a restore to %d (base Backup nightly", f.point)))
}

// A point before every Backup has no base: the dry run is refused before
// it counts or runs anything.
func TestDryRunToAPointBeforeEveryBackupIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newPointFixture(t)
	create(t, dryRunTo(f.ns, "too-early", "nightly", fmt.Sprint(f.base-1)))
	rj := waitEnd(t, f.ns, "too-early")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseFailed))
	g.Expect(readyOf(rj).Reason).To(Equal(string(backupsv1alpha1.ReasonNoBaseAtPoint)))
	g.Expect(rj.Status.Message).To(ContainSubstring("no base Backup at or before"))
	var jobs batchv1.JobList
	g.Expect(k.List(ctx, &jobs, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty())
	g.Expect(censusesOf(f.ns)).To(BeZero())
}

// A point given as a time: the newest revision received at or before it
// (namespace d there, b not yet deleted), from the base taken at or
// before it.
func TestDryRunToATimeReportsTheCountsAtThatTime(t *testing.T) {
	g := NewWithT(t)
	f := newPointFixture(t)
	point := f.at.Add(5 * time.Second).UTC().Format(time.RFC3339)
	create(t, dryRunTo(f.ns, "to-time", "evening", point))
	rj := waitEnd(t, f.ns, "to-time")
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %s", readyOf(rj).Reason, rj.Status.Message)
	rep := reportOf(t, rj)
	g.Expect(rep.NamespacesReturning).To(Equal([]string{"b"}))
	g.Expect(rep.NamespacesVanishing).To(BeEmpty())
	g.Expect(rj.Status.Message).To(ContainSubstring("a restore to " + point + " (base Backup nightly"))
	var jobs batchv1.JobList
	g.Expect(k.List(context.Background(), &jobs, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(jobs.Items).To(HaveLen(1))
	g.Expect(jobs.Items[0].Spec.Template.Spec.Containers[0].Args).To(ContainElement(HavePrefix("--to-time=")))
}
