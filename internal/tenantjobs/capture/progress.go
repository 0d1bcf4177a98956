package capture

import (
	"fmt"
	"strings"
	"time"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// ProgressEvery is the least time between two writes of the capture's
// progress record: at most once a segment, and never more often than
// this, so a followed tenant costs the API server at most two writes a
// minute however fast its etcd writes (one a minute while it is quiet,
// when only confirmedAt moves). A gap and a stop are written at once.
const ProgressEvery = 30 * time.Second

// MaxProgressMessage bounds the gap's message in the record (the
// CaptureProgress CRD refuses a longer one).
const MaxProgressMessage = 1024

// Progress is the status of the capture's CaptureProgress record
// (etcd-backup-driver.cozystack.io/v1alpha1) as the capture writes it:
// the chain's index, in the CRD's field names. The driver decodes it
// into its API type; a test there proves the two agree.
type Progress struct {
	BaseRevision   int64        `json:"baseRevision"`
	Segments       int64        `json:"segments"`
	NewestRevision int64        `json:"newestRevision"`
	NewestTime     *string      `json:"newestTime"`
	ConfirmedAt    *string      `json:"confirmedAt"`
	Gap            *ProgressGap `json:"gap"`
	UpdatedAt      string       `json:"updatedAt"`
}

// ProgressGap is the chain's end.
type ProgressGap struct {
	Reason  string `json:"reason"`
	At      string `json:"at"`
	Message string `json:"message,omitempty"`
}

// microTime is how the API server writes a metav1.MicroTime.
const microTime = "2006-01-02T15:04:05.000000Z07:00"

func micro(t time.Time) string { return t.UTC().Format(microTime) }

// ProgressOf is the record of the chain at idx, written at now. Fields
// the index leaves empty are written as null, so a merge patch clears
// what an earlier record (of another chain) said.
func ProgressOf(idx changelog.Index, now time.Time) Progress {
	p := Progress{BaseRevision: idx.Base.Revision, Segments: idx.Segments, NewestRevision: idx.Newest.Revision, UpdatedAt: micro(now)}
	if t := idx.Newest.Time; t != nil {
		s := micro(*t)
		p.NewestTime = &s
	}
	if t := idx.ConfirmedAt; t != nil {
		s := micro(*t)
		p.ConfirmedAt = &s
	}
	if g := idx.Gap; g != nil {
		p.Gap = &ProgressGap{Reason: g.Reason, At: micro(g.At), Message: textlimit.Cut(g.Message, MaxProgressMessage)}
	}
	return p
}

// ProgressRecord names the record the capture writes: its namespace and
// name ("" when it writes none).
type ProgressRecord struct {
	Namespace, Name string
	// TokenFile and CAFile are the projected ServiceAccount token that
	// may patch the record's status and the API server's CA bundle; the
	// API server is the one KUBERNETES_SERVICE_HOST and _PORT name.
	TokenFile, CAFile string
}

// Set reports whether a record is named.
func (r ProgressRecord) Set() bool { return r.Name != "" }

// flag is --progress's value: namespace/name.
func (r ProgressRecord) flag() string {
	if !r.Set() {
		return ""
	}
	return r.Namespace + "/" + r.Name
}

func parseRecord(v string) (ProgressRecord, error) {
	if v == "" {
		return ProgressRecord{}, nil
	}
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return ProgressRecord{}, fmt.Errorf("--progress %q: want namespace/name", v)
	}
	return ProgressRecord{Namespace: ns, Name: name}, nil
}
