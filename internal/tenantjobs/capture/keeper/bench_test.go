package keeper

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// BenchmarkDriverMemoryPerFollowedTenant measures what a followed tenant
// costs the driver's heap: the capture Deployment and the CaptureProgress
// (with a window, a condition and a report) of 500 tenants, built as the
// driver builds them, held in an informer cache configured as the
// manager's (the driver's label on Deployments, managed fields dropped),
// against the same cache empty. The lag metric's entry is a few dozen
// bytes more. go test ./internal/tenantjobs/capture/keeper -run '^$' -bench DriverMemory -benchtime 1x
func BenchmarkDriverMemoryPerFollowedTenant(b *testing.B) {
	const n = 500
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capture-bench-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	for i := range n {
		name := fmt.Sprintf("etcd-capture-%016d", i)
		rec := &driverv1alpha1.CaptureProgress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: Labels(name), Annotations: map[string]string{PlanAnnotation: "daily"}},
			Spec:       driverv1alpha1.CaptureProgressSpec{Plan: "daily", BaseBackup: "daily-29943599", BaseRevision: 123456},
		}
		if err := env.Client.Create(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Status = driverv1alpha1.CaptureProgressStatus{BaseRevision: 123456, Segments: 4321, NewestRevision: 987654, NewestTime: &now,
			ConfirmedAt: &now, UpdatedAt: &now,
			Window: &driverv1alpha1.CaptureWindow{From: metav1.NewTime(now.Add(-time.Hour)), FromBackup: "daily-29943599", To: &now},
			Conditions: []metav1.Condition{{Type: driverv1alpha1.CaptureConditionCapturing, Status: metav1.ConditionTrue, Reason: driverv1alpha1.CaptureReasonFollowing,
				Message: "recoverable from 2026-12-07T03:00:00Z (Backup daily-29943599) to 2026-12-07T04:00:00.123456Z", LastTransitionTime: metav1.NewTime(now.Time)}}}
		if err := env.Client.Status().Update(ctx, rec); err != nil {
			b.Fatal(err)
		}
		o := capture.Options{EtcdEndpoints: []string{"https://etcd-client." + ns.Name + ".svc:2379"}, Endpoint: "https://s3.example.com",
			Bucket: "etcd-backups", Prefix: ns.Name + "/etcd", Base: changelog.Base{Revision: 123456, SHA256: strings.Repeat("ab", 32)},
			SegmentInterval: capture.DefaultSegmentInterval, SegmentBytes: capture.DefaultSegmentBytes, AllowedEndpointCIDRs: []string{"10.0.0.0/8"}}
		d := Deployment(Spec{Namespace: ns.Name, Name: name, Record: rec.UID, Plan: "daily", Image: "ghcr.io/etcd-backup-driver/etcd-backup-driver:v1.0.0",
			Options: o, SecretName: "etcd-backup-credentials", MemoryMiB: 128})
		if err := env.Client.Create(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	start := func(namespace string) (cache.Cache, context.CancelFunc) {
		c, err := cache.New(env.Config, cache.Options{Scheme: driverscheme.New(), DefaultTransform: cachetrim.Plain,
			DefaultNamespaces: map[string]cache.Config{namespace: {}},
			ByObject: map[client.Object]cache.ByObject{
				&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "etcd-backup-driver"})},
			}})
		if err != nil {
			b.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		for _, o := range []client.Object{&appsv1.Deployment{}, &driverv1alpha1.CaptureProgress{}} {
			if _, err := c.GetInformer(cctx, o); err != nil {
				b.Fatal(err)
			}
		}
		go func() { _ = c.Start(cctx) }()
		if !c.WaitForCacheSync(cctx) {
			b.Fatal("the cache did not sync")
		}
		return c, cancel
	}
	b.ResetTimer()
	for range b.N {
		empty := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "capture-bench-empty-"}}
		if err := env.Client.Create(ctx, empty); err != nil {
			b.Fatal(err)
		}
		before := heap()
		c0, stop0 := start(empty.Name)
		base := heap() - before
		stop0()
		_ = c0
		before = heap()
		c, stop := start(ns.Name)
		var list driverv1alpha1.CaptureProgressList
		if err := c.List(ctx, &list); err != nil || len(list.Items) != n {
			b.Fatalf("the cache holds %d records: %v", len(list.Items), err)
		}
		list = driverv1alpha1.CaptureProgressList{}
		held := heap() - before
		stop()
		b.ReportMetric(float64(held-min(base, held))/n, "heap-B/tenant")
	}
}
