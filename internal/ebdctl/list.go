package ebdctl

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// listOptions are the flags list and status share.
type listOptions struct {
	allNamespaces bool
	output        string
}

func (o *listOptions) bind(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace, not only the current one")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json, yaml or wide")
}

func (e *env) listCommand() *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   "list [APP]",
		Short: "List the Backups of etcd applications, newest first",
		Long: `Lists Etcd Backups per application, newest first: age (since the data was
taken), size, whether the driver verified the Backup's provenance (the
Backup's Verified condition; - until the driver has judged it) and what
deleting it does to the stored snapshot (its recorded deletion policy).`,
		Example: `  %[1]s list -n tenant-a
  %[1]s list -A -o wide
  %[1]s list etcd -n tenant-a -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			app := ""
			if len(args) == 1 {
				app = args[0]
			}
			return e.runList(cmd.Context(), app, o)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	o.bind(cmd)
	return cmd
}

// BackupRow is one Backup as list shows it; -o json and -o yaml print a
// list of these.
type BackupRow struct {
	Namespace      string     `json:"namespace"`
	Application    string     `json:"application"`
	Name           string     `json:"name"`
	Phase          string     `json:"phase"`
	TakenAt        *time.Time `json:"takenAt,omitempty"`
	AgeSeconds     int64      `json:"ageSeconds"`
	SizeBytes      int64      `json:"sizeBytes"`
	Verified       *Verified  `json:"verified,omitempty"`
	DeletionPolicy string     `json:"deletionPolicy"`
	Plan           string     `json:"plan,omitempty"`
	SafetyFor      string     `json:"safetyForRestore,omitempty"`
	URI            string     `json:"uri,omitempty"`
	Checksum       string     `json:"checksum,omitempty"`
}

// Verified is a Backup's Verified condition.
type Verified struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// RowList is what -o json and -o yaml print.
type RowList[T any] struct {
	Items []T `json:"items"`
}

func (e *env) runList(ctx context.Context, app string, o listOptions) error {
	c, err := e.newClient()
	if err != nil {
		return err
	}
	opts, err := e.scope(o.allNamespaces)
	if err != nil {
		return err
	}
	var list backupsv1alpha1.BackupList
	if err := c.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("list Backups: %w", err)
	}
	now := e.now()
	rows := backupRows(list.Items, app, now)
	if o.output == outputJSON || o.output == outputYAML {
		return writeStructured(e.streams.Out, o.output, RowList[BackupRow]{Items: rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.streams.ErrOut, "No Etcd Backups found.")
		return nil
	}
	colour, err := e.isTerminal()
	if err != nil {
		return err
	}
	t := &table{w: e.streams.Out, colour: colour,
		headers: []string{"APPLICATION", "BACKUP", "PHASE", "AGE", "SIZE", "VERIFIED", "DELETION-POLICY"}}
	if o.output == outputWide {
		t.headers = append(t.headers, "TAKEN", "PLAN", "SAFETY-FOR", "VERIFIED-REASON", "URI")
	}
	if o.allNamespaces {
		t.headers = append([]string{"NAMESPACE"}, t.headers...)
	}
	for _, r := range rows {
		verified, reason, paintWith := "-", "-", ""
		if r.Verified != nil {
			verified, reason = r.Verified.Status, orDash(r.Verified.Reason)
			paintWith = map[string]string{"True": colourGreen, "False": colourRed}[verified]
		}
		taken := "-"
		if r.TakenAt != nil {
			taken = r.TakenAt.UTC().Format(time.RFC3339)
		}
		cells := []string{r.Application, r.Name, orDash(r.Phase), age(now, timeOr(r.TakenAt)), humanBytes(r.SizeBytes), verified, r.DeletionPolicy}
		if o.output == outputWide {
			cells = append(cells, taken, orDash(r.Plan), orDash(r.SafetyFor), reason, orDash(r.URI))
		}
		col := 5
		if o.allNamespaces {
			cells = append([]string{r.Namespace}, cells...)
			col++
		}
		added := t.add(cells...)
		added.colourCol, added.colour = col, paintWith
	}
	return t.flush()
}

// scope is the namespace selection of -A or -n.
func (e *env) scope(all bool) ([]client.ListOption, error) {
	if all {
		return nil, nil
	}
	ns, err := e.namespace()
	if err != nil {
		return nil, err
	}
	return []client.ListOption{client.InNamespace(ns)}, nil
}

// backupRows turns the Etcd Backups among items (of app, when given) into
// rows, by namespace and application, newest first.
func backupRows(items []backupsv1alpha1.Backup, app string, now time.Time) []BackupRow {
	rows := []BackupRow{}
	for i := range items {
		b := &items[i]
		if !isEtcdRef(b.Spec.ApplicationRef) || (app != "" && b.Spec.ApplicationRef.Name != app) {
			continue
		}
		r := BackupRow{
			Namespace:      b.Namespace,
			Application:    b.Spec.ApplicationRef.Name,
			Name:           b.Name,
			Phase:          string(b.Status.Phase),
			DeletionPolicy: string(artifact.RecordedOf(b).DeletionPolicy),
			SafetyFor:      b.Labels[backupsv1alpha1.SafetyBackupLabel],
		}
		if b.DeletionTimestamp != nil {
			r.Phase = "Deleting"
		}
		if !b.Spec.TakenAt.IsZero() {
			t := b.Spec.TakenAt.Time
			r.TakenAt = &t
			r.AgeSeconds = int64(now.Sub(t).Seconds())
		}
		if b.Spec.PlanRef != nil {
			r.Plan = b.Spec.PlanRef.Name
		}
		if a := b.Status.Artifact; a != nil {
			r.SizeBytes, r.URI, r.Checksum = a.SizeBytes, a.URI, a.Checksum
		}
		if c := verifiedOf(b); c != nil {
			r.Verified = &Verified{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Application != b.Application {
			return a.Application < b.Application
		}
		return timeOr(a.TakenAt).After(timeOr(b.TakenAt))
	})
	return rows
}

func timeOr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
