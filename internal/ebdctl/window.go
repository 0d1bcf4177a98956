package ebdctl

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
)

// PointInTimeRow is an application's point-in-time window as its Plan's
// CaptureProgress shows it (the driver writes the window and the
// Capturing condition from the capture's reports).
type PointInTimeRow struct {
	Plan string `json:"plan"`
	// Record is the CaptureProgress's name.
	Record     string     `json:"record"`
	From       time.Time  `json:"from"`
	FromBackup string     `json:"fromBackup"`
	To         *time.Time `json:"to,omitempty"`
	// LagSeconds is how long ago To (or From, before anything was
	// captured) is.
	LagSeconds int64 `json:"lagSeconds"`
	// State is the Capturing condition's reason (Following, Starting,
	// Stalled, Gap, Refused, BaseGone).
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// captureWindows lists the CaptureProgresses in scope, by namespace and
// Plan; a user who may not list them sees none.
func captureWindows(ctx context.Context, c client.Reader, opts []client.ListOption, now time.Time) map[appID][]PointInTimeRow {
	var list driverv1alpha1.CaptureProgressList
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := map[appID][]PointInTimeRow{}
	for _, cp := range list.Items {
		w := cp.Status.Window
		if w == nil {
			continue
		}
		row := PointInTimeRow{Plan: cp.Spec.Plan, Record: cp.Name, From: w.From.Time, FromBackup: w.FromBackup}
		end := w.From.Time
		if w.To != nil {
			t := w.To.Time
			row.To, end = &t, t
		}
		row.LagSeconds = int64(max(now.Sub(end), 0).Seconds())
		if c := meta.FindStatusCondition(cp.Status.Conditions, driverv1alpha1.CaptureConditionCapturing); c != nil {
			row.State, row.Message = c.Reason, c.Message
		}
		// Keyed by Plan here; attachWindows moves them to the Plan's
		// application.
		id := appID{cp.Namespace, cp.Spec.Plan}
		out[id] = append(out[id], row)
	}
	return out
}

// attachWindows sets each row's windows: those of its Plans.
func attachWindows(rows []StatusRow, plans []backupsv1alpha1.Plan, byPlan map[appID][]PointInTimeRow) {
	appOf := map[appID]appID{}
	for _, p := range plans {
		if isEtcdRef(p.Spec.ApplicationRef) {
			appOf[appID{p.Namespace, p.Name}] = appID{p.Namespace, p.Spec.ApplicationRef.Name}
		}
	}
	for i := range rows {
		r := &rows[i]
		for planID, ws := range byPlan {
			if appOf[planID] == (appID{r.Namespace, r.Application}) {
				r.PointInTime = append(r.PointInTime, ws...)
			}
		}
	}
}

// printWindows prints, after the table, one line per captured
// application: the window a restore to a point can reach.
func printWindows(w io.Writer, rows []StatusRow, all bool) {
	for _, r := range rows {
		for _, p := range r.PointInTime {
			name := r.Application
			if all {
				name = r.Namespace + "/" + name
			}
			to := "its base Backup (nothing captured yet)"
			if p.To != nil {
				to = p.To.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(w, "point-in-time %s (Plan %s): recoverable from %s (Backup %s) to %s, %s behind, %s\n",
				name, p.Plan, p.From.UTC().Format(time.RFC3339), p.FromBackup, to,
				duration.HumanDuration(time.Duration(p.LagSeconds)*time.Second), orDash(p.State))
		}
	}
}
