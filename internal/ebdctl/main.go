// Package ebdctl holds the command line of the etcd-backup-driver, built
// both as `ebdctl` and as the kubectl plugin `kubectl etcd-backup`
// (binary kubectl-etcd_backup): backup, restore (and its rehearsal), list,
// status, verify, show and diff against a cluster, and migrate-legacy-values
// offline. It talks to the API server as the user (the usual kubectl flags and kubeconfig), never to the
// driver.
package ebdctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/version"
)

// Streams are what a command reads and writes.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Exit codes.
const (
	// ExitOK: the command did what was asked (a waited-for job Succeeded,
	// a verified Backup matched).
	ExitOK = 0
	// ExitFailed: it could not, or what it checked is wrong (a job Failed,
	// a checksum mismatch, an API error).
	ExitFailed = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
)

// usageError marks a wrong command line (exit code 2).
type usageError struct{ error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// silentFailure is an outcome already reported on the output (a Failed
// job, a mismatch): exit 1 with no further message.
var silentFailure = errors.New("failed")

// env is what every subcommand shares: streams, cluster access, the name
// the program was called by, and the clock.
type env struct {
	name     string
	streams  Streams
	kube     *genericclioptions.ConfigFlags
	terminal string
	now      func() time.Time
	// newClient builds the client; tests may replace it.
	newClient func() (client.WithWatch, error)
}

// Main runs args as the program called name ("ebdctl" or
// "kubectl etcd-backup") and returns the exit code.
func Main(name string, args []string, s Streams) int {
	e := &env{name: name, streams: s, kube: newConfigFlags(), now: time.Now}
	e.newClient = e.defaultClient
	root := e.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	var usage usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, silentFailure):
		return ExitFailed
	case errors.As(err, &usage) || isCobraUsageError(err):
		fmt.Fprintf(s.ErrOut, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return ExitUsage
	default:
		fmt.Fprintf(s.ErrOut, "%s: %v\n", name, err)
		return ExitFailed
	}
}

func (e *env) rootCommand() *cobra.Command {
	root := &cobra.Command{
		// cobra names a command by the first word of Use; as a kubectl
		// plugin the program is shown as "kubectl etcd-backup".
		Use:         e.name[strings.LastIndex(e.name, " ")+1:],
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: e.name},
		Short:       "Back up, restore and check tenants' etcd through the etcd-backup-driver",
		// --version prints the release, commit and commit date.
		Version: version.String(e.name),
		Long: `Back up, restore and check the etcd applications (apps.cozystack.io Etcd)
the etcd-backup-driver protects. Commands create and read backups.cozystack.io
objects as you, with your kubeconfig; they never talk to the driver itself.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(e.streams.ErrOut, cmd.UsageString())
			return usageError{errors.New("no command given")}
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(e.streams.In)
	root.SetOut(e.streams.Out)
	root.SetErr(e.streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	e.kube.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&e.terminal, "terminal", "auto",
		"whether output goes to a terminal (colours, a live status line): auto, yes or no")
	root.AddCommand(
		e.backupCommand(),
		e.restoreCommand(),
		e.listCommand(),
		e.statusCommand(),
		e.verifyCommand(),
		e.showCommand(),
		e.diffCommand(),
		e.migrateCommand(),
		e.auditKeysCommand(),
	)
	return root
}

func newConfigFlags() *genericclioptions.ConfigFlags {
	return genericclioptions.NewConfigFlags(true)
}

func isCobraUsageError(err error) bool {
	// cobra reports unknown commands and wrong argument counts as plain
	// errors; these prefixes are its own.
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires ", "unknown flag", "unknown shorthand flag", "invalid argument"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

func (e *env) defaultClient() (client.WithWatch, error) {
	cfg, err := e.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: driverscheme.New()})
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return c, nil
}

// namespace is the namespace the command works in: -n, or the
// kubeconfig context's, or "default".
func (e *env) namespace() (string, error) {
	ns, _, err := e.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("namespace: %w", err)
	}
	return ns, nil
}

// isTerminal reports whether output is for a person at a terminal.
func (e *env) isTerminal() (bool, error) {
	switch e.terminal {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	case "auto", "":
		f, ok := e.streams.Out.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())), nil
	default:
		return false, usagef("--terminal must be auto, yes or no, not %q", e.terminal)
	}
}
