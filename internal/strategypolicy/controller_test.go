package strategypolicy_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

func strategyNamed(name, bucket string) *strategyv1alpha1.Etcd {
	return &strategyv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: strategyv1alpha1.EtcdSpec{
		Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
			Bucket: bucket, Endpoint: "https://s3.example", Key: "{{ .Application.metadata.namespace }}/",
			CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"}}}}}}
}

// The resolver reads what the API server stored: the CRD's defaults and
// the resolver's are the same, so an empty StrategyPolicy means what no
// StrategyPolicy means.
func TestTheCRDDefaultsAreTheResolversDefaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "defaults-" + rand.String(5)
	absent, err := strategypolicy.Of(ctx, env.Client, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(absent.Found).To(BeFalse())

	sp := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(env.Client.Create(ctx, sp)).To(Succeed())
	stored, err := strategypolicy.Of(ctx, env.Client, name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.Found).To(BeTrue())
	stored.Found, stored.UID = false, ""
	g.Expect(stored).To(Equal(absent))
}

// Get and List pair each strategy with its own policy (by name).
func TestGetAndListPairStrategiesWithTheirPolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	with, without := "with-"+rand.String(5), "without-"+rand.String(5)
	g.Expect(env.Client.Create(ctx, strategyNamed(with, "b"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, strategyNamed(without, "b"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: with},
		Spec: driverv1alpha1.StrategyPolicySpec{DeletionPolicy: driverv1alpha1.DeletionPolicyDelete}})).To(Succeed())

	s, err := strategypolicy.Get(ctx, env.Client, with)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Name).To(Equal(with))
	g.Expect(s.Policy.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyDelete))

	all, err := strategypolicy.List(ctx, env.Client)
	g.Expect(err).NotTo(HaveOccurred())
	policies := map[string]driverv1alpha1.DeletionPolicy{}
	for _, s := range all {
		policies[s.Name] = s.Policy.DeletionPolicy
	}
	g.Expect(policies).To(HaveKeyWithValue(with, driverv1alpha1.DeletionPolicyDelete))
	g.Expect(policies).To(HaveKeyWithValue(without, driverv1alpha1.DeletionPolicyRetain))
}

// The Valid condition follows the strategy: missing, then accepted, then
// refused once the strategy templates its bucket under a broker.
func TestValidFollowsTheStrategy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "valid-" + rand.String(5)
	r := &strategypolicy.Reconciler{Client: env.Client}
	sp := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: driverv1alpha1.StrategyPolicySpec{
		CredentialBroker: &driverv1alpha1.CredentialBroker{Provider: driverv1alpha1.CredentialBrokerMinIO,
			AdminSecretRef: driverv1alpha1.SecretReference{Name: "platform"}}}}
	g.Expect(env.Client.Create(ctx, sp)).To(Succeed())
	valid := func() *metav1.Condition {
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, sp)).To(Succeed())
		return meta.FindStatusCondition(sp.Status.Conditions, driverv1alpha1.StrategyPolicyConditionValid)
	}

	c := valid()
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonStrategyNotFound))

	s := strategyNamed(name, "b")
	g.Expect(env.Client.Create(ctx, s)).To(Succeed())
	c = valid()
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonAccepted))
	g.Expect(c.ObservedGeneration).To(Equal(sp.Generation))

	s.Spec.Template.Destination.S3.Bucket = "{{ .Parameters.bucket }}"
	g.Expect(env.Client.Update(ctx, s)).To(Succeed())
	c = valid()
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonBrokerNeedsLiteralDestination))
	g.Expect(c.Message).To(ContainSubstring("spec.template.destination.s3.bucket"))
}
