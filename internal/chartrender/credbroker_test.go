package chartrender

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The tenant key Secrets are writable only when the chart is asked for the
// credential broker, and even then by name: never list or watch.
func TestCredentialBrokerRBACIsOptIn(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Find(renderDriver(t, nil), "ClusterRole", "etcd-backup-driver-credential-broker")).To(BeNil())

	objs := renderDriver(t, map[string]any{"credentialBroker": map[string]any{"enabled": true}})
	role := Find(objs, "ClusterRole", "etcd-backup-driver-credential-broker")
	g.Expect(role).NotTo(BeNil())
	g.Expect(Find(objs, "ClusterRoleBinding", "etcd-backup-driver-credential-broker")).NotTo(BeNil())
	verbs := map[string][]any{}
	for _, r := range field(g, role, "rules").([]any) {
		rule := r.(map[string]any)
		for _, res := range rule["resources"].([]any) {
			verbs[res.(string)] = append(verbs[res.(string)], rule["verbs"].([]any)...)
		}
	}
	g.Expect(verbs["secrets"]).To(ConsistOf("get", "create", "update", "delete"))
	g.Expect(verbs["namespaces"]).To(ConsistOf("get", "list"))
	g.Expect(verbs).To(HaveLen(2))
}
