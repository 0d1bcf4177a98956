package upgrade

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategymigration"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// legacyStrategyObject is an Etcd strategy as the earlier release's admins
// wrote them: its destination, and the settings of legacy in its spec.
func legacyStrategyObject(name string, legacy map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"template": map[string]any{"destination": map[string]any{"s3": map[string]any{
		"bucket": "etcd-backups", "endpoint": "https://s3.example.com", "key": "{{ .Application.metadata.namespace }}/",
		"credentialsSecretRef": map[string]any{"name": "creds"},
	}}}}
	for k, v := range legacy {
		spec[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": strategyv1alpha1.GroupVersion.String(), "kind": "Etcd",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// legacyStrategy creates one, through the dynamic client (a typed create
// would drop the fields), and checks the earlier CRD stored them.
func legacyStrategy(g Gomega, legacy map[string]any) *unstructured.Unstructured {
	etcds := dynamic.NewForConfigOrDie(env.Config).Resource(strategyv1alpha1.GroupVersion.WithResource("etcds"))
	created, err := etcds.Create(context.Background(), legacyStrategyObject("old-"+rand.String(5), legacy), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for k := range legacy {
		_, found, _ := unstructured.NestedFieldNoCopy(created.Object, "spec", k)
		g.Expect(found).To(BeTrue(), "the earlier CRD stores spec.%s", k)
	}
	return created
}

// migrator is the strategy migration, reconciling one strategy on demand.
type migrator struct {
	r   *strategymigration.Reconciler
	rec *events.FakeRecorder
}

func newMigrator() *migrator {
	rec := events.NewFakeRecorder(100)
	return &migrator{rec: rec, r: &strategymigration.Reconciler{Client: env.Client, APIReader: env.Client, Recorder: rec}}
}

func (m *migrator) reconcile(g Gomega, name string) {
	_, err := m.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
	g.Expect(err).NotTo(HaveOccurred())
}

func getPolicy(g Gomega, name string) *driverv1alpha1.StrategyPolicy {
	var sp driverv1alpha1.StrategyPolicy
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &sp)).To(Succeed())
	return &sp
}

// A driver upgraded over a strategy written with the earlier CRD's
// settings (and no StrategyPolicy) creates its StrategyPolicy with them,
// once, says so in an Event on the strategy and in the policy's Migrated
// condition, and the settings apply: the resolver every reader asks says
// what the strategy said.
func TestStrategySettingsMoveToANewStrategyPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := legacyStrategy(g, map[string]any{
		"deletionPolicy":    "Delete",
		"allowHTTPEndpoint": true,
		"credentialBroker":  map[string]any{"provider": "MinIO", "adminSecretRef": map[string]any{"name": "platform-admin"}, "rotationInterval": "48h"},
		"inspection":        map[string]any{"maxResourceDropPercent": int64(30), "minDroppedObjects": int64(5)},
	})
	m := newMigrator()
	m.reconcile(g, s.GetName())

	p, err := strategypolicy.Of(ctx, env.Client, s.GetName())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Found).To(BeTrue(), "a StrategyPolicy was created")
	g.Expect(p.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyDelete))
	g.Expect(p.AllowHTTPEndpoint).To(BeTrue())
	g.Expect(p.CredentialBroker).NotTo(BeNil())
	g.Expect(p.CredentialBroker.AdminSecretRef.Name).To(Equal("platform-admin"))
	g.Expect(p.CredentialBroker.RotationInterval.Duration.String()).To(Equal("48h0m0s"))
	g.Expect(p.Inspection.MaxResourceDropPercent).To(BeEquivalentTo(30))
	g.Expect(p.Inspection.ExpiringResources).To(Equal(strategypolicy.DefaultExpiringResources()), "what the earlier CRD lacked has its default")

	sp := getPolicy(g, s.GetName())
	g.Expect(sp.Annotations).To(HaveKeyWithValue(driverv1alpha1.MigratedFromAnnotation, string(s.GetUID())))
	c := meta.FindStatusCondition(sp.Status.Conditions, driverv1alpha1.StrategyPolicyConditionMigrated)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonSettingsMigrated))
	evs := testenv.Drain(m.rec.Events)
	g.Expect(evs).To(HaveLen(1), "one Event: %v", evs)
	g.Expect(evs[0]).To(And(ContainSubstring("Normal "+driverv1alpha1.StrategyPolicyReasonSettingsMigrated),
		ContainSubstring("spec.deletionPolicy (Delete)"), ContainSubstring("spec.allowHTTPEndpoint (true)"),
		ContainSubstring("spec.credentialBroker ("), ContainSubstring("spec.inspection.maxResourceDropPercent (30)")))
	g.Expect(evs[0]).NotTo(ContainSubstring("minDroppedObjects"), "a default is no setting")

	// Once: the admin's later change of the policy stands.
	base := sp.DeepCopy()
	sp.Spec.AllowHTTPEndpoint = false
	g.Expect(env.Client.Patch(ctx, sp, client.MergeFrom(base))).To(Succeed())
	m.reconcile(g, s.GetName())
	g.Expect(getPolicy(g, s.GetName()).Spec.AllowHTTPEndpoint).To(BeFalse())
	g.Expect(testenv.Drain(m.rec.Events)).To(BeEmpty())
}

// Where a StrategyPolicy exists already and says something else, the
// driver changes nothing, names both on the policy's Migrated condition
// and in one Warning Event, and the policy applies; once the admin makes
// the two agree, the condition turns True and the fields are read no more.
func TestAConflictingStrategyPolicyIsLeftAsItIs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := legacyStrategy(g, map[string]any{"deletionPolicy": "Delete", "allowHTTPEndpoint": true})
	sp := &driverv1alpha1.StrategyPolicy{ObjectMeta: metav1.ObjectMeta{Name: s.GetName()},
		Spec: driverv1alpha1.StrategyPolicySpec{DeletionPolicy: driverv1alpha1.DeletionPolicyRetain, AllowHTTPEndpoint: true}}
	g.Expect(env.Client.Create(ctx, sp)).To(Succeed())
	m := newMigrator()
	for range 2 {
		m.reconcile(g, s.GetName())
	}

	after := getPolicy(g, s.GetName())
	g.Expect(after.Spec.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyRetain))
	g.Expect(after.Annotations).NotTo(HaveKey(driverv1alpha1.MigratedFromAnnotation))
	c := meta.FindStatusCondition(after.Status.Conditions, driverv1alpha1.StrategyPolicyConditionMigrated)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonMigrationConflict))
	g.Expect(c.Message).To(ContainSubstring(`spec.deletionPolicy is "Delete" but the StrategyPolicy says "Retain"`))
	g.Expect(c.Message).NotTo(ContainSubstring("allowHTTPEndpoint"), "what agrees is no conflict")
	evs := testenv.Drain(m.rec.Events)
	g.Expect(evs).To(HaveLen(1), "one Warning, not one per reconcile: %v", evs)
	g.Expect(evs[0]).To(ContainSubstring("Warning " + driverv1alpha1.StrategyPolicyReasonMigrationConflict))
	p, err := strategypolicy.Of(ctx, env.Client, s.GetName())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.DeletionPolicy).To(Equal(driverv1alpha1.DeletionPolicyRetain), "the StrategyPolicy applies")

	// The admin settles it in the StrategyPolicy.
	base := after.DeepCopy()
	after.Spec.DeletionPolicy = driverv1alpha1.DeletionPolicyDelete
	g.Expect(env.Client.Patch(ctx, after, client.MergeFrom(base))).To(Succeed())
	m.reconcile(g, s.GetName())
	after = getPolicy(g, s.GetName())
	c = meta.FindStatusCondition(after.Status.Conditions, driverv1alpha1.StrategyPolicyConditionMigrated)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(driverv1alpha1.StrategyPolicyReasonSettingsAgree))
	g.Expect(after.Annotations).To(HaveKeyWithValue(driverv1alpha1.MigratedFromAnnotation, string(s.GetUID())))
	g.Expect(strings.Join(testenv.Drain(m.rec.Events), "\n")).To(ContainSubstring("Normal " + driverv1alpha1.StrategyPolicyReasonSettingsAgree))
}

// A strategy that held only what the earlier CRD defaulted (every
// strategy it stored has deletionPolicy Retain) holds no setting: no
// StrategyPolicy is made for it, and nothing is said.
func TestAStrategyWithOnlyDefaultsGetsNoStrategyPolicy(t *testing.T) {
	g := NewWithT(t)
	s := legacyStrategy(g, map[string]any{"deletionPolicy": "Retain", "allowHTTPEndpoint": false})
	m := newMigrator()
	m.reconcile(g, s.GetName())
	var sp driverv1alpha1.StrategyPolicy
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: s.GetName()}, &sp)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "no StrategyPolicy was created")
	g.Expect(testenv.Drain(m.rec.Events)).To(BeEmpty())
}
