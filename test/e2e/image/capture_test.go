package image

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
)

// In container mode the point-in-time capture runs from the image too: its
// Pod's container, from the driver's image with the Pod's security
// context, dials the tenant etcd's client Service by name (the sandbox's
// hosts file as its /etc/hosts), reports to the API server named by
// KUBERNETES_SERVICE_HOST with its projected token, and the window passes
// the writes made after the base Backup.
func TestCaptureRunsFromTheImage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const capNS, class = "tenant-image-capture", "image-capture"
	one := int32(1)
	deployTenant(g, capNS, class, driverv1alpha1.StrategyPolicySpec{PointInTime: &driverv1alpha1.PointInTime{Enabled: true, SegmentSeconds: &one}})
	plan := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: capNS, Name: "continuous", Annotations: map[string]string{
			planpolicy.Suspend: "true", planpolicy.PointInTime: "true"}},
		Spec: backupsv1alpha1.PlanSpec{ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: class, Schedule: backupsv1alpha1.PlanSchedule{Cron: "@daily"}},
	}
	g.Expect(sb.Client.Create(ctx, plan)).To(Succeed())
	job := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: capNS, Name: "base"}, Spec: backupsv1alpha1.BackupJobSpec{
		ApplicationRef: plan.Spec.ApplicationRef, BackupClassName: class, PlanRef: &backupsv1alpha1.LocalObjectReference{Name: plan.Name}}}
	g.Expect(sb.Client.Create(ctx, job)).To(Succeed())

	var rec driverv1alpha1.CaptureProgress
	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		var list driverv1alpha1.CaptureProgressList
		g.Expect(sb.Client.List(ctx, &list, client.InNamespace(capNS))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		rec = list.Items[0]
		var pods corev1.PodList
		g.Expect(sb.Client.List(ctx, &pods, client.InNamespace(capNS), client.MatchingLabels(keeper.Labels(rec.Name)))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		pod = pods.Items[0]
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		c := pod.Status.ContainerStatuses[0]
		g.Expect(c.RestartCount).To(BeZero(), "the capture exited: %+v\n%s", c.LastTerminationState, captureLog(&pod))
		g.Expect(c.State.Running).NotTo(BeNil(), "%+v", c.State)
		g.Expect(c.ImageID).To(Equal(sb.Containers.ImageID), "the capture ran from the image")
	}).WithTimeout(3*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), func() string { return job.Status.Message })

	written := kvdata.Set{Prefix: "/after-base", N: 100, Size: 64, Gen: "captured"}
	g.Expect(written.Write(ctx, etcd(t, g, capNS))).To(Succeed())
	wroteAt := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(sb.Client.Get(ctx, client.ObjectKeyFromObject(&rec), &rec)).To(Succeed())
		g.Expect(rec.Status.Window).NotTo(BeNil())
		g.Expect(rec.Status.Window.To).NotTo(BeNil(), "%+v", rec.Status)
		g.Expect(rec.Status.Window.To.Time).To(BeTemporally(">", wroteAt), "%+v", rec.Status)
		c := meta.FindStatusCondition(rec.Status.Conditions, driverv1alpha1.CaptureConditionCapturing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(driverv1alpha1.CaptureReasonFollowing), c.Message)
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), func() string { return captureLog(&pod) })
}

// captureLog is the capture container's output, for failure messages.
func captureLog(pod *corev1.Pod) string {
	b, err := os.ReadFile(filepath.Join(sb.Dir, "pods", pod.Namespace, pod.Name+"-"+string(pod.UID), keeper.ContainerName+".log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}
