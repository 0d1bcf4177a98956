package staging

import (
	"io"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

func spec() Spec {
	return Spec{
		Namespace: "tenant", RestoreJobName: "rj", RestoreJobUID: "uid-1", Image: "driver:v1",
		Restore:      Object{Endpoint: "https://s3.example", Bucket: "b", Key: "tenant/etcd/a.db", SecretName: "s3", Size: 1 << 20, SHA256: "sha256:" + string(make64('a'))},
		Rollback:     &Object{Endpoint: "https://s3.example", Bucket: "b", Key: "tenant/etcd/safety.db", SecretName: "s3", Size: 2 << 20, SHA256: string(make64('b'))},
		LiveRevision: 5000, Deadline: 10 * time.Minute, AllowedEndpointCIDRs: []string{"10.0.0.0/8"},
	}
}

func make64(c byte) []byte {
	out := make([]byte, 64)
	for i := range out {
		out[i] = c
	}
	return out
}

// The containers' arguments are what the staging binary parses, with the
// verified size and sha256, and the revision plans of restore and
// rollback.
func TestArgumentsParseBackIntoTheVerifiedFacts(t *testing.T) {
	_, job := Build(spec())
	check := func(args []string, key, sha string, size, floor, bump int64, out string) {
		t.Helper()
		o, err := step.Parse(args, io.Discard)
		if err != nil {
			t.Fatalf("parse %v: %v", args, err)
		}
		if o.Key != key || o.SHA256 != sha || o.Size != size || o.RevisionFloor != floor || o.BumpRevision != bump || o.Out != out {
			t.Fatalf("parsed %+v", o)
		}
	}
	check(job.Spec.Template.Spec.Containers[0].Args, "tenant/etcd/a.db", string(make64('a')), 1<<20, 5000, 0, "/staging/restore.db")
	check(job.Spec.Template.Spec.InitContainers[0].Args, "tenant/etcd/safety.db", string(make64('b')), 2<<20, 5000+RollbackMargin, 0, "/staging/rollback.db")

	s := spec()
	s.LiveRevision = 0
	_, job = Build(s)
	check(job.Spec.Template.Spec.Containers[0].Args, "tenant/etcd/a.db", string(make64('a')), 1<<20, 0, UnknownLiveBump, "/staging/restore.db")
}

// The Job is bounded and least-privileged, and a refusal ends it at once.
func TestJobIsBoundedAndUnprivileged(t *testing.T) {
	pvc, job := Build(spec())
	if pvc.Name != job.Name || pvc.Labels[backupsv1alpha1.StagingLabel] != "uid-1" || job.Labels[backupsv1alpha1.StagingLabel] != "uid-1" {
		t.Fatalf("names/labels: %s %s %v", pvc.Name, job.Name, job.Labels)
	}
	if got := pvc.Spec.Resources.Requests.Storage().Value(); got != 2*(3<<20)+64<<20 {
		t.Fatalf("claim size %d", got)
	}
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatal("service account token mounted")
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Fatal("may run as root")
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 {
			t.Fatalf("container %s not locked down", c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Limits.Cpu().IsZero() {
			t.Fatalf("container %s unbounded", c.Name)
		}
	}
	if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 600 {
		t.Fatalf("deadline %v", job.Spec.ActiveDeadlineSeconds)
	}
	if ttl := job.Spec.TTLSecondsAfterFinished; ttl == nil || *ttl != 86400 {
		t.Fatalf("TTL after finished %v, want a day", ttl)
	}
	rule := job.Spec.PodFailurePolicy.Rules[0]
	if rule.Action != batchv1.PodFailurePolicyActionFailJob || rule.OnExitCodes.Values[0] != report.ExitRefused {
		t.Fatalf("refusal rule %+v", rule)
	}
}

// The floor the purge's re-check compares with is the Job's own argument
// (immutable), not an annotation a tenant can edit.
func TestFloorOf(t *testing.T) {
	s := Spec{Namespace: "ns", RestoreJobName: "rj", RestoreJobUID: "u", Image: "img",
		Restore: Object{Bucket: "b", Key: "k", SecretName: "s", Size: 1}, Rollback: &Object{Bucket: "b", Key: "r", SecretName: "s", Size: 1}}
	s.LiveRevision = 4242
	_, job := Build(s)
	if got := FloorOf(job); got != 4242 {
		t.Fatalf("floor %d, want 4242", got)
	}
	s.LiveRevision = 0
	_, job = Build(s)
	if got := FloorOf(job); got != 0 {
		t.Fatalf("a blind bump has no floor; got %d", got)
	}
}

// A restore to a point: the restore container is given the point (and
// parses it back), the memory of its scratch etcd and a claim with room
// for the replay; the rollback's container is staged as always.
func TestAPointIsReplayedInTheRestoreContainer(t *testing.T) {
	s := spec()
	s.Point = &pointreplay.Point{Chain: "tenant/etcd/changes/40", Base: changelog.Base{Revision: 40, SHA256: string(make64('a'))},
		Target: changelog.Target{Revision: 77}}
	pvc, job := Build(s)
	restore := job.Spec.Template.Spec.Containers[0]
	o, err := step.Parse(restore.Args, io.Discard)
	if err != nil || o.Point != *s.Point || o.RevisionFloor != 5000 {
		t.Fatalf("restore container parses to %+v, %v", o, err)
	}
	if rb, err := step.Parse(job.Spec.Template.Spec.InitContainers[0].Args, io.Discard); err != nil || rb.Point.Set() {
		t.Fatalf("the rollback's container replays: %+v, %v", rb.Point, err)
	}
	if got := restore.Resources.Limits.Memory().Value(); got != PointMemoryFloor+1<<20 {
		t.Fatalf("memory limit %d", got)
	}
	if got, want := pvc.Spec.Resources.Requests.Storage().Value(), int64(2*(3<<20)+64<<20+2*(1<<20)+PointChangesRoom); got != want {
		t.Fatalf("claim size %d, want %d", got, want)
	}
	for size, want := range map[int64]int64{0: PointMemoryFloor, 1 << 30: PointMemoryFloor + 1<<30, 8 << 30: PointMemoryCeiling} {
		if got := PointMemoryLimit(size); got != want {
			t.Fatalf("PointMemoryLimit(%d) = %d, want %d", size, got, want)
		}
	}
}
