package operator_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture/keeper"
)

// resolvedEtcd is where the suite's ResolveService sends every tenant's
// etcd client Service.
const resolvedEtcd = "127.0.0.1:12379"

func resolveService(host, port string) (string, bool) {
	return resolvedEtcd, host != "" && port == "2379"
}

// The kubelet stand-in runs the driver's capture Deployment's Pod as a
// kubelet would: the Service name in its arguments resolved, the API
// server in KUBERNETES_SERVICE_HOST/PORT, a token of its ServiceAccount
// (bound to the Pod) and the API server's CA in its projected volume; it
// restarts the container after it exits (restartCount, lastState), sends
// SIGTERM when the Pod is deleted and removes the Pod once it ended. A
// look-alike Deployment with the capture's labels but no CaptureProgress
// behind it is never run.
func TestTheKubeletRunsTheDriversCapturePodOnly(t *testing.T) {
	tn := newTenant(t)
	tn.secret()
	g := tn.g
	g.Expect(k8s.Create(tn.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd-client-tls"},
		StringData: map[string]string{"tls.crt": "c", "tls.key": "k", "ca.crt": "ca"}})).To(Succeed())
	trace := t.TempDir()

	rec := &driverv1alpha1.CaptureProgress{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "etcd-capture-x"},
		Spec: driverv1alpha1.CaptureProgressSpec{Plan: "p", BaseBackup: "b", BaseRevision: 5}}
	g.Expect(k8s.Create(tn.ctx, rec)).To(Succeed())
	spec := keeper.Spec{Namespace: tn.ns, Name: rec.Name, Record: rec.UID, Plan: "p", Image: "sandbox.invalid/stage", SecretName: credsSecret, MemoryMiB: 128,
		Options: capture.Options{EtcdEndpoints: []string{"https://etcd-client." + tn.ns + ".svc:2379"}, Endpoint: "https://s3", Bucket: bucket,
			Prefix: tn.ns + "/etcd", Base: changelog.Base{Revision: 5, SHA256: "ab"}, SegmentInterval: time.Second, SegmentBytes: capture.DefaultSegmentBytes}}
	g.Expect(k8s.Create(tn.ctx, keeper.ServiceAccount(spec))).To(Succeed())
	d := keeper.Deployment(spec)
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "CAPTURE_TRACE", Value: trace})
	// The driver's own Deployment of another name, with no record behind it.
	other := spec
	other.Name = "look-alike"
	lookAlike := keeper.Deployment(other)
	lookAlike.OwnerReferences = nil
	sa := keeper.ServiceAccount(other)
	sa.OwnerReferences = nil
	g.Expect(k8s.Create(tn.ctx, sa)).To(Succeed())
	g.Expect(k8s.Create(tn.ctx, lookAlike)).To(Succeed())
	g.Expect(k8s.Create(tn.ctx, d)).To(Succeed())

	var pod corev1.Pod
	g.Eventually(func(g Gomega) {
		pod = tn.podOf(g, d)
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		c := pod.Status.ContainerStatuses[0]
		g.Expect(c.RestartCount).To(Equal(int32(1)))
		g.Expect(c.LastTerminationState.Terminated).NotTo(BeNil())
		g.Expect(c.LastTerminationState.Terminated.ExitCode).To(Equal(int32(3)))
		g.Expect(c.State.Running).NotTo(BeNil(), "%+v", c.State)
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(pod.Spec.NodeName).To(Equal(operator.NodeName))
		g.Expect(filepath.Join(trace, "run-1.token")).To(BeAnExistingFile())
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())

	run, err := os.ReadFile(filepath.Join(trace, "run-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(run)).To(ContainSubstring("--etcd-endpoints=https://" + resolvedEtcd + " "))
	g.Expect(string(run)).To(ContainSubstring("api: " + cfgHostPort()))
	ca, err := os.ReadFile(filepath.Join(trace, "run-1.ca"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(ca)).To(Equal(string(cfg.CAData)), "the API server's CA, from kube-root-ca.crt")
	token, err := os.ReadFile(filepath.Join(trace, "run-1.token"))
	g.Expect(err).NotTo(HaveOccurred())
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: string(token)}}
	g.Expect(k8s.Create(tn.ctx, review)).To(Succeed())
	g.Expect(review.Status.Authenticated).To(BeTrue(), review.Status.Error)
	g.Expect(review.Status.User.Username).To(Equal("system:serviceaccount:" + tn.ns + ":" + rec.Name))
	g.Expect(review.Status.User.Extra).To(HaveKeyWithValue("authentication.kubernetes.io/pod-uid", authenticationv1.ExtraValue{string(pod.UID)}))

	// The look-alike's Pod was never bound nor run.
	unrun := tn.podOf(g, lookAlike)
	g.Expect(unrun.Spec.NodeName).To(BeEmpty())
	g.Expect(unrun.Status.Phase).NotTo(Equal(corev1.PodRunning))

	g.Expect(k8s.Delete(tn.ctx, &pod)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(tn.ctx, client.ObjectKeyFromObject(&pod), &corev1.Pod{}))
	}).WithTimeout(time.Minute).Should(BeTrue(), "the deleted Pod is removed once its container ended")
	g.Expect(filepath.Join(trace, "run-1.term")).To(BeAnExistingFile(), "the container got SIGTERM")
}

// podOf is the one Pod of d's ReplicaSet.
func (tn *tenant) podOf(g Gomega, d *appsv1.Deployment) corev1.Pod {
	var pods corev1.PodList
	g.Expect(k8s.List(tn.ctx, &pods, client.InNamespace(tn.ns))).To(Succeed())
	var mine []corev1.Pod
	for _, p := range pods.Items {
		var rs appsv1.ReplicaSet
		owner := metav1.GetControllerOf(&p)
		if owner == nil || k8s.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: owner.Name}, &rs) != nil {
			continue
		}
		if o := metav1.GetControllerOf(&rs); o != nil && o.Name == d.Name && p.DeletionTimestamp == nil {
			mine = append(mine, p)
		}
	}
	g.Expect(mine).To(HaveLen(1))
	return mine[0]
}

func cfgHostPort() string {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err.Error()
	}
	return u.Host
}
