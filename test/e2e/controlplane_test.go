package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kamajistandin"
)

// probeNS is the namespace, inside the tenant cluster, of the test's
// ConfigMaps.
const probeNS = "restore-probe"

// The Kamaji stand-in keeps its contract: a real kube-apiserver on the
// tenant etcd, spec.writePermissions enforced inside the tenant cluster
// with status WriteLimited, and a deleted control-plane Pod restarting
// the apiserver behind a new Ready Pod.
func TestControlPlaneStandIn(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	cs, key := tn.controlPlane("kubernetes")
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	}

	tn.setWritePermissions(key, `{"blockCreation":true,"blockUpdate":true,"blockDeletion":true}`)
	g.Eventually(func() string { return tn.controlPlaneStatus(key) }).WithTimeout(30 * time.Second).Should(Equal(kamajistandin.StatusWriteLimited))
	_, err := cs.CoreV1().ConfigMaps("default").Create(tn.ctx, cm("denied"), metav1.CreateOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("write-limited")), "a create through a fenced control plane")
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	_, err = cs.CoreV1().ConfigMaps("default").List(tn.ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "reads stay allowed")

	tn.setWritePermissions(key, `{"blockCreation":false,"blockUpdate":false,"blockDeletion":false}`)
	g.Eventually(func() string { return tn.controlPlaneStatus(key) }).WithTimeout(30 * time.Second).Should(Equal(kamajistandin.StatusReady))
	_, err = cs.CoreV1().ConfigMaps("default").Create(tn.ctx, cm("allowed"), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	old := tn.controlPlanePods(key)
	g.Expect(old).To(HaveLen(1))
	g.Expect(sb.Client.Delete(tn.ctx, &old[0])).To(Succeed())
	g.Eventually(func(g Gomega) {
		pods := tn.controlPlanePods(key)
		g.Expect(pods).To(HaveLen(1))
		g.Expect(pods[0].UID).NotTo(Equal(old[0].UID))
		g.Expect(isReady(&pods[0])).To(BeTrue())
		_, err := cs.CoreV1().ConfigMaps("default").Get(tn.ctx, "allowed", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "the restarted apiserver serves the same data at the same address")
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(tn.controlPlaneStatus(key)).To(Equal(kamajistandin.StatusReady))
}

// controlPlane creates a TenantControlPlane on the tenant's etcd, waits
// for its kube-apiserver to be Ready and returns a clientset for it, with
// the namespace probeNS created.
func (tn *tenant) controlPlane(name string) (*kubernetes.Clientset, types.NamespacedName) {
	tn.t.Helper()
	key := types.NamespacedName{Namespace: tn.ns, Name: name}
	tn.g.Expect(kamajistandin.CreateControlPlane(tn.ctx, sb.Client, tn.ns, name, "etcd")).To(Succeed())
	tn.g.Eventually(func() string { return tn.controlPlaneStatus(key) }).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).
		Should(Equal(kamajistandin.StatusReady), "TenantControlPlane %s", key)
	cfg, err := sb.ControlPlaneConfig(key)
	tn.g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	tn.g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Namespaces().Create(tn.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNS}}, metav1.CreateOptions{})
	tn.g.Expect(err).NotTo(HaveOccurred())
	var ds unstructured.Unstructured
	ds.SetGroupVersionKind(kamajiv1alpha1.GroupVersion.WithKind("DataStore"))
	tn.g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Name: tn.ns}, &ds)).To(Succeed())
	usedBy, _, _ := unstructured.NestedStringSlice(ds.Object, "status", "usedBy")
	tn.g.Expect(usedBy).To(ContainElement(key.String()), "DataStore %s status.usedBy", tn.ns)
	return cs, key
}

func (tn *tenant) controlPlaneStatus(key types.NamespacedName) string {
	var tcp unstructured.Unstructured
	tcp.SetGroupVersionKind(kamajiv1alpha1.GroupVersion.WithKind("TenantControlPlane"))
	if err := sb.Client.Get(tn.ctx, key, &tcp); err != nil {
		return err.Error()
	}
	s, _, _ := unstructured.NestedString(tcp.Object, "status", "kubernetesResources", "version", "status")
	return s
}

func (tn *tenant) setWritePermissions(key types.NamespacedName, perms string) {
	tn.t.Helper()
	tcp := kamajistandin.TenantControlPlane(key.Namespace, key.Name, "")
	patch := []byte(`{"spec":{"writePermissions":` + perms + `}}`)
	tn.g.Expect(sb.Client.Patch(tn.ctx, tcp, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func (tn *tenant) controlPlanePods(key types.NamespacedName) []corev1.Pod {
	tn.t.Helper()
	var pods corev1.PodList
	tn.g.Expect(sb.Client.List(tn.ctx, &pods, client.InNamespace(key.Namespace), client.MatchingLabels{
		kamajiv1alpha1.NameLabel: key.Name, kamajiv1alpha1.ComponentLabel: kamajiv1alpha1.ComponentDeployment,
	})).To(Succeed())
	return pods.Items
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
