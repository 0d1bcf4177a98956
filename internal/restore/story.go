package restore

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// A restore writes one Event in the ordinary case: at its conclusion, and
// it tells the whole story (the safety Backup, the purge and re-create,
// the revision), which used to take an Event per milestone. The steps in
// between are in the Ready condition and the milestone conditions; only
// bad news on the way (a rollback, a replaced cluster, a revision not
// raised, ...) still gets an Event of its own (milestones in act.go).

// story is the note of the conclusion Event: the decided message, then
// what the restore did that the message does not already say.
func story(o *observation, d decision) string {
	var parts []string
	if b := o.safetyBackup; b != nil && !strings.Contains(d.message, b.Name) {
		parts = append(parts, fmt.Sprintf("safety Backup %s/%s holds the data as it was before the restore (restore from it to go back)",
			o.job.Namespace, b.Name))
	}
	if d.success && o.capture != nil {
		if o.capture.from != "" {
			parts = append(parts, "EtcdCluster "+clusterName+" did not exist and was created")
		} else {
			parts = append(parts, "the old EtcdCluster "+clusterName+" and its PVCs were deleted and it was re-created")
		}
	}
	if c := meta.FindStatusCondition(o.job.Status.Conditions, backupsv1alpha1.RestoreConditionRevisionRaised); c != nil && d.success {
		parts = append(parts, revisionClause(o, c))
	}
	if len(parts) == 0 {
		return d.message
	}
	return strings.TrimSuffix(d.message, ".") + "; " + strings.Join(parts, "; ")
}

// revisionClause is the RevisionRaised condition in a few words.
func revisionClause(o *observation, c *metav1.Condition) string {
	switch {
	case c.Status != metav1.ConditionTrue:
		return "the revision was not raised (" + c.Reason + ")"
	case o.staging != nil && o.staging.Annotations[liveRevisionAnnotation] != "":
		return "the revision was raised above the live " + o.staging.Annotations[liveRevisionAnnotation] + ", so watches relist"
	}
	return "the revision was raised (" + c.Reason + "), so watches relist"
}
