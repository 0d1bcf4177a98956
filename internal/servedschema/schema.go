// Package servedschema tells whether the optional kinds the driver works
// with (Kamaji's) are installed at all. Every kind of backups.cozystack.io
// and strategy.backups.cozystack.io is Cozystack's own CRD, as pinned in
// config/crd/upstream/cozystack, everywhere: the driver reads and writes no
// field those CRDs do not serve (test/crdmirror), its settings live in its
// StrategyPolicy and in Plan annotations, its records in annotations and in
// a Backup's status.underlyingResources, so no feature depends on what a
// CRD serves and nothing here asks about fields.
package servedschema

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kamaji's CRDs: optional kinds. Without them there is no control plane to
// fence; a restore asks Installed instead of the API server's discovery,
// which the client asks again at every lookup of a kind it does not know.
const (
	TenantControlPlaneCRD = "tenantcontrolplanes.kamaji.clastix.io"
	DataStoreCRD          = "datastores.kamaji.clastix.io"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=tenantcontrolplanes.kamaji.clastix.io;datastores.kamaji.clastix.io

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// refresh is how long a read of the CRDs stays current.
const refresh = 5 * time.Minute

// Schema tells what the installed CRDs serve: from a watch on each
// (Start, watch.go), or, before a watch has listed or while it is broken,
// from a live read of the one asked about, current for a few minutes.
type Schema struct {
	// Reader reads CRDs from the API server.
	Reader client.Reader
	// Watcher, when set, lets Start follow the CRDs with watches (watch.go).
	Watcher client.WithWatch

	mu   sync.Mutex
	read map[string]readCRD
	// changed is closed (and replaced) whenever a watch changes an answer.
	changed chan struct{}
}

type readCRD struct {
	answer
	at time.Time
	// watched: a watch keeps this answer current (it does not go stale).
	watched bool
}

// answer is what the driver keeps of one CRD.
type answer struct {
	// served are the versions it serves (none: not installed).
	served []string
}

// Installed reports whether crd is installed and serves version; a CRD
// that cannot be read counts as its last answer (not installed when there
// was none).
func (s *Schema) Installed(ctx context.Context, crd, version string) bool {
	return slices.Contains(s.answerFor(ctx, crd).served, version)
}

// Changed returns a channel closed at the next change a watch brings:
// wait on it to follow an answer without asking again. Take the channel
// before reading the answer, so a change in between is not missed.
func (s *Schema) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// InstalledKnown is Installed for a decision that must not be taken on a
// guess: it returns an error when crd has never been read (or watched)
// successfully and cannot be read now, where Installed says "not
// installed". A CRD that cannot be read is not a CRD that is absent.
func (s *Schema) InstalledKnown(ctx context.Context, crd, version string) (bool, error) {
	a, err := s.answerOrErr(ctx, crd)
	return slices.Contains(a.served, version), err
}

// answerFor is crd's answer: watched, read within refresh, or read now.
func (s *Schema) answerFor(ctx context.Context, crd string) answer {
	a, _ := s.answerOrErr(ctx, crd)
	return a
}

// answerOrErr is answerFor that says when there is no answer at all: the
// CRD unreadable now and never read before (the answer is then the
// driver's own schema's: nothing served).
func (s *Schema) answerOrErr(ctx context.Context, crd string) (answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.read[crd]; ok && (r.watched || time.Since(r.at) <= refresh) {
		return r.answer, nil
	}
	a, err := s.readOne(ctx, crd)
	if err != nil {
		// Unreadable: the last answer stands (or the driver's own schema).
		if r, ok := s.read[crd]; ok {
			return r.answer, nil
		}
		return answer{}, err
	}
	if s.read == nil {
		s.read = map[string]readCRD{}
	}
	s.read[crd] = readCRD{answer: a, at: time.Now()}
	return a, nil
}

// readOne reads crd and lists the versions it serves; a CRD that is not
// installed serves nothing.
func (s *Schema) readOne(ctx context.Context, name string) (answer, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return answer{}, nil
		}
		return answer{}, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return answerOf(name, crd), nil
}

// answerOf is what the driver keeps of crd (nil: not installed).
func answerOf(name string, crd *unstructured.Unstructured) answer {
	return answer{served: servedVersions(crd)}
}

// servedVersions are the versions crd (nil: not installed) serves, once
// the API server has established it.
func servedVersions(crd *unstructured.Unstructured) []string {
	if crd == nil || !established(crd) {
		return nil
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if served, _ := vm["served"].(bool); served {
			if name, _ := vm["name"].(string); name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

// established: the API server serves crd's resources.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Established" && cm["status"] == "True" {
			return true
		}
	}
	return false
}
