package servedschema_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
)

// answers is a Reader of CRDs that answers every Get with err.
type answers struct {
	client.Reader
	err error
}

func (a *answers) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return a.err
}

// A CRD the driver cannot read (RBAC without its name, an API error) and
// never could is an error to a decision that must not guess, not an
// absent CRD: a restore that took Kamaji for absent would purge without
// fencing. NotFound is an answer; once read, an answer stands while reads
// fail.
func TestAnUnreadableCRDIsNotAnAbsentOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	gr := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	reader := &answers{err: apierrors.NewForbidden(gr, servedschema.TenantControlPlaneCRD, nil)}
	s := &servedschema.Schema{Reader: reader}

	_, err := s.InstalledKnown(ctx, servedschema.TenantControlPlaneCRD, "v1alpha1")
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a Forbidden read said: %v", err)
	g.Expect(s.Installed(ctx, servedschema.TenantControlPlaneCRD, "v1alpha1")).To(BeFalse(), "Installed still guesses")

	reader.err = apierrors.NewNotFound(gr, servedschema.TenantControlPlaneCRD)
	installed, err := s.InstalledKnown(ctx, servedschema.TenantControlPlaneCRD, "v1alpha1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(installed).To(BeFalse())
}
