package platform

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// InstallShardPolicy creates the driver chart's MutatingAdmissionPolicy
// and its binding, rendered with the Helm SDK for shards shards, as an
// admin's `helm install` would.
func InstallShardPolicy(ctx context.Context, c client.Client, shards int) error {
	objs, err := chartrender.Render(chartrender.ChartDir("etcd-backup-driver"), chartrender.Release{
		Name: "etcd-backup-driver", Namespace: testenv.DriverNamespace, Values: map[string]any{"shards": shards}})
	if err != nil {
		return err
	}
	for _, kind := range []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
		o := chartrender.Find(objs, kind, "etcd-backup-driver-shard")
		if o == nil {
			return fmt.Errorf("the chart rendered with shards=%d has no %s", shards, kind)
		}
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %s: %w", kind, err)
		}
	}
	return awaitPolicyMapping(ctx, c)
}

// awaitPolicyMapping waits until the API server's admission policies know
// every kind the shard policy matches: they resolve kinds through a
// discovery mapper the server refreshes every 30 s, and until then
// refuse a create of a custom kind they match (503, "There can be a
// delay between when CustomResourceDefinitions are created and when they
// are available"). A platform's CRDs are long installed; a test's are
// seconds old. Dry runs: nothing is kept.
func awaitPolicyMapping(ctx context.Context, c client.Client) error {
	var objs []client.Object
	for _, o := range (&Platform{}).TenantObjects(testenv.DriverNamespace) {
		switch o.(type) {
		case *corev1.Namespace, *corev1.Secret:
		default:
			objs = append(objs, o)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, o := range objs {
		for {
			err := c.Create(ctx, o.DeepCopyObject().(client.Object), client.DryRunAll)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the shard policy still refuses %T: %w", o, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// ShardLabelled holds once the API server's admission policy labels a
// BackupJob created in ns with shard want (a dry run: nothing is kept).
// The server loads policies, and sees namespace labels, a moment late.
func ShardLabelled(ctx context.Context, c client.Client, ns, want string) func(g Gomega) {
	return func(g Gomega) {
		probe := &backupsv1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shard-probe"},
			Spec: backupsv1alpha1.BackupJobSpec{BackupClassName: ClassName,
				ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}}}
		g.Expect(c.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Labels).To(HaveKeyWithValue(shard.Label, want))
	}
}
