package rehearsal

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

const uid = "0b8a6d2e-1111-2222-3333-444455556666"

func spec() Spec {
	return Spec{JobName: "etcd-rehearsal-x", Namespace: "tenant-a", RestoreJobName: "rj", RestoreJobUID: uid, Image: "ghcr.io/x/driver:v1",
		Object: stagingstep.Object{Endpoint: "https://s3.example.com", Bucket: "b", Key: "tenant-a/etcd/s.db", SecretName: "creds",
			Size: 1 << 30, SHA256: "sha256:" + strings.Repeat("ab", 32)},
		LiveRevision: 1500, Deadline: 30 * time.Minute, AllowedEndpointCIDRs: []string{"10.0.0.0/8"}}
}

func owner() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "RestoreJob", Name: "rj", UID: uid}
}

// The container's arguments parse back into the verified facts and the
// live revision (or etcd's blind bump when it is unknown).
func TestArgumentsParseBackIntoTheVerifiedFacts(t *testing.T) {
	for _, live := range []int64{1500, 0} {
		s := spec()
		s.LiveRevision = live
		c := Build(s, owner()).Spec.Template.Spec.Containers[0]
		if c.Command[0] != "/etcd-stage" || c.Args[0] != step.Subcommand {
			t.Fatalf("command %q args %q", c.Command, c.Args)
		}
		o, err := step.Parse(c.Args[1:], &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if o.WorkDir != WorkDir || o.Staging.Size != s.Object.Size || o.Staging.SHA256 != strings.Repeat("ab", 32) || o.Staging.Key != s.Object.Key {
			t.Fatalf("parsed %+v", o)
		}
		if live > 0 && (o.Staging.RevisionFloor != live || o.Staging.BumpRevision != 0) {
			t.Fatalf("live %d: floor %d bump %d", live, o.Staging.RevisionFloor, o.Staging.BumpRevision)
		}
		if live == 0 && o.Staging.BumpRevision != stagingstep.UnknownLiveBump {
			t.Fatalf("unknown live revision: bump %d", o.Staging.BumpRevision)
		}
	}
}

// The Job is as bounded and unprivileged as the staging Job, works in a
// sized emptyDir (no claim), ends at once on a refusal and is controlled
// by the RestoreJob.
func TestJobIsBoundedAndUnprivileged(t *testing.T) {
	j := Build(spec(), owner())
	p := j.Spec.Template.Spec
	c := p.Containers[0]
	if *p.AutomountServiceAccountToken || *p.EnableServiceLinks || !*p.SecurityContext.RunAsNonRoot || *p.SecurityContext.RunAsUser != 65532 ||
		p.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security %+v", p)
	}
	if !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("container security %+v", c.SecurityContext)
	}
	if c.Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("memory limit %s", c.Resources.Limits.Memory())
	}
	if len(p.Volumes) != 1 || p.Volumes[0].EmptyDir == nil || p.Volumes[0].EmptyDir.SizeLimit.Value() != 3<<30+256<<20 {
		t.Fatalf("volumes %+v", p.Volumes)
	}
	r := j.Spec.PodFailurePolicy.Rules[0]
	if r.Action != "FailJob" || r.OnExitCodes.Values[0] != report.ExitRefused {
		t.Fatalf("pod failure policy %+v", r)
	}
	if *j.Spec.TTLSecondsAfterFinished != 3600 || j.Labels[backupsv1alpha1.RehearsalLabel] != uid || p.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("job %+v", j.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || string(ref.UID) != uid {
		t.Fatalf("controller %+v", ref)
	}
}

// Mine accepts only the Job as built: the label alone, a forged
// controller, another command, other arguments or an extra container do
// not make a Job the driver's.
func TestOwnedRefusesLookAlikes(t *testing.T) {
	want := Build(spec(), owner())
	if !tenantjobs.Mine(want.DeepCopy(), want) {
		t.Fatal("the Job as built is not Mine")
	}
	for name, mutate := range map[string]func(j *corev1.PodSpec, m *metav1.ObjectMeta){
		"no controller":     func(_ *corev1.PodSpec, m *metav1.ObjectMeta) { m.OwnerReferences = nil },
		"other owner UID":   func(_ *corev1.PodSpec, m *metav1.ObjectMeta) { m.OwnerReferences[0].UID = "x" },
		"other owner kind":  func(_ *corev1.PodSpec, m *metav1.ObjectMeta) { m.OwnerReferences[0].Kind = "ConfigMap" },
		"other label":       func(_ *corev1.PodSpec, m *metav1.ObjectMeta) { m.Labels[backupsv1alpha1.RehearsalLabel] = "y" },
		"other command":     func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.Containers[0].Command = []string{"/bin/sh"} },
		"other image":       func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.Containers[0].Image = "evil:latest" },
		"other args":        func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.Containers[0].Args[1] = "--work-dir=/tmp" },
		"extra container":   func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.Containers = append(p.Containers, p.Containers[0]) },
		"an init container": func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.InitContainers = p.Containers },
		"other env":         func(p *corev1.PodSpec, _ *metav1.ObjectMeta) { p.Containers[0].Env = nil },
	} {
		j := want.DeepCopy()
		mutate(&j.Spec.Template.Spec, &j.ObjectMeta)
		if tenantjobs.Mine(j, want) {
			t.Errorf("%s: a look-alike is taken for the driver's Job", name)
		}
	}
}

// A dry run to a point: its Job's arguments carry the point (the staging
// step replays to it), and its Pod has the memory and the room the replay
// takes, by staging's rule for the staging Job; without a point, neither.
func TestAPointIsReplayedInTheRehearsalJob(t *testing.T) {
	s := spec()
	s.Object.SHA256 = strings.Repeat("ab", 32)
	p := pointreplay.Point{Chain: changelog.ChainPrefix("tenant-a/etcd", 1200), Base: changelog.Base{Revision: 1200, SHA256: s.Object.SHA256},
		Target: changelog.Target{Revision: 1400}}
	plain := Build(s, owner())
	s.Point = &p
	job := Build(s, owner())
	c := job.Spec.Template.Spec.Containers[0]
	o, err := step.Parse(c.Args[1:], &bytes.Buffer{})
	if err != nil || o.Staging.Point != p {
		t.Fatalf("parsed point %+v, %v", o.Staging.Point, err)
	}
	if got, want := c.Resources.Limits[corev1.ResourceMemory], staging.PointMemoryLimit(s.Object.Size); got.Value() != want {
		t.Errorf("memory limit %s, want %d (the replay's)", got.String(), want)
	}
	if got, want := *job.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit, 5*s.Object.Size+256<<20+staging.PointChangesRoom; got.Value() != want {
		t.Errorf("work dir %s, want %d", got.String(), want)
	}
	pc := plain.Spec.Template.Spec.Containers[0]
	if got := pc.Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse(MemoryLimit)) != 0 {
		t.Errorf("without a point: memory limit %s", got.String())
	}
	if got := *plain.Spec.Template.Spec.Volumes[0].EmptyDir.SizeLimit; got.Value() != 3*s.Object.Size+256<<20 {
		t.Errorf("without a point: work dir %s", got.String())
	}
	for _, a := range pc.Args {
		if strings.HasPrefix(a, "--chain") || strings.HasPrefix(a, "--to-") {
			t.Errorf("without a point: argument %s", a)
		}
	}
}
