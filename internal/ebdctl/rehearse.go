package ebdctl

import (
	"fmt"
	"io"
	"strings"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/rehearsalrecord"
)

// rehearsalResult prints how a dry-run RestoreJob ended (its status) and
// its report: the driver's record annotation (rehearsalrecord), read
// without its key, for display only.
func (e *env) rehearsalResult(job *backupsv1alpha1.RestoreJob) error {
	ok := job.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded
	outcome := "succeeded"
	if !ok {
		outcome = "failed"
	}
	point := pointOf(job)
	to := ""
	if point != "" {
		to = " to " + point
	}
	fmt.Fprintf(e.streams.Out, "Rehearsal %s/%s of Backup %s%s %s: %s\n", oneLine(job.Namespace), oneLine(job.Name),
		oneLine(job.Spec.BackupRef.Name), to, outcome, oneLine(job.Status.Message))
	var report *driverv1alpha1.RehearsalReport
	if rec, ok := rehearsalrecord.Peek(job); ok {
		report = rec.Report
	}
	if err := printRehearsal(e.streams.Out, report, point); err != nil {
		return err
	}
	if !ok {
		return silentFailure
	}
	return nil
}

// printRehearsal writes what a real restore (to point, if not "") would
// change.
func printRehearsal(w io.Writer, r *driverv1alpha1.RehearsalReport, point string) error {
	if r == nil {
		_, err := fmt.Fprintln(w, "No rehearsal report.")
		return err
	}
	before := func(n int64) string {
		if n == 0 {
			return "unknown"
		}
		return fmt.Sprint(n)
	}
	if point != "" {
		fmt.Fprintf(w, "A restore to %s would change:\n", point)
	} else {
		fmt.Fprintln(w, "A restore of this Backup would change:")
	}
	fmt.Fprintf(w, "  revision:  %s now → %d after\n", before(r.RevisionBefore), r.RevisionAfter)
	fmt.Fprintf(w, "  keys:      %s now → %d after\n", before(r.KeysBefore), r.KeysAfter)
	if len(r.Resources) == 0 {
		fmt.Fprintln(w, "  no resource changes its count")
	} else {
		t := &table{w: w, headers: []string{"  RESOURCE", "NOW", "AFTER", "CHANGE"}}
		for _, c := range r.Resources {
			t.add("  "+oneLine(c.Name), fmt.Sprint(c.Before), fmt.Sprint(c.After), signed(c.After-c.Before))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.NamespacesReturning) > 0 {
		fmt.Fprintf(w, "  namespaces coming back: %s\n", oneLine(strings.Join(r.NamespacesReturning, ", ")))
	}
	if len(r.NamespacesVanishing) > 0 {
		fmt.Fprintf(w, "  namespaces going away: %s\n", oneLine(strings.Join(r.NamespacesVanishing, ", ")))
	}
	if r.Truncated {
		fmt.Fprintln(w, "  (lists are cut to their largest entries)")
	}
	_, err := fmt.Fprintln(w, "Nothing live was changed.")
	return err
}
