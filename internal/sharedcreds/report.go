package sharedcreds

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// namesShown is how many sharing namespaces a condition message names.
const namesShown = 3

// Report is what the Tracker knows of one strategy's credentials.
type Report struct {
	// Namespaces whose access key was read.
	Namespaces int
	// Pending namespaces have not been read yet; while there are any the
	// condition is left as it is (after a restart nothing is known).
	Pending int
	// Sharing are the namespaces, sorted, whose access key another
	// namespace uses too.
	Sharing []string
	// SharedKeys is how many distinct access keys Sharing use.
	SharedKeys int
}

// Condition is the SharedCredentials condition r calls for.
func (r Report) Condition(generation int64) metav1.Condition {
	c := metav1.Condition{Type: strategyv1alpha1.EtcdConditionSharedCredentials, ObservedGeneration: generation}
	if len(r.Sharing) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, strategyv1alpha1.EtcdReasonCredentialsIsolated
		// No count here: a namespace that starts backing up must not
		// cost a write of the strategy.
		c.Message = "no two namespaces known to back up with this strategy share an S3 access key"
		return c
	}
	keys := "one S3 access key"
	if r.SharedKeys > 1 {
		keys = fmt.Sprintf("%d S3 access keys", r.SharedKeys)
	}
	names := r.Sharing
	more := ""
	if len(names) > namesShown {
		names, more = names[:namesShown], ", …"
	}
	c.Status, c.Reason = metav1.ConditionTrue, strategyv1alpha1.EtcdReasonSharedAccessKey
	c.Message = fmt.Sprintf("%d namespaces share %s (%s%s) — a tenant that can read its credentials Secret reaches the others' snapshots; move to brokered keys (docs/security.md)",
		len(r.Sharing), keys, strings.Join(names, ", "), more)
	return c
}
