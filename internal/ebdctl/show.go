package ebdctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

func (e *env) showCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show BACKUP",
		Short: "Show what a Backup's snapshot holds (its manifest) and its last rehearsal",
		Long: `Shows the manifest the driver recorded for the Backup after inspecting its
stored snapshot: revision, compaction mark, keys, database size and, per
Kubernetes keyspace, the objects per resource and the largest namespaces. Also
shows the Backup's Inspected and ContentDrop conditions, whether retention
holds it for a content drop, and its last rehearsal (a dry-run restore).
A Backup without a manifest is shown with the reason (its Inspected
condition) and the command exits 1.`,
		Example: `  %[1]s show etcd-20260504-0200 -n tenant-a
  %[1]s show etcd-manual -n tenant-a -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStructuredOutput(output); err != nil {
				return err
			}
			return e.runShow(cmd.Context(), args[0], output)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml")
	return cmd
}

// ShowResult is a Backup as show presents it; -o json and -o yaml print it.
type ShowResult struct {
	Namespace   string     `json:"namespace"`
	Backup      string     `json:"backup"`
	Application string     `json:"application"`
	Phase       string     `json:"phase"`
	TakenAt     *time.Time `json:"takenAt,omitempty"`
	// Manifest is the Backup's status.underlyingResources.manifest; absent when it has none.
	Manifest    *driverv1alpha1.BackupManifest `json:"manifest,omitempty"`
	Inspected   *ConditionSummary              `json:"inspected,omitempty"`
	ContentDrop *ConditionSummary              `json:"contentDrop,omitempty"`
	// HeldForContentDrop names the Backup whose content drop makes
	// retention keep this one (the hold annotation).
	HeldForContentDrop string                          `json:"heldForContentDrop,omitempty"`
	LastRehearsal      *driverv1alpha1.RehearsalRecord `json:"lastRehearsal,omitempty"`
}

// ConditionSummary is one condition of an object, as the commands show it.
type ConditionSummary struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

func conditionSummary(b *backupsv1alpha1.Backup, typ string) *ConditionSummary {
	c := meta.FindStatusCondition(b.Status.Conditions, typ)
	if c == nil {
		return nil
	}
	return &ConditionSummary{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
}

func showResult(b *backupsv1alpha1.Backup) *ShowResult {
	r := &ShowResult{
		Namespace: b.Namespace, Backup: b.Name, Application: b.Spec.ApplicationRef.Name, Phase: string(b.Status.Phase),
		Manifest:           artifact.Manifest(b),
		Inspected:          conditionSummary(b, backupsv1alpha1.BackupConditionInspected),
		ContentDrop:        conditionSummary(b, backupsv1alpha1.BackupConditionContentDrop),
		HeldForContentDrop: b.Annotations[driverv1alpha1.ContentDropHoldAnnotation],
		LastRehearsal:      artifact.LastRehearsal(b),
	}
	if !b.Spec.TakenAt.IsZero() {
		t := b.Spec.TakenAt.Time
		r.TakenAt = &t
	}
	return r
}

func (e *env) runShow(ctx context.Context, name, output string) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	b, err := getBackup(ctx, c, ns, name)
	if err != nil {
		return err
	}
	res := showResult(b)
	if output == outputJSON || output == outputYAML {
		if err := writeStructured(e.streams.Out, output, res); err != nil {
			return err
		}
	} else if err := printShow(e.streams.Out, res, e.now()); err != nil {
		return err
	}
	if res.Manifest == nil {
		// What show is for is missing; the reason is on the output.
		return silentFailure
	}
	return nil
}

// printShow writes res for a person. Every string in it a tenant could
// have written (names, phase, conditions, the manifest's names) goes
// through oneLine, the one sanitiser of ebdctl's output.
func printShow(w io.Writer, r *ShowResult, now time.Time) error {
	var b strings.Builder
	taken := "-"
	if r.TakenAt != nil {
		taken = fmt.Sprintf("%s (%s ago)", r.TakenAt.UTC().Format(time.RFC3339), age(now, *r.TakenAt))
	}
	fmt.Fprintf(&b, "Backup %s/%s of application %s, taken %s, %s\n", oneLine(r.Namespace), oneLine(r.Backup),
		orDash(oneLine(r.Application)), taken, orDash(oneLine(r.Phase)))
	fmt.Fprintf(&b, "  Inspected:    %s\n", conditionLine(r.Inspected))
	fmt.Fprintf(&b, "  ContentDrop:  %s\n", conditionLine(r.ContentDrop))
	if r.HeldForContentDrop != "" {
		fmt.Fprintf(&b, "  Held:         retention keeps this Backup because Backup %s dropped content (remove the annotation %s to release it)\n",
			oneLine(r.HeldForContentDrop), driverv1alpha1.ContentDropHoldAnnotation)
	}
	fmt.Fprintf(&b, "  Rehearsal:    %s\n", rehearsalLine(r.LastRehearsal, now))
	m := r.Manifest
	if m == nil {
		fmt.Fprintf(&b, "No manifest: %s\n", noManifestReason(r.Inspected))
		_, err := io.WriteString(w, b.String())
		return err
	}
	compacted := "none"
	if m.CompactedRevision > 0 {
		compacted = fmt.Sprint(m.CompactedRevision)
	}
	fmt.Fprintf(&b, "Manifest (inspected %s):\n", m.InspectedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "  Revision:     %d (compacted at %s)\n", m.Revision, compacted)
	fmt.Fprintf(&b, "  Keys:         %d\n", m.Keys)
	fmt.Fprintf(&b, "  Database:     %s (%d bytes)\n", humanBytes(m.DBSizeBytes), m.DBSizeBytes)
	if m.Truncated {
		b.WriteString("  (lists are cut to their largest entries)\n")
	}
	if len(m.Keyspaces) == 0 {
		b.WriteString("No Kubernetes keyspace in the snapshot.\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for _, ks := range m.Keyspaces {
		if err := printKeyspace(w, ks); err != nil {
			return err
		}
	}
	return nil
}

func printKeyspace(w io.Writer, ks driverv1alpha1.KeyspaceManifest) error {
	fmt.Fprintf(w, "\nKeyspace %s: %d objects, %d namespaces\n", oneLine(ks.Prefix), ks.Objects, ks.Namespaces)
	if len(ks.Resources) > 0 {
		t := &table{w: w, headers: []string{"  RESOURCE", "OBJECTS"}}
		for _, r := range ks.Resources {
			t.add("  "+oneLine(r.Name), fmt.Sprint(r.Count))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(ks.TopNamespaces) > 0 {
		t := &table{w: w, headers: []string{"  NAMESPACE", "OBJECTS"}}
		for _, n := range ks.TopNamespaces {
			t.add("  "+oneLine(n.Name), fmt.Sprint(n.Count))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(ks.NamespaceNames) > 0 {
		_, err := fmt.Fprintf(w, "  namespaces: %s\n", oneLine(strings.Join(ks.NamespaceNames, ", ")))
		return err
	}
	return nil
}

// noManifestReason says why a Backup has no manifest: its Inspected
// condition's message, or that it was not inspected yet. show and diff
// both say it.
func noManifestReason(inspected *ConditionSummary) string {
	if inspected != nil && inspected.Message != "" {
		return oneLine(inspected.Message)
	}
	return "the driver has not inspected it"
}

func conditionLine(c *ConditionSummary) string {
	if c == nil {
		return "-"
	}
	s := oneLine(c.Status)
	if c.Reason != "" {
		s += " (" + oneLine(c.Reason) + ")"
	}
	if c.Message != "" {
		s += ": " + oneLine(c.Message)
	}
	return s
}

// rehearsalLine says how a rehearsal ended, for a person.
func rehearsalLine(r *driverv1alpha1.RehearsalRecord, now time.Time) string {
	if r == nil {
		return "never rehearsed"
	}
	outcome := "succeeded"
	if !r.Succeeded {
		outcome = "FAILED"
	}
	s := fmt.Sprintf("%s %s ago (RestoreJob %s", outcome, age(now, r.CompletedAt.Time), oneLine(r.RestoreJob))
	if r.Backup != "" {
		s += ", Backup " + oneLine(r.Backup)
	}
	if r.PointInTime != "" {
		s += ", to " + oneLine(r.PointInTime)
	}
	s += ")"
	if r.Message != "" {
		s += ": " + oneLine(r.Message)
	}
	return s
}
