package ebdctl

import (
	"context"
	"fmt"
	"io"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// sharedCredentialLines returns one line for each Etcd strategy whose
// namespaces share an S3 access key, as the driver reports it (the
// strategy's SharedCredentials condition), in name order. Strategies are
// cluster-scoped: a user who may not list them gets no lines.
func sharedCredentialLines(ctx context.Context, c client.Reader) []string {
	var strategies strategyv1alpha1.EtcdList
	if err := c.List(ctx, &strategies); err != nil {
		return nil
	}
	var lines []string
	for _, s := range strategies.Items {
		cond := meta.FindStatusCondition(s.Status.Conditions, strategyv1alpha1.EtcdConditionSharedCredentials)
		if cond != nil && cond.Status == metav1.ConditionTrue {
			lines = append(lines, fmt.Sprintf("strategy %s: %s", s.Name, cond.Message))
		}
	}
	sort.Strings(lines)
	return lines
}

// printSharedCredentials writes lines to w, red at a terminal.
func printSharedCredentials(w io.Writer, lines []string, colour bool) {
	for _, l := range lines {
		if colour {
			l = colourRed + l + colourReset
		}
		fmt.Fprintln(w, l)
	}
}
