package apivalidation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

func brokerPolicy(name string, mutate func(*driverv1alpha1.StrategyPolicy)) *driverv1alpha1.StrategyPolicy {
	p := &driverv1alpha1.StrategyPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: driverv1alpha1.StrategyPolicySpec{CredentialBroker: &driverv1alpha1.CredentialBroker{
			Provider: driverv1alpha1.CredentialBrokerMinIO, AdminSecretRef: driverv1alpha1.SecretReference{Name: "platform"},
		}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// An empty StrategyPolicy is stored with every default the API server
// knows: what kubectl shows is what applies.
func TestStrategyPolicyDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sp-defaults"}}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	g.Expect(p.Spec.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyRetain))
	g.Expect(p.Spec.AllowHTTPEndpoint).To(BeFalse())
	g.Expect(p.Spec.CredentialBroker).To(BeNil())
	g.Expect(p.Spec.Retention).To(BeNil())
	g.Expect(p.Spec.Inspection).To(Equal(&driverv1alpha1.Inspection{
		MaxResourceDropPercent: ptr.To[int32](50), MinDroppedObjects: ptr.To[int32](5), MaxNamespacesGone: ptr.To[int32](0),
		ExpiringResources: []string{"events", "leases", "masterleases"},
	}))

	// An explicitly empty list is kept: every resource is checked.
	none := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sp-no-expiring"},
		Spec: driverv1alpha1.StrategyPolicySpec{Inspection: &driverv1alpha1.Inspection{ExpiringResources: []string{}}}}
	g.Expect(k8s.Create(ctx, none)).To(Succeed())
	g.Expect(none.Spec.Inspection.ExpiringResources).To(BeEmpty())
	g.Expect(none.Spec.Inspection.ExpiringResources).NotTo(BeNil())

	// A pointInTime block gets the same defaults as the driver's
	// (strategypolicy.Effective); capture stays off unless enabled.
	pit := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sp-pit-defaults"},
		Spec: driverv1alpha1.StrategyPolicySpec{PointInTime: &driverv1alpha1.PointInTime{}}}
	g.Expect(k8s.Create(ctx, pit)).To(Succeed())
	g.Expect(pit.Spec.PointInTime).To(Equal(&driverv1alpha1.PointInTime{SegmentSeconds: ptr.To[int32](10),
		MaxSegmentBytes: ptr.To[int64](4 << 20), MaxLagSeconds: ptr.To[int32](300), MemoryMiB: ptr.To[int32](128)}))

	p.Spec.DeletionPolicy = "Sometimes"
	err := k8s.Update(ctx, p)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an unknown deletionPolicy is rejected, got %v", err)
}

// The API server refuses settings the driver cannot honour.
func TestStrategyPolicyValidation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		mutate func(*driverv1alpha1.StrategyPolicy)
		msg    string
	}{
		"prefix root without slash": {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.PrefixRoot = "etcd" }, "ends with /"},
		"prefix root from /":        {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.PrefixRoot = "/etcd/" }, "ends with /"},
		"prefix root wildcard":      {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.PrefixRoot = "e*/" }, "must not contain"},
		"prefix root variable":      {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.PrefixRoot = "${aws:username}/" }, "must not contain"},
		"short rotation": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.CredentialBroker.RotationInterval = &metav1.Duration{Duration: time.Minute}
		}, "at least 1h"},
		"unknown provider":    {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.Provider = "Other" }, "provider"},
		"admin endpoint path": {func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker.AdminEndpoint = "https://h/x/y" }, "adminEndpoint"},
		"no admin secret": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.CredentialBroker.AdminSecretRef.Name = ""
		}, "adminSecretRef.name"},
		"drop percent above 100": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Inspection = &driverv1alpha1.Inspection{MaxResourceDropPercent: ptr.To[int32](101)}
		}, "maxResourceDropPercent"},
		"no dropped objects": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Inspection = &driverv1alpha1.Inspection{MinDroppedObjects: ptr.To[int32](0)}
		}, "minDroppedObjects"},
		"expiring resource with a slash": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Inspection = &driverv1alpha1.Inspection{ExpiringResources: []string{"events/x"}}
		}, "expiringResources"},
		"default keep above the bound": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Retention = &driverv1alpha1.Retention{DefaultKeepLast: ptr.To[int32](8), MaxKeepLast: ptr.To[int32](7)}
		}, "defaultKeepLast is at most maxKeepLast"},
		"default age above the bound": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Retention = &driverv1alpha1.Retention{DefaultMaxAge: &metav1.Duration{Duration: 48 * time.Hour}, MaxMaxAge: &metav1.Duration{Duration: 24 * time.Hour}}
		}, "defaultMaxAge is at most maxMaxAge"},
		"zero max age": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Retention = &driverv1alpha1.Retention{MaxMaxAge: &metav1.Duration{}}
		}, "maxMaxAge is positive"},
		"zero keep": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.Retention = &driverv1alpha1.Retention{MaxKeepLast: ptr.To[int32](0)}
		}, "maxKeepLast"},
		"segments every 0 s": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.PointInTime = &driverv1alpha1.PointInTime{SegmentSeconds: ptr.To[int32](0)}
		}, "segmentSeconds"},
		"segments above the format's room": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.PointInTime = &driverv1alpha1.PointInTime{MaxSegmentBytes: ptr.To[int64](64 << 20)}
		}, "maxSegmentBytes"},
		"a lag bound of seconds": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.PointInTime = &driverv1alpha1.PointInTime{MaxLagSeconds: ptr.To[int32](5)}
		}, "maxLagSeconds"},
		"a capture without room": {func(p *driverv1alpha1.StrategyPolicy) {
			p.Spec.PointInTime = &driverv1alpha1.PointInTime{MemoryMiB: ptr.To[int32](32)}
		}, "memoryMiB"},
	} {
		err := k8s.Create(ctx, brokerPolicy("sp-invalid", tc.mutate))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
		g.Expect(err).To(MatchError(ContainSubstring(tc.msg)), name)
	}

	ok := brokerPolicy("sp-ok", func(p *driverv1alpha1.StrategyPolicy) {
		p.Spec.CredentialBroker.PrefixRoot = "etcd/"
		p.Spec.CredentialBroker.RotationInterval = &metav1.Duration{Duration: 24 * time.Hour}
		p.Spec.Retention = &driverv1alpha1.Retention{DefaultKeepLast: ptr.To[int32](7), MaxKeepLast: ptr.To[int32](7),
			DefaultMaxAge: &metav1.Duration{Duration: 24 * time.Hour}, MaxMaxAge: &metav1.Duration{Duration: 720 * time.Hour}}
	})
	g.Expect(k8s.Create(ctx, ok)).To(Succeed())

	removed := ok.DeepCopy()
	removed.Spec.CredentialBroker = nil
	err := k8s.Update(ctx, removed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "credentialBroker removed: got %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("delete the StrategyPolicy to remove its tenant keys")))

	other := ok.DeepCopy()
	other.Spec.CredentialBroker.Provider = "Other"
	g.Expect(apierrors.IsInvalid(k8s.Update(ctx, other))).To(BeTrue(), "an unknown provider is refused on update too")

	// The other broker settings may change: the sweep replaces keys of
	// another scope and rotates on the new interval.
	ok.Spec.CredentialBroker.PrefixRoot = "tenants/"
	ok.Spec.CredentialBroker.AdminSecretRef.Name = "platform-2"
	g.Expect(k8s.Update(ctx, ok)).To(Succeed())

	// A plain strategy's policy may become brokered (the migration).
	plain := brokerPolicy("sp-later", func(p *driverv1alpha1.StrategyPolicy) { p.Spec.CredentialBroker = nil })
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	plain.Spec.CredentialBroker = brokerPolicy("", nil).Spec.CredentialBroker
	g.Expect(k8s.Update(ctx, plain)).To(Succeed())
}
