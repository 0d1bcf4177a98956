// Package servedschema tells what the installed CRDs serve that the driver
// cannot take for granted: whether a RestoreJob's spec is immutable (the
// driver's RestoreJob CRD makes it so, Cozystack's does not), and whether
// the optional kinds it works with (Kamaji's) are installed at all. (The
// Etcd strategy, the Plan and the Backup are Cozystack's own CRDs
// everywhere: the driver reads and writes no field they do not serve; its
// settings live in its StrategyPolicy and in Plan annotations, its records
// on a Backup in status.underlyingResources.) Controllers ask here, and
// say so (a condition, an Event) instead of silently behaving as if the
// setting had not been made.
package servedschema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The CRD the driver checks for the rule it relies on.
const RestoreJobCRD = "restorejobs.backups.cozystack.io"

// Kamaji's CRDs: optional kinds. Without them there is no control plane to
// fence; a restore asks Installed instead of the API server's discovery,
// which the client asks again at every lookup of a kind it does not know.
const (
	TenantControlPlaneCRD = "tenantcontrolplanes.kamaji.clastix.io"
	DataStoreCRD          = "datastores.kamaji.clastix.io"
)

// ImmutableSpec is the pseudo-field for "spec has the self == oldSelf rule".
const ImmutableSpec = "spec (immutable)"

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=restorejobs.backups.cozystack.io;tenantcontrolplanes.kamaji.clastix.io;datastores.kamaji.clastix.io

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
	// missing are the rules it lacks (ImmutableSpec).
	missing []string
	// served are the versions it serves (none: not installed).
	served []string
}

// Missing returns the rules crd lacks (nil when it has them all, or when
// the CRD cannot be read: the driver then assumes its own schema).
func (s *Schema) Missing(ctx context.Context, crd string) []string {
	return s.answerFor(ctx, crd).missing
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
// driver's own schema's: nothing missing, nothing served).
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

// Serves reports whether crd serves field.
func (s *Schema) Serves(ctx context.Context, crd, field string) bool {
	for _, m := range s.Missing(ctx, crd) {
		if m == field {
			return false
		}
	}
	return true
}

// readOne reads crd and lists what it lacks and serves; a CRD that is not
// installed lacks nothing the driver could use and serves nothing.
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
	return answer{missing: missingOf(name, crd), served: servedVersions(crd)}
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

// missingOf lists the rules crd (nil: not installed) lacks.
func missingOf(name string, crd *unstructured.Unstructured) []string {
	if crd == nil || name != RestoreJobCRD {
		return nil
	}
	root, ok := storageSchema(crd)
	if !ok || immutableSpec(root) {
		return nil
	}
	return []string{ImmutableSpec}
}

// storageSchema is the openAPIV3Schema of crd's storage version.
func storageSchema(crd *unstructured.Unstructured) (map[string]any, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if stored, _ := vm["storage"].(bool); !stored {
			continue
		}
		root, ok, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
		return root, ok
	}
	return nil, false
}

func immutableSpec(root map[string]any) bool {
	spec, _, _ := unstructured.NestedMap(root, "properties", "spec")
	rules, _ := spec["x-kubernetes-validations"].([]any)
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		if strings.ReplaceAll(fmt.Sprint(rm["rule"]), " ", "") == "self==oldSelf" {
			return true
		}
	}
	return false
}
