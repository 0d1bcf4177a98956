package ebdctl

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// status prints each captured application's point-in-time window after
// the table, and gives it in -o json, from the CaptureProgress of its
// Plan; an application whose Plan captures nothing has none.
func TestStatusPrintsThePointInTimeWindow(t *testing.T) {
	g := NewWithT(t)
	to := metav1.NewMicroTime(now.Add(-42 * time.Second))
	cp := &driverv1alpha1.CaptureProgress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "etcd-capture-x"},
		Spec:       driverv1alpha1.CaptureProgressSpec{Plan: "nightly", BaseBackup: "b", BaseRevision: 100},
		Status: driverv1alpha1.CaptureProgressStatus{
			Window: &driverv1alpha1.CaptureWindow{From: metav1.NewTime(now.Add(-4 * time.Hour)), FromBackup: "b", To: &to},
			Conditions: []metav1.Condition{{Type: driverv1alpha1.CaptureConditionCapturing, Status: metav1.ConditionTrue,
				Reason: driverv1alpha1.CaptureReasonFollowing, Message: "recoverable", LastTransitionTime: metav1.NewTime(now)}},
		},
	}
	e, out, _ := fakeEnv(
		plan("tenant-a", "nightly", "etcd", "@daily", 30*24*time.Hour), readyBackup("tenant-a", "b", "etcd", 4*time.Hour), cp,
		plan("tenant-b", "nightly", "etcd", "@daily", 30*24*time.Hour), readyBackup("tenant-b", "b", "etcd", 4*time.Hour),
	)
	g.Expect(e.run("status", "-A", "--terminal", "no")).To(Succeed())
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "point-in-time") {
			lines = append(lines, l)
		}
	}
	g.Expect(lines).To(Equal([]string{"point-in-time tenant-a/etcd (Plan nightly): recoverable from " + now.Add(-4*time.Hour).Format(time.RFC3339) +
		" (Backup b) to " + now.Add(-42*time.Second).Format(time.RFC3339) + ", 42s behind, Following"}), out.String())

	out.Reset()
	g.Expect(e.run("status", "-A", "-o", "json")).To(Succeed())
	var rows RowList[StatusRow]
	g.Expect(json.Unmarshal(out.Bytes(), &rows)).To(Succeed())
	g.Expect(rows.Items).To(HaveLen(2))
	g.Expect(rows.Items[0].PointInTime).To(HaveLen(1))
	g.Expect(rows.Items[0].PointInTime[0].LagSeconds).To(Equal(int64(42)))
	g.Expect(rows.Items[0].PointInTime[0].State).To(Equal("Following"))
	g.Expect(rows.Items[1].PointInTime).To(BeEmpty())
}
