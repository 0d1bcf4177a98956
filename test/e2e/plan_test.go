package e2e

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planrecord"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
)

// A Plan on a one-minute schedule fires on the real clock: its BackupJob
// runs through the stand-in operator and a Ready Backup with a real artifact
// appears, and the Plan reports when it last scheduled.
func TestPlanFiresOnShortSchedule(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	tn.write(kvdata.Set{Prefix: "/sentinel", N: 500, Size: 256, Gen: "planned"})

	p := &backupsv1alpha1.Plan{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "every-minute"},
		Spec: backupsv1alpha1.PlanSpec{
			ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"},
			BackupClassName: tn.class,
			Schedule:        backupsv1alpha1.PlanSchedule{Cron: "* * * * *"},
		},
	}
	g.Expect(sb.Client.Create(tn.ctx, p)).To(Succeed())

	var ready *backupsv1alpha1.Backup
	g.Eventually(func() *backupsv1alpha1.Backup {
		var list backupsv1alpha1.BackupList
		g.Expect(sb.Client.List(tn.ctx, &list, client.InNamespace(tn.ns))).To(Succeed())
		for i := range list.Items {
			b := &list.Items[i]
			if b.Spec.PlanRef != nil && b.Spec.PlanRef.Name == p.Name && b.Status.Phase == backupsv1alpha1.BackupPhaseReady {
				ready = b
			}
		}
		return ready
	}).WithTimeout(150*time.Second).WithPolling(time.Second).ShouldNot(BeNil(), "a scheduled backup within two minutes")

	src, err := artifact.Resolve(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(src.Key).To(HavePrefix(tn.ns + "/etcd/"))
	g.Expect(ready.Status.Artifact.Checksum).To(HavePrefix("sha256:"))
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
	rec, ok := planrecord.Peek(p)
	g.Expect(ok).To(BeTrue())
	g.Expect(rec.LastScheduleTime).NotTo(BeNil())

	// Stop it so that it does not keep firing for the rest of the package.
	before := p.DeepCopy()
	p.Annotations[planpolicy.Suspend] = "true"
	g.Expect(sb.Client.Patch(tn.ctx, p, client.MergeFrom(before))).To(Succeed())
}
