package restore

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/servedschema"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// forbiddenCRDs refuses every CRD read, as a ClusterRole without the
// Kamaji CRDs' names (RBAC managed outside the chart) does.
type forbiddenCRDs struct{ client.Reader }

func (forbiddenCRDs) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, key.Name, nil)
}

// Kamaji's CRDs that cannot be read are not "Kamaji is absent": the
// restore would then find no control planes and purge without fencing.
// The lookup fails instead, and the restore waits.
func TestUnreadableKamajiCRDsAreNotAbsent(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Schema: &servedschema.Schema{Reader: forbiddenCRDs{}}}
	installed, err := r.kamajiInstalled(context.Background())
	g.Expect(err).To(HaveOccurred(), "an unreadable CRD counted as absent")
	g.Expect(installed).To(BeFalse())
}

// The staging Job's revision annotations are on an object in the tenant's
// namespace: a tenant that writes 40 KB into them must not make every
// status write of its RestoreJob fail the CRD's maxLength (its restore
// would hold its claim with no status), nor put anything but a number as
// the live revision into the message.
func TestRevisionMessageBoundsTheJobsAnnotations(t *testing.T) {
	g := NewWithT(t)
	o := world()
	g.Expect(o.staging).NotTo(BeNil())
	o.staging = o.staging.DeepCopy()
	o.staging.Annotations = map[string]string{liveRevisionErrorAnnotation: strings.Repeat("x", 40000)}
	c := revisionCondition(o, decision{state: stateDeleteCluster})
	g.Expect(len(c.Message)).To(BeNumerically("<=", textlimit.MaxMessage))

	o.staging.Annotations = map[string]string{liveRevisionAnnotation: "42; rm -rf " + strings.Repeat("y", 40000)}
	c = revisionCondition(o, decision{state: stateDeleteCluster})
	g.Expect(c.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionBumpedBlind)))
	g.Expect(len(c.Message)).To(BeNumerically("<=", textlimit.MaxMessage))
	g.Expect(c.Message).NotTo(ContainSubstring("rm -rf"))
}
