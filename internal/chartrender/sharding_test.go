package chartrender

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// shards: 3 deploys a Deployment per shard, each selecting only its own
// pods and running its shard, and the admission policy; the default
// renders the one unsharded Deployment and no policy.
func TestDriverShards(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, map[string]any{"shards": 3})
	g.Expect(Find(objs, "Deployment", "etcd-backup-driver")).To(BeNil())
	for i := range 3 {
		dep := Find(objs, "Deployment", fmt.Sprintf("etcd-backup-driver-shard-%d", i))
		g.Expect(dep).NotTo(BeNil(), "shard %d", i)
		g.Expect(field(g, dep, "spec", "selector", "matchLabels")).To(HaveKeyWithValue("sharding.etcd-backup-driver.io/shard", fmt.Sprint(i)))
		c := field(g, dep, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
		g.Expect(c["args"]).To(ContainElements(fmt.Sprintf("--shard=%d", i), "--shards=3", "--leader-elect=true"))
	}
	g.Expect(Find(objs, "MutatingAdmissionPolicy", "etcd-backup-driver-shard")).NotTo(BeNil())
	g.Expect(Find(objs, "MutatingAdmissionPolicyBinding", "etcd-backup-driver-shard")).NotTo(BeNil())

	plain := renderDriver(t, nil)
	g.Expect(Find(plain, "Deployment", "etcd-backup-driver")).NotTo(BeNil())
	g.Expect(Find(plain, "MutatingAdmissionPolicy", "etcd-backup-driver-shard")).To(BeNil())
	g.Expect(managerContainer(g, plain)["args"]).NotTo(ContainElement(HavePrefix("--shard")))
}

// With shards, each shard has its own leader Lease: the no-leader alert
// watches every shard's, by name, instead of the unsharded Lease that no
// replica holds any more.
func TestDriverShardsNoLeaderAlert(t *testing.T) {
	g := NewWithT(t)
	objs := renderDriver(t, map[string]any{"shards": 2, "prometheusRule": map[string]any{"enabled": true}})
	rule := Find(objs, "PrometheusRule", "etcd-backup-driver")
	g.Expect(rule).NotTo(BeNil())
	var expr any
	for _, r := range field(g, rule, "spec", "groups").([]any)[0].(map[string]any)["rules"].([]any) {
		if r.(map[string]any)["alert"] == "EtcdBackupDriverNoLeader" {
			expr = r.(map[string]any)["expr"]
		}
	}
	g.Expect(expr).To(Equal(`max by (name) (leader_election_master_status{name=~"etcd-backup-driver[.]strategy[.]backups[.]cozystack[.]io-shard-[0-9]+"}) < 1`))
}
