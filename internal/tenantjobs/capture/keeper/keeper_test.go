package keeper

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
)

// A Plan that asks for capture, on a strategy that allows it, gets one
// capture Deployment after its newest good Backup, hardened, with the
// tenant's own S3 key and etcd certificate and a token that may patch
// only its record's status; a newer good Backup rolls it onto a new
// chain (the window goes on, the previous chain having reached the new
// base); the capture's reports move the window and the condition; turning
// capture off removes everything the driver made.
func TestCaptureFollowsTheNewestGoodBackup(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.reconcile(p)
	var list driverv1alpha1.CaptureProgressList
	h.g.Expect(env.Client.List(h.ctx, &list, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(list.Items).To(BeEmpty(), "no good Backup yet: nothing to follow")

	h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)
	h.g.Expect(rec.Spec).To(Equal(driverv1alpha1.CaptureProgressSpec{Plan: "daily", BaseBackup: "b1", BaseRevision: 100}))
	h.g.Expect(strings.HasPrefix(rec.Name, "etcd-capture-")).To(BeTrue())
	d, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	// As built, after the API server's defaults: the next reconcile
	// finds it the driver's and writes nothing.
	writes := 0
	ww, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.r.Client = interceptor.NewClient(ww, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if _, ok := o.(*appsv1.Deployment); ok {
				writes++
			}
			return c.Update(ctx, o, opts...)
		}})
	h.reconcile(p)
	h.g.Expect(writes).To(BeZero(), "the Deployment was written again")
	h.r.Client = env.Client
	pod := d.Spec.Template.Spec
	h.g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	h.g.Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
	h.g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	h.g.Expect(c.Command).To(Equal([]string{tenantjobs.Command}))
	h.g.Expect(c.Args[0]).To(Equal("capture"))
	h.g.Expect(arg(d, "base-revision")).To(Equal("100"))
	h.g.Expect(arg(d, "base-sha256")).To(Equal(strings.Repeat("ab", 32)))
	h.g.Expect(arg(d, "prefix")).To(Equal(h.ns + "/etcd"))
	h.g.Expect(arg(d, "etcd-endpoints")).To(Equal("https://etcd-client." + h.ns + ".svc:2379"))
	h.g.Expect(arg(d, "progress")).To(Equal(h.ns + "/" + rec.Name))
	h.g.Expect(arg(d, "segment-interval")).To(Equal("10s"))
	h.g.Expect(c.Resources.Limits.Memory().String()).To(Equal("128Mi"))
	h.g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	h.g.Expect(*pod.AutomountServiceAccountToken).To(BeFalse())
	h.g.Expect(pod.ServiceAccountName).To(Equal(rec.Name))
	h.g.Expect(c.Env[0].ValueFrom.SecretKeyRef.Name).To(Equal("creds"), "the tenant's own S3 key, the base Backup's")
	h.g.Expect(pod.Volumes[0].Secret.SecretName).To(Equal("etcd-client-tls"))
	h.g.Expect(pod.Volumes[1].Projected.Sources[0].ServiceAccountToken).NotTo(BeNil())

	var role rbacv1.Role
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: rec.Name}, &role)).To(Succeed())
	h.g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{driverv1alpha1.GroupVersion.Group},
		Resources: []string{"captureprogresses/status"}, ResourceNames: []string{rec.Name}, Verbs: []string{"patch"}}}))
	var rb rbacv1.RoleBinding
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: rec.Name}, &rb)).To(Succeed())
	h.g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: rec.Name, Namespace: h.ns}}))
	h.g.Expect(rec.Status.Window.FromBackup).To(Equal("b1"))
	h.expectGrant(rec.Name)

	// The capture reports; the window reaches its newest durable change.
	now := h.clk.Now()
	h.report(rec, 180, now.Add(-5*time.Second), nil)
	res := h.reconcile(p)
	rec = h.record(p)
	cond := meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonFollowing))
	h.g.Expect(rec.Status.Window.To.Time).To(BeTemporally("==", now.Add(-5*time.Second)))
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", 56*time.Second, time.Second), "called again when the lag would pass 60 s")

	// A newer good Backup below the newest durable change: a new chain,
	// the same Deployment rolled, the window going on from b1.
	h.backup("b2", 30, 150)
	h.reconcile(p)
	rec = h.record(p)
	h.g.Expect(rec.Spec.BaseBackup).To(Equal("b2"))
	h.g.Expect(rec.Status.Window.FromBackup).To(Equal("b1"))
	h.g.Expect(rec.Status.NewestRevision).To(BeZero(), "the previous chain's report is cleared")
	rolled, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(rolled.UID).To(Equal(d.UID))
	h.g.Expect(arg(rolled, "base-revision")).To(Equal("150"))
	cond = meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonStarting))
	// A new chain that has not reported within maxLagSeconds of its
	// start is Stalled, and stays so until it reports.
	h.clk.Step(2 * time.Minute)
	for range 2 {
		h.reconcile(p)
		cond = meta.FindStatusCondition(h.record(p).Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
		h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonStalled), cond.Message)
	}

	// Off: everything the driver made goes.
	var cur backupsv1alpha1.Plan
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(p), &cur)).To(Succeed())
	cur.Annotations[planpolicy.PointInTime] = "false"
	h.g.Expect(env.Client.Update(h.ctx, &cur)).To(Succeed())
	h.reconcile(p)
	for _, o := range []client.Object{&appsv1.Deployment{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ServiceAccount{}, &driverv1alpha1.CaptureProgress{}} {
		err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: rec.Name}, o)
		h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T: %v", o, err)
	}
}

// A Deployment at the capture's name with the driver's labels that the
// driver did not make is never rolled onto a new chain or deleted: the
// record says Refused and an Event says what to do.
func TestLookAlikeDeploymentIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)
	ours, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(env.Client.Delete(h.ctx, ours)).To(Succeed())

	// The tenant's: the driver's name, labels and template, its own
	// owner (the Plan, whose UID it can read) and arguments.
	fake := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: rec.Name, Labels: ours.Labels, Annotations: ours.Annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Plan", Name: p.Name, UID: p.UID, Controller: ptrTo(true)}}},
		Spec: *ours.Spec.DeepCopy()}
	fake.Spec.Template.Spec.Containers[0].Args = append(fake.Spec.Template.Spec.Containers[0].Args, "--tenant")
	h.g.Expect(env.Client.Create(h.ctx, fake)).To(Succeed())

	h.backup("b2", 30, 150)
	h.reconcile(p)
	got, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(got.UID).To(Equal(fake.UID))
	h.g.Expect(got.Generation).To(Equal(fake.Generation), "the look-alike was changed")
	h.g.Expect(arg(got, "base-revision")).To(Equal("100"))
	rec = h.record(p)
	cond := meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonRefused))
	h.g.Expect(cond.Message).To(ContainSubstring("not the capture the driver builds"))
	h.g.Expect(strings.Join(h.events(), "\n")).To(ContainSubstring("Refused"))

	// Turned off, the record goes; the look-alike stays.
	var cur backupsv1alpha1.Plan
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKeyFromObject(p), &cur)).To(Succeed())
	delete(cur.Annotations, planpolicy.PointInTime)
	h.g.Expect(env.Client.Update(h.ctx, &cur)).To(Succeed())
	h.reconcile(p)
	_, err = h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred(), "the look-alike was deleted")
}

// A gap (the capture exits 66 after writing it) ends the window where the
// chain ended, says so, stops the capture and creates one new base
// BackupJob for the Plan, named as the scheduler names its runs, however
// often the status says gap afterwards. A report that stops coming turns
// the condition Stalled once the lag passes maxLagSeconds.
func TestGapTakesANewBaseAtOnce(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)

	// Stalled first: the last report is older than the 60 s allowed.
	h.report(rec, 120, h.clk.Now().Add(-2*time.Minute), nil)
	h.reconcile(p)
	rec = h.record(p)
	cond := meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonStalled), cond.Message)
	h.g.Expect(lags.byID[[2]string{h.ns, "daily"}].maxLag).To(Equal(time.Minute))

	at := h.clk.Now().Add(-time.Minute)
	h.report(rec, 130, at, &driverv1alpha1.CaptureGap{Reason: "Compacted", At: metav1.NewMicroTime(at), Message: "revision 131 was compacted"})
	h.reconcile(p)
	rec = h.record(p)
	cond = meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
	h.g.Expect(cond.Reason).To(Equal(driverv1alpha1.CaptureReasonGap))
	h.g.Expect(rec.Status.Window.To.Time).To(BeTemporally("==", at))
	name := cronschedule.RunName("daily", at)
	var job backupsv1alpha1.BackupJob
	h.g.Expect(env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, &job)).To(Succeed())
	h.g.Expect(job.Spec.PlanRef.Name).To(Equal("daily"))
	h.g.Expect(job.Spec.BackupClassName).To(Equal("etcd"))
	h.g.Expect(job.Labels[backupsv1alpha1.PlanNameLabel]).To(Equal("daily"))
	_, err := h.deployment(rec.Name)
	h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the capture on the ended chain is stopped: %v", err)
	h.g.Expect(strings.Join(h.events(), "\n")).To(ContainSubstring("BackupJob " + name))

	// The status says gap again, at another time: no second BackupJob.
	later := at.Add(5 * time.Minute)
	h.report(rec, 130, later, &driverv1alpha1.CaptureGap{Reason: "ChainEnded", At: metav1.NewMicroTime(later)})
	h.reconcile(p)
	var jobs backupsv1alpha1.BackupJobList
	h.g.Expect(env.Client.List(h.ctx, &jobs, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(jobs.Items).To(HaveLen(1))

	// The new base's Backup starts a new chain and a new window.
	h.backup("b3", 70, 500)
	h.reconcile(p)
	rec = h.record(p)
	h.g.Expect(rec.Spec.BaseRevision).To(Equal(int64(500)))
	h.g.Expect(rec.Status.Window.FromBackup).To(Equal("b3"), "a window never spans a gap")
	d, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(arg(d, "base-revision")).To(Equal("500"))
}

// expectGrant: the API server lets the capture's ServiceAccount patch
// its record's status, and nothing else of it or of another record.
func (h *harness) expectGrant(name string) {
	user := "system:serviceaccount:" + h.ns + ":" + name
	for _, tc := range []struct {
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "captureprogresses", Subresource: "status", Name: name}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Resource: "captureprogresses", Subresource: "status", Name: name}, false},
		{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "captureprogresses", Name: name}, false},
		{authorizationv1.ResourceAttributes{Verb: "patch", Resource: "captureprogresses", Subresource: "status", Name: "another"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "captureprogresses", Name: name}, false},
	} {
		tc.attrs.Namespace, tc.attrs.Group = h.ns, driverv1alpha1.GroupVersion.Group
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"}, ResourceAttributes: &tc.attrs}}
		h.g.Expect(env.Client.Create(h.ctx, sar)).To(Succeed())
		h.g.Expect(sar.Status.Allowed).To(Equal(tc.allowed), "%+v: %s", tc.attrs, sar.Status.Reason)
	}
}

func ptrTo[T any](v T) *T { return &v }

// Two Plans of one application that both ask for capture get one
// capture: the second is told (an Event) and gets no record, since two
// captures of one etcd could write one chain.
func TestOneCapturePerApplication(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.backup("b1", 0, 100)
	h.reconcile(p)
	first := h.record(p)

	second := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "hourly", Annotations: map[string]string{planpolicy.PointInTime: "true"}},
		Spec:       p.Spec,
	}
	h.g.Expect(env.Client.Create(h.ctx, second)).To(Succeed())
	h.backupOf("hourly", "h1", 10, 120)
	h.events()
	h.reconcile(second)
	var list driverv1alpha1.CaptureProgressList
	h.g.Expect(env.Client.List(h.ctx, &list, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(list.Items).To(HaveLen(1))
	h.g.Expect(list.Items[0].Name).To(Equal(first.Name))
	h.g.Expect(strings.Join(h.events(), "\n")).To(ContainSubstring("captured already, for Plan daily"))
}

// The platform admin turning capture off for the strategy
// (spec.pointInTime.enabled false) removes the captures of its Plans,
// whatever the Plans ask.
func TestAdminTurningItOffRemovesTheCapture(t *testing.T) {
	h := newHarness(t)
	p := h.plan()
	h.backup("b1", 0, 100)
	h.reconcile(p)
	rec := h.record(p)
	_, err := h.deployment(rec.Name)
	h.g.Expect(err).NotTo(HaveOccurred())

	setEnabled := func(on bool) {
		var sp driverv1alpha1.StrategyPolicy
		h.g.Expect(env.Client.Get(h.ctx, client.ObjectKey{Name: "s3"}, &sp)).To(Succeed())
		sp.Spec.PointInTime.Enabled = on
		h.g.Expect(env.Client.Update(h.ctx, &sp)).To(Succeed())
	}
	setEnabled(false)
	defer setEnabled(true)
	h.reconcile(p)
	for _, o := range []client.Object{&appsv1.Deployment{}, &rbacv1.Role{}, &driverv1alpha1.CaptureProgress{}} {
		err := env.Client.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: rec.Name}, o)
		h.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T: %v", o, err)
	}
}
