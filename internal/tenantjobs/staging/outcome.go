package staging

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// Where a staging Job stands, as every tenant Job's outcome
// (tenantjobs.OutcomeOf) under the names the restore reads it by.
const (
	Running = tenantjobs.Running
	// Staged: every file is on the claim.
	Staged  = tenantjobs.Succeeded
	Refused = tenantjobs.Refused
	Failed  = tenantjobs.Failed
)

// OutcomeOf is where staging Job j stands (tenantjobs.OutcomeOf).
func OutcomeOf(j *batchv1.Job) (tenantjobs.Outcome, string) { return tenantjobs.OutcomeOf(j) }

// PodReport returns the reason and message the staging step left in the
// termination message of a failed container of p ("" when none), for the
// restore's status: its report when it is one (tenantjobs.ReportOf:
// parsed strictly, agreeing with the exit code), else the message's last
// line as text (a crash's log tail). The message is the Pod's, so it is
// cut and treated as text only.
func PodReport(p *corev1.Pod) (reason, message string) {
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		t := st.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		var r step.Report
		if tenantjobs.ReportOf(p, st.Name, &r) == nil && r.Message != "" {
			return textlimit.Value(string(r.Reason)), textlimit.Note(r.Message)
		}
		line := strings.TrimSpace(t.Message)
		if i := strings.LastIndexByte(line, '\n'); i >= 0 {
			line = line[i+1:]
		}
		return "", textlimit.Note(line)
	}
	return "", ""
}
