package kamajistandin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// KubernetesVersion is what the control planes created here ask for; the
// stand-in runs bin/kube-apiserver whatever the spec says.
const KubernetesVersion = "v1.37.2"

// TenantControlPlane returns a minimal TenantControlPlane that Kamaji's CRD
// accepts, storing in the DataStore named dataStore. It is unstructured:
// the typed mirror carries only what the driver uses, not the fields the
// CRD requires.
func TenantControlPlane(namespace, name, dataStore string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"dataStore":    dataStore,
			"controlPlane": map[string]any{"service": map[string]any{"serviceType": "ClusterIP"}},
			// The CRD's rules read it, so it must be present.
			"networkProfile": map[string]any{},
			"kubernetes":     map[string]any{"version": KubernetesVersion, "kubelet": map[string]any{}},
		},
	}}
	u.SetGroupVersionKind(kamajiv1alpha1.GroupVersion.WithKind("TenantControlPlane"))
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// CreateControlPlane creates the TenantControlPlane name in namespace on the
// DataStore of the namespace's EtcdCluster cluster: the one the etcd chart
// renders (named after the namespace) if present, else one created here
// with the endpoint the chart would render. Both are written unstructured,
// so any client (the driver's scheme has no Kamaji kinds) can create them.
func CreateControlPlane(ctx context.Context, c client.Client, namespace, name, cluster string) error {
	ds := &unstructured.Unstructured{}
	ds.SetGroupVersionKind(kamajiv1alpha1.GroupVersion.WithKind("DataStore"))
	err := c.Get(ctx, client.ObjectKey{Name: namespace}, ds)
	if apierrors.IsNotFound(err) {
		ds = dataStore(namespace, cluster)
		if err = c.Create(ctx, ds); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("DataStore %s: %w", namespace, err)
	}
	if err := c.Create(ctx, TenantControlPlane(namespace, name, namespace)); err != nil {
		return fmt.Errorf("TenantControlPlane %s/%s: %w", namespace, name, err)
	}
	return nil
}

// dataStore is what the etcd chart renders (charts/etcd/templates/
// datastore.yaml), whose CRD requires the TLS references.
func dataStore(namespace, cluster string) *unstructured.Unstructured {
	ref := func(secret, key string) map[string]any {
		return map[string]any{"secretReference": map[string]any{"name": secret, "namespace": namespace, "keyPath": key}}
	}
	pair := func(secret string) map[string]any {
		return map[string]any{"certificate": ref(secret, "tls.crt"), "privateKey": ref(secret, "tls.key")}
	}
	ds := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"driver":    string(kamajiv1alpha1.EtcdDriver),
		"endpoints": []any{fmt.Sprintf("%s-client.%s.svc:2379", cluster, namespace)},
		"tlsConfig": map[string]any{"certificateAuthority": pair("etcd-ca-tls"), "clientCertificate": pair("etcd-client-tls")},
	}}}
	ds.SetGroupVersionKind(kamajiv1alpha1.GroupVersion.WithKind("DataStore"))
	ds.SetName(namespace)
	return ds
}
