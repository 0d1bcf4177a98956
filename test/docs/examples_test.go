package docs

import (
	"testing"

	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/cronschedule"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
)

// The example Plan has only the fields Cozystack's Plan serves, and the
// driver reads its schedule and every one of its settings.
func TestTheExamplePlanIsValid(t *testing.T) {
	var p backupsv1alpha1.Plan
	if err := yaml.UnmarshalStrict([]byte(read(t, "examples/backups/etcd/user-plan.yaml")), &p); err != nil {
		t.Fatalf("user-plan.yaml: %v", err)
	}
	if _, err := cronschedule.Parse(p.Spec.Schedule.Cron, cronschedule.HashKey(p.Namespace, p.Name)); err != nil {
		t.Errorf("user-plan.yaml: spec.schedule.cron: %v", err)
	}
	pol := planpolicy.ParsePlan(&p, planpolicy.Bounds{})
	if !pol.Valid() || !pol.Retention.Prunes() || pol.Drill == nil {
		t.Errorf("user-plan.yaml: %s (retention %+v, drill %v)", pol.Summary(), pol.Retention, pol.Drill != nil)
	}
}
