package strategymigration

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// What the earlier fields say is read by meaning: defaults are no
// setting, a field the policy leaves unset agrees with its default, and a
// shape the earlier CRD never had is refused rather than half moved.
func TestReadComparesByMeaning(t *testing.T) {
	g := NewWithT(t)
	for name, spec := range map[string]map[string]any{
		"none":         {"template": map[string]any{}},
		"defaults":     {"deletionPolicy": "Retain", "allowHTTPEndpoint": false, "inspection": map[string]any{"maxResourceDropPercent": int64(50)}},
		"null broker":  {"credentialBroker": nil},
		"empty object": {"inspection": map[string]any{}},
	} {
		l, err := Read("s", spec)
		g.Expect(err).NotTo(HaveOccurred(), name)
		g.Expect(l.Empty()).To(BeTrue(), "%s: %+v", name, l.Settings)
	}

	l, err := Read("s", map[string]any{"inspection": map[string]any{"disabled": true, "minDroppedObjects": int64(9)}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(l.Settings).To(Equal([]Setting{{Field: "spec.inspection.disabled", Value: "true"}, {Field: "spec.inspection.minDroppedObjects", Value: "9"}}))
	nine := int32(9)
	agrees := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: driverv1alpha1.StrategyPolicySpec{
		Inspection: &driverv1alpha1.Inspection{Disabled: true, MinDroppedObjects: &nine}}}
	g.Expect(l.Conflicts(agrees)).To(BeEmpty())
	g.Expect(l.Conflicts(&driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s"}})).To(Equal([]Setting{
		{Field: "spec.inspection.disabled", Value: "true", Policy: "false"},
		{Field: "spec.inspection.minDroppedObjects", Value: "9", Policy: "5"},
	}))

	_, err = Read("s", map[string]any{"inspection": map[string]any{"maxDrop": int64(9)}})
	g.Expect(err).To(MatchError(ContainSubstring(`the earlier fields of Etcd strategy "s" cannot be read`)))
	_, err = Read("s", map[string]any{"allowHTTPEndpoint": "yes"})
	g.Expect(err).To(HaveOccurred())
}
