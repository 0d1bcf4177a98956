package withoutkamaji

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kamajistandin"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv/platform"
)

// Without Kamaji the driver knows there is nothing to fence and asks the
// API server nothing about it during a restore (it asked for Kamaji's
// discovery document again and again: 79 GETs for 3 restores, half of
// their requests). Once Kamaji is installed, the next restore finds and
// fences its control planes: the answer follows the CRDs.
func TestKamajiIsAskedForOnceAndFollowed(t *testing.T) {
	t.Run("absent: restores ask nothing of Kamaji", func(t *testing.T) {
		g := NewWithT(t)
		var tenants []*platform.Tenant
		backups := map[*platform.Tenant]string{}
		for i := range 3 {
			tn := plat.NewTenant(t, fmt.Sprintf("nokamaji%d", i))
			backups[tn] = tn.Backup("nightly", "").Name
			tenants = append(tenants, tn)
		}
		time.Sleep(2 * time.Second) // the driver is idle again
		before := kamajiGets.Load()
		for _, tn := range tenants {
			rj := tn.Restore("restore", backups[tn], "")
			g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
			c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionControlPlanesFenced)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(string(backupsv1alpha1.ReasonNoControlPlanes)))
		}
		got := kamajiGets.Load() - before
		t.Logf("GETs of Kamaji's discovery documents during 3 restores: %d", got)
		g.Expect(got).To(BeZero(), "the driver asked the API server about Kamaji during the restores")
	})

	t.Run("installed later: the next restore fences its control plane", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(installKamaji()).To(Succeed())
		tn := plat.NewTenant(t, "kamajilater")
		ctx := context.Background()
		g.Expect(kamajistandin.CreateControlPlane(ctx, env.Client, tn.NS, "tenant-k8s", "etcd")).To(Succeed())
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &kamajiv1alpha1.DataStore{ObjectMeta: metav1.ObjectMeta{Name: tn.NS}})
		})
		b := tn.Backup("nightly", "")
		rj := tn.Restore("restore", b.Name, "")
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "status: %+v", rj.Status)
		c := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionControlPlanesFenced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(string(backupsv1alpha1.ReasonFenceLifted)), c.Message)
		restarted := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionControlPlanesRestarted)
		g.Expect(restarted).NotTo(BeNil(), "the control plane was not restarted on the restored etcd")
		g.Expect(restarted.Status).To(Equal(metav1.ConditionTrue), restarted.Message)
		tcp := &kamajiv1alpha1.TenantControlPlane{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tn.NS, Name: "tenant-k8s"}, tcp)).To(Succeed())
		g.Expect(tcp.Annotations).NotTo(HaveKey(backupsv1alpha1.FencedByAnnotation), "the fence was lifted")
	})
}
