package step

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// Main is `etcd-stage capture`: args are the flags after the subcommand.
// It captures until ctx ends or the chain cannot go on, writes the Report
// to the termination log and stdout, and returns the exit code; what
// happens is told on stderr as well.
func Main(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	o, err := capture.Parse(args, stderr)
	var idx changelog.Index
	if err == nil {
		idx, err = run(ctx, o, env, stderr)
	}
	r := newReport(o, idx, err)
	if err != nil {
		fmt.Fprintf(stderr, "etcd-stage capture: %s: %v\n", r.Reason, err)
	}
	report.Emit("etcd-stage capture", r.Line(), o.TerminationLog, stdout, stderr)
	return r.ExitCode()
}

func run(ctx context.Context, o capture.Options, env func(string) string, stderr io.Writer) (changelog.Index, error) {
	c, err := newCapturer(o, env, stderr)
	if err != nil {
		return changelog.Index{}, err
	}
	defer c.cli.Close()
	err = c.run(ctx)
	return c.idx, err
}

// newCapturer connects to the etcd and the store o names; the caller
// closes c.cli.
func newCapturer(o capture.Options, env func(string) string, stderr io.Writer) (*capturer, error) {
	store, err := chainStore(o, env)
	if err != nil {
		return nil, err
	}
	rec, err := newProgressWriter(o.Progress, env, time.Now, stderr)
	if err != nil {
		return nil, err
	}
	cli, err := connect(o)
	if err != nil {
		return nil, err
	}
	return &capturer{o: o, cli: cli, store: store, lim: changelog.DefaultLimits, now: time.Now, log: stderr, noted: map[int64]struct{}{},
		retry: defaultWatchRetry, rec: rec}, nil
}

// newReport is the report of a capture of o that ended with the chain
// at idx and err.
func newReport(o capture.Options, idx changelog.Index, err error) capture.Report {
	outcome, reason := classify(err)
	r := capture.Report{Envelope: report.Envelope{Outcome: outcome, Reason: reason}, BaseRevision: o.Base.Revision, Segments: idx.Segments}
	if idx.Version != 0 {
		r.Newest, r.NewestTime = idx.Newest.Revision, idx.Newest.Time
	}
	switch {
	case err != nil:
		r.Message = err.Error()
	case r.Segments == 0:
		r.Message = fmt.Sprintf("stopped; no change after the base (revision %d) was received", o.Base.Revision)
	default:
		r.Message = fmt.Sprintf("stopped; revisions %d..%d durable in %d segments", o.Base.Revision+1, r.Newest, r.Segments)
	}
	return r
}

// classify sorts how a capture ended.
func classify(err error) (report.Outcome, report.Reason) {
	var g *gapError
	switch {
	case err == nil:
		return capture.OutcomeStopped, capture.ReasonStopped
	case errors.As(err, &g):
		return capture.OutcomeGap, g.reason
	case errors.Is(err, stagingstep.ErrArguments):
		return report.Refused, capture.ReasonInvalidArguments
	case errors.Is(err, errChainMismatch):
		return report.Refused, capture.ReasonChainMismatch
	case errors.Is(err, s3object.ErrRefused):
		return report.Refused, capture.ReasonEndpointRefused
	case errors.Is(err, s3object.ErrAccessDenied), errors.Is(err, s3object.ErrCredentials):
		return report.Retryable, capture.ReasonCredentialsRejected
	}
	return report.Retryable, capture.ReasonTransient
}
