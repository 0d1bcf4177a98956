package run

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/scratchetcd"
	inspectionstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/inspection/step"
	pointrun "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/pointreplay/run"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/rehearsal/step"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Main is `etcd-stage rehearse`: args are the flags after the subcommand.
// It writes the Report to the termination log and stdout and returns the
// exit code; errors are described on stderr as well.
func Main(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	o, err := step.Parse(args, stderr)
	var r step.Report
	if err != nil {
		r = step.Failure(report.Refused, stagingstep.ReasonInvalidArguments, err)
	} else {
		r = run(ctx, o, env, stderr)
	}
	if r.Outcome != step.OutcomeRehearsed {
		fmt.Fprintf(stderr, "etcd-stage rehearse: %s: %s\n", r.Reason, r.Message)
	}
	report.Emit("etcd-stage rehearse", r.Line(), o.Staging.TerminationLog, stdout, stderr)
	return r.ExitCode()
}

// run stages, restores, boots and reads back; the scratch directory is
// gone when it returns.
func run(ctx context.Context, o step.Options, env func(string) string, stderr io.Writer) step.Report {
	dir := o.Scratch()
	if err := os.RemoveAll(dir); err != nil {
		return step.Failure(report.Retryable, stagingstep.ReasonVolumeFailed, fmt.Errorf("remove a leftover %s: %w", dir, err))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return step.Failure(report.Retryable, stagingstep.ReasonVolumeFailed, fmt.Errorf("create %s: %w", dir, err))
	}
	defer os.RemoveAll(dir)

	// Stage exactly as a real restore does: the same binary path, the same
	// checks, the same revision raise. Its report goes to a file of ours.
	so := o.Staging
	so.TerminationLog = filepath.Join(dir, step.StageReportFile)
	stagingstep.MainWith(ctx, so.Args(), env, io.Discard, stderr, pointrun.Staging)
	msg, err := os.ReadFile(so.TerminationLog)
	if err != nil {
		return step.Failure(report.Retryable, step.ReasonStagingUnreported, fmt.Errorf("read the staging report: %w", err))
	}
	sr, err := stagingstep.ParseReport(string(msg))
	if err != nil {
		return step.Failure(report.Retryable, step.ReasonStagingUnreported, err)
	}
	if sr.Outcome != stagingstep.OutcomeStaged {
		return step.FromStaging(sr)
	}

	data := filepath.Join(dir, step.DataDir)
	m, err := scratchetcd.Restore(so.Out, data)
	if err != nil {
		return step.Failure(report.Refused, step.ReasonSnapshotUnbootable, err)
	}
	// The restore has copied the database: the staged file is now only
	// needed for the offline count, which reads the database without its
	// trailer.
	if err := os.Truncate(so.Out, sr.Size-sha256.Size); err != nil {
		return step.Failure(report.Retryable, stagingstep.ReasonVolumeFailed, fmt.Errorf("strip the staged trailer: %w", err))
	}
	manifest, err := inspectionstep.InspectFile(so.Out)
	if err != nil {
		return step.Failure(report.Refused, stagingstep.ReasonArtifactCorrupt, fmt.Errorf("inspect the staged snapshot: %w", err))
	}
	if err := os.Remove(so.Out); err != nil {
		return step.Failure(report.Retryable, stagingstep.ReasonVolumeFailed, fmt.Errorf("remove the staged snapshot: %w", err))
	}

	rb, err := bootAndRead(ctx, m, sr.Result)
	switch {
	case errors.Is(err, errMismatch):
		return step.Failure(report.Refused, step.ReasonReadBackMismatch, err)
	case errors.Is(err, scratchetcd.ErrBoot):
		return step.Failure(report.Refused, step.ReasonSnapshotUnbootable, err)
	case err != nil:
		return step.Failure(report.Retryable, stagingstep.ReasonTransient, err)
	}
	if rb.keys != manifest.Keys {
		return step.Failure(report.Refused, step.ReasonReadBackMismatch,
			fmt.Errorf("%w: the booted etcd holds %d keys, the staged file %d", errMismatch, rb.keys, manifest.Keys))
	}
	keyspaces, truncated := rb.counter.Keyspaces()
	return step.Report{
		Envelope: report.Envelope{Outcome: step.OutcomeRehearsed, Reason: step.ReasonRehearsed,
			Message: fmt.Sprintf("booted the staged snapshot (from revision %d) at revision %d, compacted up to %d; read back %d keys", sr.SnapshotRevision, rb.revision, rb.compacted, rb.keys)},
		Revision:          rb.revision,
		CompactedRevision: rb.compacted,
		Keys:              rb.keys,
		Keyspaces:         keyspaces,
		Truncated:         truncated,
	}
}
