package tenantjobs

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
)

// inspect names the inspection Job's container, whose report these read.
const inspect = "inspect"

func podWith(name, message string, exit int32) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: message}}}}}}
}

// reportOf is the inspection report ReportOf reads from p's inspect
// container.
func reportOf(p *corev1.Pod) (inspectionstep.Report, error) {
	var r inspectionstep.Report
	err := ReportOf(p, inspect, &r)
	return r, err
}

// ReportOf takes the report of the inspect container when it is one
// well-formed report agreeing with the exit code, and refuses every
// hostile message a tenant's Pod can leave.
func TestReportOfRefusesHostileMessages(t *testing.T) {
	good := inspectionstep.NewReport(driverv1alpha1.BackupManifest{Revision: 7, Keys: 2, DBSizeBytes: 20480, Keyspaces: []driverv1alpha1.KeyspaceManifest{{
		Prefix: "/registry", Objects: 2, Namespaces: 1, Resources: []driverv1alpha1.ObjectCount{{Name: "namespaces", Count: 1}}, NamespaceNames: []string{"default"}}}}, nil).Line()
	r, err := reportOf(podWith(inspect, good, 0))
	if err != nil || r.Outcome != inspectionstep.OutcomeInspected || r.Manifest.Revision != 7 {
		t.Fatalf("ReportOf(good) = %+v, %v", r, err)
	}
	refused := `{"outcome":"Refused","reason":"ArtifactChanged","message":"sha256 differs"}`
	if r, err := reportOf(podWith(inspect, refused, 65)); err != nil || r.Outcome != report.Refused {
		t.Fatalf("ReportOf(refused) = %+v, %v", r, err)
	}
	for name, pod := range map[string]*corev1.Pod{
		"oversized":               podWith(inspect, good+strings.Repeat(" ", 4096), 0),
		"two objects":             podWith(inspect, good+good, 0),
		"unknown field":           podWith(inspect, strings.Replace(good, `"keys":2`, `"keys":2,"owner":"x"`, 1), 0),
		"negative count":          podWith(inspect, strings.Replace(good, `"count":1`, `"count":-1`, 1), 0),
		"negative keys":           podWith(inspect, strings.Replace(good, `"keys":2`, `"keys":-2`, 1), 0),
		"inspected but exit 65":   podWith(inspect, good, 65),
		"refused but exit 0":      podWith(inspect, refused, 0),
		"logs, not a report":      podWith(inspect, "panic: runtime error: index out of range\ngoroutine 1", 2),
		"empty":                   podWith(inspect, "", 0),
		"another container":       podWith("sidecar", good, 0),
		"still running":           {Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: inspect}}}},
		"no container status":     {},
		"manifest with a refusal": podWith(inspect, strings.Replace(good, `"outcome":"Inspected","reason":"Inspected"`, `"outcome":"Refused","reason":"ArtifactCorrupt"`, 1), 65),
	} {
		if r, err := reportOf(pod); err == nil {
			t.Errorf("%s: ReportOf accepted %+v", name, r)
		}
	}
}

// A container that restarts (the capture's) leaves the report of its last
// exit in its last state while it runs again: ReportOf reads it there, by
// the same rules.
func TestReportOfReadsTheLastExitOfARestartedContainer(t *testing.T) {
	refused := `{"outcome":"Refused","reason":"ArtifactChanged","message":"sha256 differs"}`
	restarted := func(msg string, exit int32) *corev1.Pod {
		p := podWith(inspect, msg, exit)
		st := &p.Status.ContainerStatuses[0]
		st.LastTerminationState, st.State = st.State, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		st.RestartCount = 1
		return p
	}
	if r, err := reportOf(restarted(refused, 65)); err != nil || r.Outcome != report.Refused {
		t.Fatalf("ReportOf(restarted) = %+v, %v", r, err)
	}
	if r, err := reportOf(restarted(refused, 0)); err == nil {
		t.Fatalf("a last exit disagreeing with its report was read: %+v", r)
	}
}
