package ebdctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

type backupOptions struct {
	class   string
	name    string
	wait    bool
	timeout time.Duration
}

func (e *env) backupCommand() *cobra.Command {
	var o backupOptions
	cmd := &cobra.Command{
		Use:   "backup APP [--wait]",
		Short: "Back up an etcd application now (creates a BackupJob)",
		Long: `Creates a BackupJob for the Etcd application APP in the namespace. The
BackupClass is --class, or the one the application's Plans use, or the only
BackupClass that binds Etcd applications. With --wait, follows the job: every
change of phase and step, the EtcdSnapshot and its size when known, and the
Backup it produced; exits 1 if the job fails.`,
		Example: `  %[1]s backup etcd -n tenant-a --wait
  %[1]s backup etcd -n tenant-a --class etcd-default --name before-upgrade`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.runBackup(cmd.Context(), args[0], o)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	cmd.Flags().StringVar(&o.class, "class", "", "BackupClass to use (default: the application's Plans' class, or the only Etcd class)")
	cmd.Flags().StringVar(&o.name, "name", "", "name of the BackupJob (default: APP-<random suffix>)")
	cmd.Flags().BoolVarP(&o.wait, "wait", "w", false, "follow the BackupJob until it ends")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Hour, "with --wait: how long to follow before giving up (0: no limit)")
	return cmd
}

func (e *env) runBackup(ctx context.Context, app string, o backupOptions) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	class := o.class
	if class == "" {
		if class, err = defaultClass(ctx, c, ns, app); err != nil {
			return err
		}
	}
	job := &backupsv1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.name},
		Spec: backupsv1alpha1.BackupJobSpec{
			ApplicationRef:  etcdApp(app),
			BackupClassName: class,
		},
	}
	if o.name == "" {
		job.GenerateName = app + "-"
	}
	if err := c.Create(ctx, job); err != nil {
		return fmt.Errorf("create BackupJob: %w", err)
	}
	fmt.Fprintf(e.streams.Out, "backupjob %s/%s created (application %s, class %s)\n", ns, job.Name, app, class)
	if !o.wait {
		return nil
	}
	terminal, err := e.isTerminal()
	if err != nil {
		return err
	}
	return e.followBackup(ctx, c, job, o.timeout, newProgress(e.streams.Out, terminal, e.now))
}

func etcdApp(name string) backupsv1alpha1.TypedLocalObjectReference {
	group := appsv1alpha1.GroupVersion.Group
	return backupsv1alpha1.TypedLocalObjectReference{APIGroup: &group, Kind: appsv1alpha1.EtcdKind, Name: name}
}

// isApp reports whether ref names the Etcd application app.
func isApp(ref backupsv1alpha1.TypedLocalObjectReference, app string) bool {
	return ref.Name == app && isEtcdRef(ref)
}

func isEtcdRef(ref backupsv1alpha1.TypedLocalObjectReference) bool {
	group := ref.APIGroupOrEmpty()
	return ref.Kind == appsv1alpha1.EtcdKind && (group == "" || group == appsv1alpha1.GroupVersion.Group)
}

// defaultClass picks the BackupClass for an ad hoc backup of app: the one
// its Plans use, else the only class binding Etcd applications.
func defaultClass(ctx context.Context, c client.Reader, ns, app string) (string, error) {
	var plans backupsv1alpha1.PlanList
	if err := c.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("list Plans: %w", err)
	}
	var fromPlans []string
	for _, p := range plans.Items {
		if isApp(p.Spec.ApplicationRef, app) && !slices.Contains(fromPlans, p.Spec.BackupClassName) {
			fromPlans = append(fromPlans, p.Spec.BackupClassName)
		}
	}
	if len(fromPlans) == 1 {
		return fromPlans[0], nil
	}
	if len(fromPlans) > 1 {
		sort.Strings(fromPlans)
		return "", usagef("the Plans of %s use several BackupClasses (%s); pass --class", app, strings.Join(fromPlans, ", "))
	}
	var classes backupsv1alpha1.BackupClassList
	if err := c.List(ctx, &classes); err != nil {
		return "", fmt.Errorf("no Plan of %s names a BackupClass, and listing BackupClasses failed (%w); pass --class", app, err)
	}
	var etcd []string
	for _, bc := range classes.Items {
		for _, s := range bc.Spec.Strategies {
			group := s.Application.APIGroup
			if s.Application.Kind == appsv1alpha1.EtcdKind && (group == nil || *group == "" || *group == appsv1alpha1.GroupVersion.Group) {
				etcd = append(etcd, bc.Name)
				break
			}
		}
	}
	switch len(etcd) {
	case 1:
		return etcd[0], nil
	case 0:
		return "", usagef("no BackupClass binds Etcd applications; pass --class")
	default:
		sort.Strings(etcd)
		return "", usagef("several BackupClasses bind Etcd applications (%s); pass --class", strings.Join(etcd, ", "))
	}
}

// followBackup prints job's progress until it ends.
func (e *env) followBackup(ctx context.Context, c client.WithWatch, job *backupsv1alpha1.BackupJob, timeout time.Duration, p *progress) error {
	ctx, cancel := waitContext(ctx, timeout)
	defer cancel()
	updates := make(chan update, 16)
	go watchInto(ctx, c, "job", &backupsv1alpha1.BackupJobList{}, []client.ListOption{
		client.InNamespace(job.Namespace), client.MatchingFields{"metadata.name": job.Name}}, updates)
	go watchInto(ctx, c, "snapshots", &etcdv1alpha2.EtcdSnapshotList{}, []client.ListOption{
		client.InNamespace(job.Namespace), client.MatchingLabels{backupsv1alpha1.OwningJobUIDLabel: string(job.UID)}}, updates)

	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	defer p.done()
	var last jobView
	snapshots := map[string]snapshotView{}
	p.setStatus("waiting for the driver to take the BackupJob")
	for {
		select {
		case <-ctx.Done():
			p.done()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return timeoutError("BackupJob", job.Namespace, job.Name, timeout)
			}
			return ctx.Err()
		case <-ticker.C:
			p.tick()
		case u := <-updates:
			if u.err != nil {
				if u.from == "snapshots" {
					p.line("(EtcdSnapshots are not readable with your credentials: %v)", u.err)
					continue
				}
				return fmt.Errorf("watch BackupJob %s/%s: %w", job.Namespace, job.Name, u.err)
			}
			switch obj := u.obj.(type) {
			case *backupsv1alpha1.BackupJob:
				if u.deleted {
					return fmt.Errorf("BackupJob %s/%s was deleted", job.Namespace, job.Name)
				}
				v := viewJob(obj)
				if v != last && (v.reason != "" || v.message != "") {
					p.line("%s %s: %s", p.phase(string(v.phase)), v.reason, v.message)
					last = v
					p.setStatus(fmt.Sprintf("%s: %s", v.phase, v.reason))
				}
				if v.phase.IsTerminal() {
					// The snapshot's stream may lag the job's: show
					// where the snapshot ended before the result.
					var snaps etcdv1alpha2.EtcdSnapshotList
					if err := c.List(ctx, &snaps, client.InNamespace(job.Namespace), client.MatchingLabels{backupsv1alpha1.OwningJobUIDLabel: string(job.UID)}); err == nil {
						for i := range snaps.Items {
							showSnapshot(p, snapshots, &snaps.Items[i])
						}
					}
					p.done()
					return e.backupResult(ctx, c, obj)
				}
			case *etcdv1alpha2.EtcdSnapshot:
				if !u.deleted {
					showSnapshot(p, snapshots, obj)
					if last.reason == "" {
						// A job that went straight to its snapshot
						// writes no status until its end: the
						// snapshot is its progress.
						p.setStatus(fmt.Sprintf("%s: EtcdSnapshot %s", backupsv1alpha1.BackupJobPhaseRunning, orDash(string(obj.Status.Phase))))
					}
				}
			}
		}
	}
}

// showSnapshot prints s's phase (and size once known) if it changed since
// last shown.
func showSnapshot(p *progress, shown map[string]snapshotView, s *etcdv1alpha2.EtcdSnapshot) {
	v := viewSnapshot(s)
	if v == shown[s.Name] {
		return
	}
	shown[s.Name] = v
	size := ""
	if v.size > 0 {
		size = fmt.Sprintf(", %s (%d bytes)", humanBytes(v.size), v.size)
	}
	p.line("EtcdSnapshot %s: %s%s", s.Name, p.phase(orDash(string(v.phase))), size)
}

type jobView struct {
	phase           backupsv1alpha1.BackupJobPhase
	reason, message string
}

func viewJob(j *backupsv1alpha1.BackupJob) jobView {
	v := jobView{phase: j.Status.Phase, message: oneLine(j.Status.Message)}
	if c := meta.FindStatusCondition(j.Status.Conditions, backupsv1alpha1.ConditionReady); c != nil {
		v.reason = c.Reason
		if v.message == "" {
			v.message = oneLine(c.Message)
		}
	}
	if v.phase == "" {
		v.phase = backupsv1alpha1.BackupJobPhasePending
	}
	return v
}

type snapshotView struct {
	phase etcdv1alpha2.SnapshotPhase
	size  int64
}

func viewSnapshot(s *etcdv1alpha2.EtcdSnapshot) snapshotView {
	v := snapshotView{phase: s.Status.Phase}
	if s.Status.Artifact != nil {
		v.size = s.Status.Artifact.SizeBytes
	}
	return v
}

// backupResult reports how a finished job ended: the Backup it made, or
// why it failed.
func (e *env) backupResult(ctx context.Context, c client.Reader, job *backupsv1alpha1.BackupJob) error {
	if job.Status.Phase != backupsv1alpha1.BackupJobPhaseSucceeded {
		fmt.Fprintf(e.streams.Out, "BackupJob %s/%s failed: %s\n", job.Namespace, job.Name, oneLine(job.Status.Message))
		return silentFailure
	}
	if job.Status.BackupRef == nil {
		fmt.Fprintf(e.streams.Out, "BackupJob %s/%s succeeded\n", job.Namespace, job.Name)
		return nil
	}
	var b backupsv1alpha1.Backup
	if err := c.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Status.BackupRef.Name}, &b); err != nil {
		fmt.Fprintf(e.streams.Out, "Backup %s (not readable: %v)\n", job.Status.BackupRef.Name, err)
		return nil
	}
	size, uri := int64(0), ""
	if b.Status.Artifact != nil {
		size, uri = b.Status.Artifact.SizeBytes, b.Status.Artifact.URI
	}
	fmt.Fprintf(e.streams.Out, "Backup %s: %s, taken %s, %s\n", b.Name, humanBytes(size), b.Spec.TakenAt.UTC().Format(time.RFC3339), uri)
	return nil
}
