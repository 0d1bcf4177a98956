package step

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Subcommand is the first argument of etcd-stage that selects this step.
const Subcommand = "rehearse"

// Files under the work directory. Everything the step writes lives in
// ScratchDir, which it removes at the start (a killed attempt's leftovers)
// and at the end.
const (
	ScratchDir = "rehearsal"
	stagedFile = "staged.db"
	// StageReportFile receives the staging step's own report.
	StageReportFile = "stage-report.json"
	// DataDir is the throwaway etcd's data directory.
	DataDir = "etcd"
)

// Options are the rehearsal's flags: staging's (the object, its recorded
// size and sha256, the revision plan, the endpoint policy, the
// termination log) and --work-dir, an emptyDir the step stages, restores
// and boots in. Staging's --out is not accepted: the staged file is the
// step's own.
type Options struct {
	Staging stagingstep.Options
	WorkDir string
}

// Args are the container arguments (after the subcommand) that make Parse
// return o.
func (o Options) Args() []string {
	args := []string{"--work-dir=" + o.WorkDir}
	s := o.Staging
	s.Out = ""
	for _, a := range s.Args() {
		if a != "--out=" {
			args = append(args, a)
		}
	}
	return args
}

// Parse reads the rehearsal's flags (without the subcommand) and
// validates them with staging's own rules. On an error the options read
// so far are returned too, so the report still reaches --termination-log.
func Parse(args []string, stderr io.Writer) (Options, error) {
	var o Options
	rest := make([]string, 0, len(args)+1)
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--work-dir="):
			if o.WorkDir != "" {
				return o, fmt.Errorf("%w: --work-dir given twice", stagingstep.ErrArguments)
			}
			o.WorkDir = strings.TrimPrefix(a, "--work-dir=")
		case a == "--out" || strings.HasPrefix(a, "--out=") || a == "-out" || strings.HasPrefix(a, "-out="):
			return o, fmt.Errorf("%w: --out is not an option of %s", stagingstep.ErrArguments, Subcommand)
		default:
			rest = append(rest, a)
		}
	}
	if o.WorkDir == "" || !filepath.IsAbs(o.WorkDir) {
		// Still read the termination log, to report the error there.
		o.Staging, _ = stagingstep.Parse(append(rest, "--out=/"+stagedFile), io.Discard)
		return o, fmt.Errorf("%w: --work-dir must be an absolute path", stagingstep.ErrArguments)
	}
	s, err := stagingstep.Parse(append(rest, "--out="+o.stagedPath()), stderr)
	o.Staging = s
	return o, err
}

// Scratch is the directory the step works in (under the work directory).
func (o Options) Scratch() string    { return filepath.Join(o.WorkDir, ScratchDir) }
func (o Options) stagedPath() string { return filepath.Join(o.Scratch(), stagedFile) }
