package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A restore under a live Kamaji control plane must leave it serving the
// backed-up state, and nothing else, to every client: informers converge
// on exactly the backup, no post-backup object is served, new writes get
// resourceVersions above all those seen before, and a watch from before
// the restore is told 410 Gone (so clients relist). The driver gets there
// by fencing the control plane, raising etcd's revision above the live
// one, and restarting the apiservers (issue 17).
func TestRestoreUnderATenantControlPlane(t *testing.T) {
	tn := newTenant(t, true)
	g := tn.g
	tn.deploy(1)
	cs, _ := tn.controlPlane("kubernetes")
	ctx := tn.ctx

	var seen rvTracker
	put := func(name, gen string, update bool) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: probeNS, Name: name}, Data: map[string]string{"gen": gen}}
		var err error
		if update {
			cm, err = cs.CoreV1().ConfigMaps(probeNS).Update(ctx, cm, metav1.UpdateOptions{})
		} else {
			cm, err = cs.CoreV1().ConfigMaps(probeNS).Create(ctx, cm, metav1.CreateOptions{})
		}
		g.Expect(err).NotTo(HaveOccurred())
		seen.note(cm.ResourceVersion)
	}
	backedUp := map[string]string{}
	for i := range 200 {
		name := fmt.Sprintf("cm-%03d", i)
		put(name, "backed-up", false)
		backedUp[name] = "backed-up"
	}
	backup := tn.takeBackup("under-tcp")
	for i := 200; i < 300; i++ {
		put(fmt.Sprintf("cm-%03d", i), "after-backup", false)
	}
	for i := range 50 {
		put(fmt.Sprintf("cm-%03d", i), "changed-after-backup", true)
	}

	// An informer, as every controller in the tenant cluster runs one.
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(probeNS))
	inf := factory.Core().V1().ConfigMaps().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seen.noteObject(o) },
		UpdateFunc: func(_, o any) { seen.noteObject(o) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	g.Expect(cache.WaitForCacheSync(stop, inf.HasSynced)).To(BeTrue())
	g.Eventually(func() int { return len(inf.GetStore().List()) }).WithTimeout(30 * time.Second).Should(Equal(300))
	maxBefore := seen.freeze()
	t.Logf("highest resourceVersion seen before the restore: %d", maxBefore)

	rj := tn.awaitRestore(tn.restoreJob("under-tcp", backup.Name, nil), 3*time.Minute)
	g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), rj.Status.Message)
	for _, c := range rj.Status.Conditions {
		t.Logf("RestoreJob condition %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
	}
	// The live revision was read (not the blind bump): the driver reached
	// the tenant's etcd at the Service's fully qualified name, through the
	// endpoint policy, with the chart's client certificate.
	raised := meta.FindStatusCondition(rj.Status.Conditions, backupsv1alpha1.RestoreConditionRevisionRaised)
	g.Expect(raised).NotTo(BeNil())
	g.Expect(raised.Reason).To(Equal(string(backupsv1alpha1.ReasonRevisionRaised)), raised.Message)

	t.Run("informer converges on exactly the backup", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() string {
			return describeDiff(generations(inf.GetStore().List()), backedUp)
		}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(BeEmpty(), "informer store vs the backed-up ConfigMaps, 60s after the restore")
	})

	t.Run("a fresh list serves nothing from after the backup", func(t *testing.T) {
		g := NewWithT(t)
		list, err := cs.CoreV1().ConfigMaps(probeNS).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		items := make([]any, 0, len(list.Items))
		for i := range list.Items {
			items = append(items, &list.Items[i])
		}
		g.Expect(describeDiff(generations(items), backedUp)).To(BeEmpty(), "fresh List (resourceVersion %s) vs the backed-up ConfigMaps", list.ResourceVersion)
	})

	expectRelist(t, tn, cs, maxBefore)
}

// rvTracker records the highest resourceVersion a client has seen, until
// frozen.
type rvTracker struct {
	mu     sync.Mutex
	max    uint64
	frozen bool
}

func (r *rvTracker) note(rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.frozen && n > r.max {
		r.max = n
	}
}

func (r *rvTracker) noteObject(o any) {
	if m, ok := o.(metav1.Object); ok {
		r.note(m.GetResourceVersion())
	}
}

func (r *rvTracker) freeze() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
	return r.max
}

// generations maps ConfigMap names to their "gen" value.
func generations(objs []any) map[string]string {
	m := map[string]string{}
	for _, o := range objs {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			m[cm.Name] = cm.Data["gen"]
		}
	}
	return m
}

// describeDiff says how got differs from want, briefly; empty when equal.
func describeDiff(got, want map[string]string) string {
	var extra, missing, wrong []string
	for k, v := range got {
		if w, ok := want[k]; !ok {
			extra = append(extra, k+"="+v)
		} else if w != v {
			wrong = append(wrong, k+"="+v)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(extra)+len(missing)+len(wrong) == 0 {
		return ""
	}
	brief := func(s []string) string {
		slices.Sort(s)
		if len(s) > 3 {
			return fmt.Sprintf("%d, e.g. %v", len(s), s[:3])
		}
		return fmt.Sprintf("%d %v", len(s), s)
	}
	return fmt.Sprintf("%d objects: not in the backup: %s; missing: %s; other generation: %s", len(got), brief(extra), brief(missing), brief(wrong))
}

func describeObject(o any) string {
	if s, ok := o.(*metav1.Status); ok {
		return fmt.Sprintf("status %d %s: %s", s.Code, s.Reason, s.Message)
	}
	return fmt.Sprintf("%T", o)
}
