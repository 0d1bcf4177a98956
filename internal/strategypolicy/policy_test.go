package strategypolicy

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// A strategy without a StrategyPolicy gets every default; one that sets
// some fields gets those and the defaults for the rest.
func TestEffectiveFillsTheDefaults(t *testing.T) {
	g := NewWithT(t)
	none := Effective("s", nil)
	g.Expect(none).To(Equal(Policy{Name: "s", DeletionPolicy: driverv1alpha1.DeletionPolicyRetain,
		Inspection: Inspection{MaxResourceDropPercent: 50, MinDroppedObjects: 5, MaxNamespacesGone: 0,
			ExpiringResources: []string{"events", "leases", "masterleases"}},
		PointInTime: PointInTime{SegmentInterval: 10 * time.Second, MaxSegmentBytes: 4 << 20, MaxLag: 5 * time.Minute, MemoryMiB: 128}}))

	sp := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "u"}, Spec: driverv1alpha1.StrategyPolicySpec{
		DeletionPolicy: driverv1alpha1.DeletionPolicyDelete, AllowHTTPEndpoint: true,
		CredentialBroker: &driverv1alpha1.CredentialBroker{Provider: driverv1alpha1.CredentialBrokerMinIO},
		Inspection:       &driverv1alpha1.Inspection{MinDroppedObjects: ptr.To[int32](9)},
		Retention:        &driverv1alpha1.Retention{MaxKeepLast: ptr.To[int32](3)},
		PointInTime:      &driverv1alpha1.PointInTime{Enabled: true, MaxLagSeconds: ptr.To[int32](60)},
	}}
	p := Effective("s", sp)
	g.Expect(p.PointInTime).To(Equal(PointInTime{Enabled: true, SegmentInterval: 10 * time.Second, MaxSegmentBytes: 4 << 20,
		MaxLag: time.Minute, MemoryMiB: 128}))
	g.Expect(p.Found).To(BeTrue())
	g.Expect(p.UID).To(BeEquivalentTo("u"))
	g.Expect(p.Deleting).To(BeFalse())
	g.Expect(p.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyDelete))
	g.Expect(p.Brokered()).To(BeTrue())
	g.Expect(p.Inspection).To(Equal(Inspection{MaxResourceDropPercent: 50, MinDroppedObjects: 9, MaxNamespacesGone: 0,
		ExpiringResources: []string{"events", "leases", "masterleases"}}))
	g.Expect(*p.Retention.MaxKeepLast).To(BeEquivalentTo(3))
	g.Expect(p.Retention.DefaultKeepLast).To(BeNil(), "no default keep-last unless set")

	// The effective policy is a copy: changing it changes no cached object.
	p.CredentialBroker.PrefixRoot = "x/"
	*p.Retention.MaxKeepLast = 4
	g.Expect(sp.Spec.CredentialBroker.PrefixRoot).To(BeEmpty())
	g.Expect(*sp.Spec.Retention.MaxKeepLast).To(BeEquivalentTo(3))

	// An empty list of expiring resources is a choice, not a default.
	sp.Spec.Inspection.ExpiringResources = []string{}
	g.Expect(Effective("s", sp).Inspection.ExpiringResources).To(BeEmpty())

	now := metav1.NewTime(time.Now())
	sp.DeletionTimestamp = &now
	g.Expect(Effective("s", sp).Deleting).To(BeTrue())
}

func TestAllowsHTTPOnlyForPlainHTTPWhenSet(t *testing.T) {
	g := NewWithT(t)
	on, off := Policy{AllowHTTPEndpoint: true}, Policy{}
	g.Expect(on.AllowsHTTP("HTTP://s3:9000")).To(BeTrue())
	g.Expect(on.AllowsHTTP("https://s3")).To(BeFalse(), "https needs no allowance")
	g.Expect(off.AllowsHTTP("http://s3:9000")).To(BeFalse())
}

// With a broker, a templated bucket or endpoint is refused: the rule the
// strategy's CEL gave before the broker left Cozystack's kind.
func TestCheckRefusesATemplatedBrokeredDestination(t *testing.T) {
	strategy := func(bucket, endpoint string) *strategyv1alpha1.Etcd {
		return &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: strategyv1alpha1.EtcdSpec{
			Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: bucket, Endpoint: endpoint, Key: "{{ .Application.metadata.namespace }}/"}}}}}
	}
	brokered := Policy{Name: "s", CredentialBroker: &driverv1alpha1.CredentialBroker{Provider: driverv1alpha1.CredentialBrokerMinIO}}
	for name, tc := range map[string]struct {
		s       *strategyv1alpha1.Etcd
		p       Policy
		invalid string
	}{
		"literal":                 {strategy("b", "https://s3"), brokered, ""},
		"templated, not brokered": {strategy("{{ .Parameters.b }}", "https://{{ .Parameters.h }}"), Policy{Name: "s"}, ""},
		"templated bucket":        {strategy("{{ .Parameters.b }}", "https://s3"), brokered, "templates spec.template.destination.s3.bucket;"},
		"templated endpoint":      {strategy("b", "https://{{ .Parameters.h }}"), brokered, "templates spec.template.destination.s3.endpoint;"},
		"both":                    {strategy("{{ .Parameters.b }}", "{{ .Parameters.h }}"), brokered, "bucket and spec.template.destination.s3.endpoint"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := Strategy{Etcd: tc.s, Policy: tc.p}.Check()
			if tc.invalid == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, ErrInvalid)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(And(ContainSubstring(`StrategyPolicy "s"`), ContainSubstring(tc.invalid)))
		})
	}
}
