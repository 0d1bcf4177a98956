package rehearsal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// Fifty tenants' drills, queued behind one tenant's ten dry runs, drain
// under --max-rehearsal-jobs=4 and one per namespace: every one of the
// sixty runs and succeeds; never more than four run at once, nor two of
// one namespace; the ten take one slot at a time, so three of the fifty
// start at once beside the first of them; and the fifty start in the
// order they were created, give or take the cap. The test plays the Job
// controller, ending the oldest running rehearsal each round.
func TestDrillsOfManyTenantsDrainThroughTheCaps(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const tenants, busy, total = 50, 10, 4
	prefix := fmt.Sprintf("drain%05d", time.Now().UnixNano()%100000)
	mk := func(name string) string {
		g.Expect(k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		tenantWithBackup(t, name)
		return name
	}
	noisy := mk(prefix + "-busy")
	var quiet []string
	for i := range tenants {
		quiet = append(quiet, mk(fmt.Sprintf("%s-%02d", prefix, i)))
	}
	withCaps(t, total, 1)

	for i := range busy {
		create(t, dryRun(noisy, fmt.Sprintf("dry-run-%02d", i), "nightly"))
	}
	// Creation times are in seconds; within one second the queue orders
	// by namespace, which here is the order of creation.
	time.Sleep(1100 * time.Millisecond)
	for _, ns := range quiet {
		create(t, dryRun(ns, "drill", "nightly"))
	}

	var started []string                 // namespaces, in the order their Jobs appeared
	running := map[string]*batchv1.Job{} // by UID: seen, not yet ended by the test
	var order []string                   // the UIDs of running, oldest first
	deadline := time.Now().Add(5 * time.Minute)
	for ended := 0; ended < tenants+busy; {
		if time.Now().After(deadline) {
			t.Fatalf("the queue did not drain: %d of %d ended; started %v", ended, tenants+busy, started)
		}
		var jobs batchv1.JobList
		g.Expect(k.List(ctx, &jobs, client.HasLabels{backupsv1alpha1.RehearsalLabel})).To(Succeed())
		sort.Slice(jobs.Items, func(i, j int) bool { return jobs.Items[i].CreationTimestamp.Before(&jobs.Items[j].CreationTimestamp) })
		for i := range jobs.Items {
			j := &jobs.Items[i]
			if !strings.HasPrefix(j.Namespace, prefix) || len(j.Status.Conditions) > 0 || running[string(j.UID)] != nil {
				continue
			}
			running[string(j.UID)] = j
			order = append(order, string(j.UID))
			started = append(started, j.Namespace)
		}
		perNamespace := map[string]int{}
		for _, j := range running {
			perNamespace[j.Namespace]++
			g.Expect(perNamespace[j.Namespace]).To(Equal(1), "two rehearsals of %s at once", j.Namespace)
		}
		g.Expect(len(running)).To(BeNumerically("<=", total), "more than %d rehearsals at once", total)
		if len(order) > 0 {
			j := running[order[0]]
			finishJob(ctx, j, 0, rehearsed)
			delete(running, order[0])
			order = order[1:]
			ended++
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The busy tenant took one slot; the other three went to the first
	// quiet tenants, not to its queue.
	g.Expect(started[:total]).To(ConsistOf(noisy, quiet[0], quiet[1], quiet[2]))
	// The quiet tenants started in their order, give or take the cap.
	at := map[string]int{}
	for i, ns := range started {
		if ns != noisy {
			at[ns] = i
		}
	}
	g.Expect(at).To(HaveLen(tenants))
	for i := range quiet {
		for j := i + total + 1; j < len(quiet); j++ {
			g.Expect(at[quiet[i]]).To(BeNumerically("<", at[quiet[j]]), "%s (created %d-th) started after %s (created %d-th)", quiet[i], i, quiet[j], j)
		}
	}
	for _, ns := range quiet {
		rj := waitEnd(t, ns, "drill")
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %s", ns, rj.Status.Message)
	}
	for i := range busy {
		rj := waitEnd(t, noisy, fmt.Sprintf("dry-run-%02d", i))
		g.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "%s: %s", rj.Name, rj.Status.Message)
	}
	t.Logf("start order: %v", started)
}
