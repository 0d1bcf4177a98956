package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// lookAlikePayload is what a tenant packs into each look-alike Job: an
// annotation and an environment variable of this many bytes (the API
// server takes objects of up to 1.5 MiB; 2 x 96 KiB keeps the test quick).
const lookAlikePayload = 96 << 10

// createLookAlikes creates n Jobs in ns as a tenant can: the driver's
// inspection labels (part-of etcd-backup-driver), an owner reference to
// a Backup, a name of the driver's form, suspended, and padded.
func createLookAlikes(ctx context.Context, c client.Client, ns string, n int) error {
	pad := strings.Repeat("x", lookAlikePayload)
	for i := range n {
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		yes, no := true, false
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("etcd-inspect-%016d", i),
				Labels: map[string]string{backupsv1alpha1.InspectionLabel: string(uid), "app.kubernetes.io/name": "etcd-inspection",
					"app.kubernetes.io/part-of": "etcd-backup-driver"},
				Annotations: map[string]string{"etcd-backup-driver.cozystack.io/backup": pad},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Backup",
					Name: fmt.Sprintf("b%d", i), UID: uid, Controller: &no, BlockOwnerDeletion: &no}}},
			Spec: batchv1.JobSpec{Suspend: &yes, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "inspect", Image: "registry.example/etcd-backup-driver:v1", Command: []string{"/etcd-stage"},
					Env: []corev1.EnvVar{{Name: "PAD", Value: pad}}}}}}},
		}
		if err := c.Create(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// heapPerJob starts a cache of Jobs configured as o against env, which
// holds n look-alikes in namespace tenant-a, and returns the heap it
// holds per Job once synced (less what the same cache of an empty
// namespace holds: the informer's own), and one cached look-alike.
func heapPerJob(ctx context.Context, env *testenv.Env, o cache.Options, n int) (float64, *batchv1.Job, error) {
	empty := o
	empty.DefaultNamespaces = map[string]cache.Config{"tenant-empty": {}}
	base, _, err := cachedJobs(ctx, env, empty, 0)
	if err != nil {
		return 0, nil, err
	}
	grown, one, err := cachedJobs(ctx, env, o, n)
	if err != nil {
		return 0, nil, err
	}
	return float64(grown-base) / float64(n), one, nil
}

// cachedJobs is the heap a synced cache of Jobs configured as o holds,
// which must be n Jobs, and one of them.
func cachedJobs(ctx context.Context, env *testenv.Env, o cache.Options, n int) (int64, *batchv1.Job, error) {
	o.Scheme = driverscheme.New()
	c, err := cache.New(env.Config, o)
	if err != nil {
		return 0, nil, err
	}
	before := heap()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := c.GetInformer(ctx, &batchv1.Job{}); err != nil {
		return 0, nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return 0, nil, fmt.Errorf("the Job cache did not sync")
	}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs); err != nil {
		return 0, nil, err
	}
	if len(jobs.Items) != n {
		return 0, nil, fmt.Errorf("the cache holds %d Jobs, want %d", len(jobs.Items), n)
	}
	var one *batchv1.Job
	if n > 0 {
		one = jobs.Items[0].DeepCopy()
	}
	jobs = batchv1.JobList{}
	grown := heap() - before
	runtime.KeepAlive(c)
	return grown, one, nil
}

func heap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// wholeJobs is how the Job cache was configured before look-alikes were
// trimmed: the driver's label, every Job kept whole (but managed fields).
func wholeJobs() cache.Options {
	return cache.Options{DefaultTransform: cachetrim.Plain, ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Label: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "etcd-backup-driver"})}}}
}

// A tenant can make Jobs with the driver's labels (a label selector keeps
// out only Jobs that do not try), but not fill the driver's memory with
// them: of a Job bigger than the driver builds the cache keeps only what
// its watches read, marked trimmed, and no container (so it is never
// the driver's). 64 look-alikes of 192 KiB each cost the cache a few KiB
// apiece, not their size; the cached copy is under 2 KiB.
func TestLookAlikeJobsCostTheCacheLittle(t *testing.T) {
	g := NewWithT(t)
	env, err := testenv.Start()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}})).To(Succeed())
	const n = 64
	g.Expect(createLookAlikes(ctx, env.Client, "tenant-a", n)).To(Succeed())

	perJob, cached, err := heapPerJob(ctx, env, cacheOptions(DefaultNamespace, 0), n)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("the driver's Job cache: %.0f bytes of heap per look-alike of %d bytes", perJob, 2*lookAlikePayload)
	// The heap includes what the informer's client keeps for the biggest
	// object it read (a few hundred KiB in all); kept whole, each costs
	// its size (BenchmarkJobCacheHeapPerLookAlike: ~200 KiB each).
	g.Expect(perJob).To(BeNumerically("<", 2*lookAlikePayload/10), "a look-alike costs the cache a tenth of its size or more")
	raw, err := json.Marshal(cached)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(raw)).To(BeNumerically("<", 2<<10), "the cached look-alike: %s", raw)
	g.Expect(cached.Labels).To(HaveKeyWithValue(backupsv1alpha1.InspectionLabel, HavePrefix("00000000-0000-0000-0000-")))
	g.Expect(cached.OwnerReferences).To(HaveLen(1))
	g.Expect(cached.Spec.Template.Spec.Containers).To(BeEmpty())
	g.Expect(cached.Annotations).NotTo(HaveKey("etcd-backup-driver.cozystack.io/backup"))
	g.Expect(cachetrim.Trimmed(cached)).To(BeTrue())
}

// BenchmarkJobCacheHeapPerLookAlike reports the heap the driver's Job
// cache holds per look-alike Job of 192 KiB, kept whole (as before) and
// trimmed (as now).
func BenchmarkJobCacheHeapPerLookAlike(b *testing.B) {
	env, err := testenv.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}); err != nil {
		b.Fatal(err)
	}
	const n = 256
	if err := createLookAlikes(ctx, env.Client, "tenant-a", n); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		o    func() cache.Options
	}{{"whole", wholeJobs}, {"trimmed", func() cache.Options { return cacheOptions(DefaultNamespace, 0) }}} {
		b.Run(bc.name, func(b *testing.B) {
			var perJob float64
			for range b.N {
				if perJob, _, err = heapPerJob(ctx, env, bc.o(), n); err != nil {
					b.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			b.ReportMetric(perJob, "heap-B/job")
		})
	}
}
