package keeper

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cachetrim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// The Deployment cache selects by the part-of label a tenant can put on
// Deployments of its own: it keeps the driver's capture Deployment whole
// (longest names, an 8 KiB CA), so the keeper still knows it for its own,
// and keeps a padded look-alike trimmed, never taken for the driver's.
func TestTheDeploymentCacheKeepsTheCaptureWholeAndTrimsLookAlikes(t *testing.T) {
	long := func(n int) string { return strings.Repeat("k", n) }
	for _, ca := range []string{"", long(8 << 10)} {
		o := capture.Options{EtcdEndpoints: []string{"https://etcd-client." + long(63) + ".svc:2379"}, Endpoint: "https://" + long(240) + ".example",
			Bucket: long(63), Region: long(64), Prefix: long(63) + "/" + long(63), Base: changelog.Base{Revision: 1 << 62, SHA256: strings.Repeat("ab", 32)},
			SegmentInterval: capture.DefaultSegmentInterval, SegmentBytes: capture.DefaultSegmentBytes, AllowedEndpointCIDRs: []string{"10.0.0.0/8"}}
		built := Deployment(Spec{Namespace: long(63), Name: long(63), Record: "uid-1", Plan: long(253), Image: long(255),
			Options: o, SecretName: long(253), CAPEM: ca, MemoryMiB: 128})
		trim := cachetrim.Deployment(tenantjobs.CacheBudget(len(ca)), LabelKeys()...)
		out, err := trim(built.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if cached := out.(*appsv1.Deployment); cachetrim.Trimmed(cached) || !tenantjobs.MineDeployment(cached, built) {
			t.Errorf("CA of %d bytes: the cache trimmed the driver's own capture Deployment", len(ca))
		}
		padded := built.DeepCopy()
		padded.Spec.Template.Spec.Containers[0].Args = append(padded.Spec.Template.Spec.Containers[0].Args, long(tenantjobs.CacheBudget(len(ca))))
		out, err = trim(padded)
		if err != nil {
			t.Fatal(err)
		}
		cached := out.(*appsv1.Deployment)
		if !cachetrim.Trimmed(cached) || tenantjobs.MineDeployment(cached, built) {
			t.Errorf("CA of %d bytes: a Deployment bigger than the budget was kept whole, or taken for the driver's once trimmed", len(ca))
		}
		if len(cached.Spec.Template.Spec.Containers) != 0 || cached.Labels[CaptureLabel] != built.Labels[CaptureLabel] {
			t.Errorf("CA of %d bytes: the trimmed copy kept containers (%d) or lost the capture label", len(ca), len(cached.Spec.Template.Spec.Containers))
		}
	}
}
