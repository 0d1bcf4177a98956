package step

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
	stagingstep "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging/step"
)

// progressTimeout bounds one write of the record.
const progressTimeout = 10 * time.Second

// maxTokenBytes bounds the token file read.
const maxTokenBytes = 64 << 10

// progressEvery is capture.ProgressEvery; tests shorten it.
var progressEvery = capture.ProgressEvery

// progressWriter tells the driver how far the chain is durable: it
// patches the status of the capture's CaptureProgress record, the one
// object its ServiceAccount may write, at most once every
// capture.ProgressEvery (what came meanwhile waits for the next tick;
// a gap and a stop are written at once). The driver watches the record,
// so it needs neither to poll S3 nor to reach the capture. A failed
// write is told and never stops the capture: the chain in S3 is what a
// restore reads, the record only what the driver shows.
type progressWriter struct {
	url       string
	tokenFile string
	client    *http.Client
	now       func() time.Time
	log       io.Writer

	last    time.Time
	pending *changelog.Index
	// writes and failures count the requests sent (the bench reads them).
	writes, failures int
}

// newProgressWriter is the writer of rec on the API server that env's
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT name (as a
// kubelet sets them in every container), or nil when rec names none.
func newProgressWriter(rec capture.ProgressRecord, env func(string) string, now func() time.Time, log io.Writer) (*progressWriter, error) {
	if !rec.Set() {
		return nil, nil
	}
	host, port := env("KUBERNETES_SERVICE_HOST"), env("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("%w: --progress needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT", stagingstep.ErrArguments)
	}
	pem, err := os.ReadFile(rec.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: read --progress-ca-file: %w", stagingstep.ErrArguments, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: --progress-ca-file %s holds no PEM certificate", stagingstep.ErrArguments, rec.CAFile)
	}
	u := url.URL{Scheme: "https", Host: net.JoinHostPort(host, port),
		Path: "/apis/etcd-backup-driver.cozystack.io/v1alpha1/namespaces/" + rec.Namespace + "/captureprogresses/" + rec.Name + "/status"}
	return &progressWriter{
		url: u.String(), tokenFile: rec.TokenFile, now: now, log: log,
		client: &http.Client{Timeout: progressTimeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			Proxy:           nil, MaxIdleConns: 1, IdleConnTimeout: 2 * capture.ProgressEvery,
		}},
	}, nil
}

// note hears that the index idx was written: it is written to the
// record now when force or when the last write is old enough, otherwise
// at the next due.
func (p *progressWriter) note(ctx context.Context, idx changelog.Index, force bool) {
	if p == nil {
		return
	}
	if !force && p.now().Sub(p.last) < progressEvery {
		p.pending = &idx
		return
	}
	p.send(ctx, idx)
}

// due writes what waits once the last write is old enough.
func (p *progressWriter) due(ctx context.Context) {
	if p != nil && p.pending != nil && p.now().Sub(p.last) >= progressEvery {
		p.send(ctx, *p.pending)
	}
}

func (p *progressWriter) send(ctx context.Context, idx changelog.Index) {
	p.last, p.pending = p.now(), nil
	p.writes++
	if err := p.patch(ctx, idx); err != nil {
		p.failures++
		fmt.Fprintf(p.log, "etcd-stage capture: the progress record was not written (the chain in S3 is unaffected): %v\n", err)
	}
}

func (p *progressWriter) patch(ctx context.Context, idx changelog.Index) error {
	token, err := readAtMost(p.tokenFile, maxTokenBytes)
	if err != nil {
		return fmt.Errorf("read the token: %w", err)
	}
	body, err := json.Marshal(map[string]any{"status": capture.ProgressOf(idx, p.now())})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, progressTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("PATCH %s: %s: %s", p.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

func readAtMost(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	return string(b), err
}
