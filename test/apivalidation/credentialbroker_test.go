package apivalidation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

func brokered(name string, mutate func(*strategyv1alpha1.Etcd)) *strategyv1alpha1.Etcd {
	s := &strategyv1alpha1.Etcd{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: strategyv1alpha1.EtcdSpec{
			Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
				Bucket: "b", Endpoint: "https://s3.example", Key: "{{ .Application.metadata.namespace }}/",
				CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "unused"},
			}}},
			CredentialBroker: &strategyv1alpha1.EtcdCredentialBroker{
				Provider: strategyv1alpha1.CredentialBrokerMinIO, AdminSecretRef: strategyv1alpha1.SecretReference{Name: "platform"},
			},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// The API server refuses credentialBroker settings the broker cannot honour.
func TestCredentialBrokerValidation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		mutate func(*strategyv1alpha1.Etcd)
		msg    string
	}{
		"templated bucket": {func(s *strategyv1alpha1.Etcd) {
			s.Spec.Template.Destination.S3.Bucket = "{{ .Parameters.bucket }}"
		}, "bucket and endpoint are literal"},
		"templated endpoint": {func(s *strategyv1alpha1.Etcd) {
			s.Spec.Template.Destination.S3.Endpoint = "https://{{ .Parameters.host }}"
		}, "bucket and endpoint are literal"},
		"prefix root without slash": {func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker.PrefixRoot = "etcd" }, "ends with /"},
		"prefix root wildcard":      {func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker.PrefixRoot = "e*/" }, "must not contain"},
		"prefix root variable":      {func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker.PrefixRoot = "${aws:username}/" }, "must not contain"},
		"short rotation": {func(s *strategyv1alpha1.Etcd) {
			s.Spec.CredentialBroker.RotationInterval = &metav1.Duration{Duration: time.Minute}
		}, "at least 1h"},
		"unknown provider":    {func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker.Provider = "Other" }, "provider"},
		"admin endpoint path": {func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker.AdminEndpoint = "https://h/x/y" }, "adminEndpoint"},
	} {
		err := k8s.Create(ctx, brokered("cb-invalid", tc.mutate))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.msg), name)
	}

	ok := brokered("cb-ok", func(s *strategyv1alpha1.Etcd) {
		s.Spec.CredentialBroker.PrefixRoot = "etcd/"
		s.Spec.CredentialBroker.RotationInterval = &metav1.Duration{Duration: 24 * time.Hour}
	})
	g.Expect(k8s.Create(ctx, ok)).To(Succeed())
	removed := ok.DeepCopy()
	removed.Spec.CredentialBroker = nil
	err := k8s.Update(ctx, removed)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "credentialBroker removed: got %v", err)

	// A per-namespace strategy may become brokered (the migration).
	plain := brokered("cb-later", func(s *strategyv1alpha1.Etcd) { s.Spec.CredentialBroker = nil })
	g.Expect(k8s.Create(ctx, plain)).To(Succeed())
	plain.Spec.CredentialBroker = brokered("", nil).Spec.CredentialBroker
	g.Expect(k8s.Update(ctx, plain)).To(Succeed())
}
