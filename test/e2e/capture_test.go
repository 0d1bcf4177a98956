package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
)

// lostNamespaces are the tenant cluster's namespaces created after the
// base Backup (at t1) and deleted by accident (at t2), with how many
// ConfigMaps each holds.
var lostNamespaces = map[string]int{"orders": 4, "payments": 3}

// A Plan that turns point-in-time capture on, on a strategy whose
// StrategyPolicy allows it, gets a capture Pod once its Backup is
// inspected: the sandbox's kubelet runs it (its projected token, the
// tenant etcd's client Service by name, the API server by
// KUBERNETES_SERVICE_HOST), and the window's end passes the writes made
// on the tenant's kube-apiserver, with the Capturing condition Following.
func TestCaptureFollowsTheTenantControlPlane(t *testing.T) {
	tn := newTenant(t, true)
	tn.allowPointInTime()
	tn.deploy(1)
	cs, _ := tn.controlPlane("kubernetes")
	plan := tn.capturingPlan("continuous")
	tn.awaitManifest(tn.takePlanBackup("base", plan.Name))
	rec := tn.awaitCapturePod()

	t1 := tn.createLostNamespaces(cs)
	tn.awaitWindowPast(rec, t1)
}

// allowPointInTime lets the tenant's strategy capture, with a segment cut
// every second.
func (tn *tenant) allowPointInTime() {
	tn.t.Helper()
	var sp driverv1alpha1.StrategyPolicy
	tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Name: tn.class}, &sp)).To(Succeed())
	before := sp.DeepCopy()
	sp.Spec.PointInTime = &driverv1alpha1.PointInTime{Enabled: true, SegmentSeconds: ptr(int32(1))}
	tn.g.Expect(sb.Client.Patch(tn.ctx, &sp, client.MergeFrom(before))).To(Succeed())
}

// capturingPlan is a suspended Plan (the test takes its Backups) asking
// for point-in-time capture.
func (tn *tenant) capturingPlan(name string) *backupsv1alpha1.Plan {
	tn.t.Helper()
	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name, Annotations: map[string]string{
			planpolicy.Suspend: "true", planpolicy.PointInTime: "true"}},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class,
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: "@daily"},
		},
	}
	tn.g.Expect(sb.Client.Create(tn.ctx, plan)).To(Succeed())
	return plan
}

// awaitCapturePod waits for the capture's record and for its Deployment's
// Pod to run, ready and never restarted, and returns the record.
func (tn *tenant) awaitCapturePod() *driverv1alpha1.CaptureProgress {
	tn.t.Helper()
	var rec driverv1alpha1.CaptureProgress
	tn.g.Eventually(func(g Gomega) {
		var list driverv1alpha1.CaptureProgressList
		g.Expect(sb.Client.List(tn.ctx, &list, client.InNamespace(tn.ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		rec = list.Items[0]
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	tn.g.Eventually(func(g Gomega) {
		pod := tn.capturePod(g, rec.Name)
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "%+v", pod.Status)
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		c := pod.Status.ContainerStatuses[0]
		g.Expect(c.State.Running).NotTo(BeNil(), "%+v", c)
		g.Expect(c.RestartCount).To(BeZero(), "the capture exited: %+v\n%s", c.LastTerminationState, tn.captureLog(pod))
		g.Expect(isReady(pod)).To(BeTrue())
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	return &rec
}

// capturePod is the one Pod of the capture name.
func (tn *tenant) capturePod(g Gomega, name string) *corev1.Pod {
	var pods corev1.PodList
	g.Expect(sb.Client.List(tn.ctx, &pods, client.InNamespace(tn.ns), client.MatchingLabels(keeper.Labels(name)))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	return &pods.Items[0]
}

// captureLog is the capture container's output, for failure messages.
func (tn *tenant) captureLog(pod *corev1.Pod) string {
	b, err := os.ReadFile(filepath.Join(sb.Dir, "pods", pod.Namespace, pod.Name+"-"+string(pod.UID), keeper.ContainerName+".log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// createLostNamespaces creates lostNamespaces with their ConfigMaps
// through the tenant's kube-apiserver and returns when they all existed.
func (tn *tenant) createLostNamespaces(cs *kubernetes.Clientset) time.Time {
	tn.t.Helper()
	for ns, n := range lostNamespaces {
		_, err := cs.CoreV1().Namespaces().Create(tn.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		tn.g.Expect(err).NotTo(HaveOccurred())
		for i := range n {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(tn.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
				Data: map[string]string{"n": fmt.Sprint(i)}}, metav1.CreateOptions{})
			tn.g.Expect(err).NotTo(HaveOccurred())
		}
	}
	return time.Now()
}

// awaitWindowPast waits for the record's window to reach past t with the
// capture Following.
func (tn *tenant) awaitWindowPast(rec *driverv1alpha1.CaptureProgress, t time.Time) {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(rec), rec)).To(Succeed())
		g.Expect(rec.Status.Window).NotTo(BeNil())
		g.Expect(rec.Status.Window.To).NotTo(BeNil(), "%+v", rec.Status)
		g.Expect(rec.Status.Window.To.Time).To(BeTemporally(">", t), "%+v", rec.Status)
		c := meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(driverv1alpha1.CaptureReasonFollowing), c.Message)
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string {
		pod := tn.capturePod(tn.g, rec.Name)
		return tn.captureLog(pod)
	})
}
