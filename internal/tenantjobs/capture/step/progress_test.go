package step

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

// apiServer stands in for the API server the capture writes its record
// to: it keeps every PATCH of the record's status.
type apiServer struct {
	*httptest.Server
	mu      sync.Mutex
	patches []capture.Progress
	bad     []string
}

const recordPath = "/apis/etcd-backup-driver.cozystack.io/v1alpha1/namespaces/tenant-a/captureprogresses/etcd-capture-x/status"

func startAPIServer(t *testing.T) *apiServer {
	a := &apiServer{}
	a.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPatch || r.URL.Path != recordPath || r.Header.Get("Content-Type") != "application/merge-patch+json" ||
			r.Header.Get("Authorization") != "Bearer the-token" {
			a.bad = append(a.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Authorization"))
			w.WriteHeader(http.StatusForbidden)
			return
		}
		var patch struct {
			Status capture.Progress `json:"status"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&patch); err != nil {
			a.bad = append(a.bad, string(body))
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		a.patches = append(a.patches, patch.Status)
		w.Write([]byte("{}"))
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *apiServer) seen() []capture.Progress {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]capture.Progress(nil), a.patches...)
}

// withRecord is o writing its progress to a, with env naming a as the
// API server.
func withRecord(t *testing.T, o capture.Options, a *apiServer) (capture.Options, func(string) string) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Progress = capture.ProgressRecord{Namespace: "tenant-a", Name: "etcd-capture-x", TokenFile: token, CAFile: ca}
	host, port, _ := net.SplitHostPort(a.Listener.Addr().String())
	return o, func(name string) string {
		switch name {
		case "KUBERNETES_SERVICE_HOST":
			return host
		case "KUBERNETES_SERVICE_PORT":
			return port
		}
		return env(name)
	}
}

// The capture tells the driver how far its chain is durable: once when
// it starts, then at most once every progressEvery however many
// segments it seals, and at once when it stops or the chain ends. Each
// write is a merge patch of the record's status with the token, naming
// exactly what the index says.
func TestProgressRecordFollowsTheChain(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcdURL, cli := startEtcd(ctx, t)
	s3URL := startS3(t)
	b, _ := base(ctx, t, cli)
	a := startAPIServer(t)
	o, envWith := withRecord(t, options(etcdURL, s3URL, b, t.TempDir()), a)

	started := time.Now()
	r := startCaptureEnv(t, o, envWith)
	// Segments every second for six seconds: at most three writes (the
	// start's and one per progressEvery), not six.
	for i := range 6 {
		workload(ctx, t, cli, "p", 1+i%2, 5)
		time.Sleep(time.Second)
	}
	last := revision(ctx, t, cli)
	awaitDurable(ctx, t, storeOf(t, o), last, r)
	code, rep := r.stop(t)
	elapsed := time.Since(started)
	if code != capture.ExitStopped {
		t.Fatalf("exit %d: %+v\n%s", code, rep, r.stderr)
	}
	got := a.seen()
	if len(a.bad) > 0 {
		t.Fatalf("requests the API server refused: %q", a.bad)
	}
	if len(got) < 3 {
		t.Fatalf("%d writes: want the start's, at least one while capturing, and the stop's", len(got))
	}
	if most := 2 + int(elapsed/progressEvery) + 1; len(got) > most {
		t.Fatalf("%d writes in %s: more than one every %s (at most %d)", len(got), elapsed, progressEvery, most)
	}
	first, final := got[0], got[len(got)-1]
	if first.BaseRevision != b.Revision || first.Segments != 0 || first.NewestRevision != b.Revision || first.NewestTime != nil || first.Gap != nil {
		t.Fatalf("the start's record %+v: want the base %d and nothing durable", first, b.Revision)
	}
	if final.NewestRevision != rep.Newest || final.Segments != rep.Segments || final.NewestTime == nil || final.Gap != nil {
		t.Fatalf("the stop's record %+v does not say what the report says (%+v)", final, rep)
	}
	if _, err := time.Parse(time.RFC3339Nano, *final.NewestTime); err != nil {
		t.Fatalf("newestTime %q: %v", *final.NewestTime, err)
	}

	// A chain that cannot go on is written at once, with its reason.
	if _, err := cli.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	workload(ctx, t, cli, "q", 1, 3)
	if _, err := cli.Compact(ctx, revision(ctx, t, cli)); err != nil {
		t.Fatal(err)
	}
	expectGap(ctx, t, startCaptureEnv(t, o, envWith), capture.ReasonCompacted)
	got = a.seen()
	if g := got[len(got)-1].Gap; g == nil || g.Reason != string(capture.ReasonCompacted) {
		t.Fatalf("the last record %+v does not say the chain ended for %s", got[len(got)-1], capture.ReasonCompacted)
	}
}
