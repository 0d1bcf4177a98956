package ebdctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/goodbackup"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/restoreoptions"
)

type restoreOptions struct {
	from           string
	latest         bool
	name           string
	wait           bool
	timeout        time.Duration
	safetySnapshot string
	dryRun         bool
	to             string
}

func (e *env) restoreCommand() *cobra.Command {
	var o restoreOptions
	cmd := &cobra.Command{
		Use:   "restore APP (--from BACKUP | --latest | --to POINT) [--wait]",
		Short: "Restore an etcd application in place from a Backup (creates a RestoreJob)",
		Long: `Creates a RestoreJob that restores the Etcd application APP in place from
the Backup --from names, or from its newest good Backup (--latest: Ready, not
marked unverified, not failed inspection, not marked ContentDrop, not a
restore's safety Backup). The driver first records a
safety Backup of the live data (unless --safety-snapshot=false), then replaces
the cluster. With --wait, prints each restore step as it happens and the
safety Backup's name; exits 1 if the restore fails.

With --dry-run the RestoreJob only rehearses (options dryRun: true): the
driver stages the Backup as a restore would, boots it in a throwaway etcd and
reports what a real restore would change (revision, keys, per-resource counts
now and after, namespaces coming back or going away). Nothing live is
touched: no safety Backup, no fence, no suspend, no purge. A dry run always
waits for the report; exits 1 if the rehearsal fails.

With --to POINT (an RFC 3339 time, or an etcd revision) the RestoreJob
restores the etcd as it was at that point (options pointInTime): the newest
good Backup at or before it plus the changes captured after that Backup, up
to the point. The RestoreJob names the newest good Backup at or before the
point (or the one --from names, if it is not after the point); the driver
chooses the base itself from the Backups it signed. --dry-run rehearses the
same point.`,
		Example: `  %[1]s restore etcd -n tenant-a --latest --wait
  %[1]s restore etcd -n tenant-a --from etcd-manual --wait
  %[1]s restore etcd -n tenant-a --latest --dry-run
  %[1]s restore etcd -n tenant-a --to 2026-12-06T17:00:00Z --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.to != "" && o.latest:
				return usagef("--latest does not go with --to: the newest good Backup at or before the point is named (or name one with --from)")
			case o.to == "" && (o.from == "") == !o.latest:
				return usagef("give exactly one of --from BACKUP and --latest, or --to POINT")
			}
			if o.dryRun && o.safetySnapshot != "" {
				return usagef("--safety-snapshot does not apply to --dry-run (a rehearsal changes nothing)")
			}
			return e.runRestore(cmd.Context(), args[0], o)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	cmd.Flags().StringVar(&o.from, "from", "", "name of the Backup to restore")
	cmd.Flags().BoolVar(&o.latest, "latest", false, "restore the application's newest good Backup")
	cmd.Flags().StringVar(&o.to, "to", "", "restore to a point: an RFC 3339 time (2026-12-06T17:00:00Z) or an etcd revision")
	cmd.Flags().StringVar(&o.name, "name", "", "name of the RestoreJob (default: APP-restore-<random suffix>)")
	cmd.Flags().BoolVarP(&o.wait, "wait", "w", false, "follow the RestoreJob until it ends")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Hour, "with --wait: how long to follow before giving up (0: no limit)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "rehearse: report what the restore would change, touching nothing live (waits for the report)")
	cmd.Flags().StringVar(&o.safetySnapshot, "safety-snapshot", "", "true or false: take a safety Backup first (default: the driver's, true when the cluster is Available)")
	return cmd
}

func (e *env) runRestore(ctx context.Context, app string, o restoreOptions) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	var point *restorePoint
	if o.to != "" {
		p, err := parsePoint(o.to, e.now())
		if err != nil {
			return err
		}
		point = &p
	}
	var backup *backupsv1alpha1.Backup
	switch {
	case o.latest:
		if backup, err = latestGood(ctx, c, ns, app); err != nil {
			return err
		}
	case o.from == "":
		if backup, err = baseFor(ctx, c, ns, app, *point); err != nil {
			return err
		}
	default:
		if backup, err = getBackup(ctx, c, ns, o.from); err != nil {
			return err
		}
		if !isApp(backup.Spec.ApplicationRef, app) {
			return usagef("Backup %s/%s is of %s %s, not of the Etcd application %s", ns, o.from,
				oneLine(backup.Spec.ApplicationRef.Kind), oneLine(backup.Spec.ApplicationRef.Name), app)
		}
		if point != nil {
			if err := checkFrom(backup, *point); err != nil {
				return err
			}
		}
	}
	job := &backupsv1alpha1.RestoreJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.name},
		Spec:       backupsv1alpha1.RestoreJobSpec{BackupRef: backupsv1alpha1.LocalObjectReference{Name: backup.Name}},
	}
	if o.name == "" {
		job.GenerateName = app + "-restore-"
		if o.dryRun {
			job.GenerateName = app + "-rehearsal-"
		}
	}
	opts := restoreoptions.Options{DryRun: o.dryRun}
	switch o.safetySnapshot {
	case "":
	case "true", "false":
		take := o.safetySnapshot == "true"
		opts.SafetySnapshot = &take
	default:
		return usagef("--safety-snapshot must be true or false, not %q", o.safetySnapshot)
	}
	to := ""
	if point != nil {
		opts.PointInTime = point.text
		to = " to " + point.String()
	}
	if opts != (restoreoptions.Options{}) {
		job.Spec.Options = opts.Raw()
	}
	if err := c.Create(ctx, job); err != nil {
		return fmt.Errorf("create RestoreJob: %w", err)
	}
	what := "restorejob"
	if o.dryRun {
		what = "rehearsal restorejob"
	}
	fmt.Fprintf(e.streams.Out, "%s %s/%s created: application %s%s from Backup %s (taken %s)\n",
		what, ns, job.Name, app, to, backup.Name, backup.Spec.TakenAt.UTC().Format(time.RFC3339))
	if !o.wait && !o.dryRun {
		return nil
	}
	terminal, err := e.isTerminal()
	if err != nil {
		return err
	}
	return e.followRestore(ctx, c, job, app, o.timeout, newProgress(e.streams.Out, terminal, e.now))
}

// latestGood is app's newest Backup a restore should start from: the
// newest good one (goodbackup.Good, as the driver shows it verified) that
// is not a safety Backup.
func latestGood(ctx context.Context, c client.Reader, ns, app string) (*backupsv1alpha1.Backup, error) {
	var list backupsv1alpha1.BackupList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list Backups: %w", err)
	}
	best := goodbackup.Newest(list.Items, func(b *backupsv1alpha1.Backup) bool { return restorable(b, app) })
	if best == nil {
		return nil, fmt.Errorf("application %s/%s has no Ready Backup to restore from (Backups marked unverified, failed inspection or content drop, and safety Backups are not picked; name one with --from)", ns, app)
	}
	return best, nil
}

// followRestore prints each step of job until it ends: every change of
// its Ready reason or message, every other condition as it appears or
// changes, and the safety Backup once it exists.
func (e *env) followRestore(ctx context.Context, c client.WithWatch, job *backupsv1alpha1.RestoreJob, app string, timeout time.Duration, p *progress) error {
	ctx, cancel := waitContext(ctx, timeout)
	defer cancel()
	updates := make(chan update, 16)
	go watchInto(ctx, c, "job", &backupsv1alpha1.RestoreJobList{}, []client.ListOption{
		client.InNamespace(job.Namespace), client.MatchingFields{"metadata.name": job.Name}}, updates)
	go watchInto(ctx, c, "safety", &backupsv1alpha1.BackupList{}, []client.ListOption{
		client.InNamespace(job.Namespace), client.MatchingLabels{backupsv1alpha1.SafetyBackupLabel: job.Name}}, updates)

	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	defer p.done()
	var (
		ready      conditionView
		milestones = map[string]conditionView{}
		safety     string
	)
	p.setStatus("waiting for the driver to take the RestoreJob")
	for {
		select {
		case <-ctx.Done():
			p.done()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return timeoutError("RestoreJob", job.Namespace, job.Name, timeout)
			}
			return ctx.Err()
		case <-ticker.C:
			p.tick()
		case u := <-updates:
			if u.err != nil {
				if u.from == "safety" {
					p.line("(Backups are not watchable with your credentials: %v)", u.err)
					continue
				}
				return fmt.Errorf("watch RestoreJob %s/%s: %w", job.Namespace, job.Name, u.err)
			}
			switch obj := u.obj.(type) {
			case *backupsv1alpha1.Backup:
				// Only the safety Backup of this very job (a re-created
				// job of the same name has another UID).
				uid := obj.Labels[backupsv1alpha1.RestoreJobUIDLabel]
				if !u.deleted && safety == "" && (uid == "" || uid == string(job.UID)) {
					safety = obj.Name
					p.line("safety Backup %s recorded (restore from it to go back to the data as it was before this restore)", safety)
				}
			case *backupsv1alpha1.RestoreJob:
				if u.deleted {
					return fmt.Errorf("RestoreJob %s/%s was deleted", job.Namespace, job.Name)
				}
				for _, cond := range obj.Status.Conditions {
					v := viewCondition(cond)
					if cond.Type == backupsv1alpha1.ConditionReady {
						if v.reason != ready.reason || v.message != ready.message {
							p.line("%s %s: %s", p.phase(string(phaseOrPending(obj.Status.Phase))), v.reason, v.message)
							p.setStatus(fmt.Sprintf("%s: %s", phaseOrPending(obj.Status.Phase), v.reason))
						}
						ready = v
						continue
					}
					if prev, seen := milestones[cond.Type]; !seen || prev != v {
						p.line("  %s %s (%s): %s", cond.Type, p.phase(v.status), v.reason, v.message)
					}
					milestones[cond.Type] = v
				}
				if obj.Status.Phase.IsTerminal() {
					if safety == "" {
						// The Backups' stream may lag the job's.
						safety = safetyBackupOf(ctx, c, job)
						if safety != "" {
							p.line("safety Backup %s recorded", safety)
						}
					}
					p.done()
					return e.restoreResult(obj, app, safety)
				}
			}
		}
	}
}

// safetyBackupOf names the safety Backup job recorded, or "".
func safetyBackupOf(ctx context.Context, c client.Reader, job *backupsv1alpha1.RestoreJob) string {
	var list backupsv1alpha1.BackupList
	if err := c.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingLabels{backupsv1alpha1.SafetyBackupLabel: job.Name}); err != nil {
		return ""
	}
	for _, b := range list.Items {
		if uid := b.Labels[backupsv1alpha1.RestoreJobUIDLabel]; uid == "" || uid == string(job.UID) {
			return b.Name
		}
	}
	return ""
}

func phaseOrPending(p backupsv1alpha1.RestoreJobPhase) backupsv1alpha1.RestoreJobPhase {
	if p == "" {
		return backupsv1alpha1.RestoreJobPhasePending
	}
	return p
}

type conditionView struct {
	status, reason, message string
}

func viewCondition(c metav1.Condition) conditionView {
	return conditionView{status: string(c.Status), reason: c.Reason, message: oneLine(c.Message)}
}

func (e *env) restoreResult(job *backupsv1alpha1.RestoreJob, app, safety string) error {
	if restoreoptions.IsDryRun(job) {
		return e.rehearsalResult(job)
	}
	out := e.streams.Out
	to := ""
	if p := pointOf(job); p != "" {
		to = " to " + p
	}
	if job.Status.Phase == backupsv1alpha1.RestoreJobPhaseSucceeded {
		fmt.Fprintf(out, "RestoreJob %s/%s%s succeeded: %s\n", job.Namespace, job.Name, to, oneLine(job.Status.Message))
	} else {
		fmt.Fprintf(out, "RestoreJob %s/%s%s failed: %s\n", job.Namespace, job.Name, to, oneLine(job.Status.Message))
	}
	switch c := meta.FindStatusCondition(job.Status.Conditions, backupsv1alpha1.RestoreConditionSafetyBackup); {
	case safety != "":
		fmt.Fprintf(out, "safety Backup: %s (to undo: %s restore %s -n %s --from %s)\n", safety, e.name, app, job.Namespace, safety)
	case c != nil:
		fmt.Fprintf(out, "safety Backup: %s (%s)\n", c.Reason, oneLine(c.Message))
	}
	if job.Status.Phase != backupsv1alpha1.RestoreJobPhaseSucceeded {
		return silentFailure
	}
	return nil
}
