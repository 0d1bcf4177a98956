// Package servedschema tells which of the driver's optional API fields the
// installed CRDs serve. The driver's CRDs are a superset of Cozystack's:
// on a cluster that runs Cozystack's own backups.cozystack.io and
// strategy.backups.cozystack.io CRDs, fields such as a Plan's retention or a
// strategy's deletionPolicy are pruned on write, so the driver never sees
// them. Controllers ask here, and say so (a condition, an Event) instead of
// silently behaving as if the setting had not been made.
package servedschema

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CRDs the driver checks, and the optional fields of each it relies on.
const (
	PlanCRD       = "plans.backups.cozystack.io"
	StrategyCRD   = "etcds.strategy.backups.cozystack.io"
	RestoreJobCRD = "restorejobs.backups.cozystack.io"
)

// Optional lists, per CRD, the driver's own fields (dotted paths in the
// schema) that Cozystack's CRDs lack.
var Optional = map[string][]string{
	PlanCRD: {
		"spec.schedule.timeZone", "spec.concurrencyPolicy", "spec.suspend", "spec.startingDeadlineSeconds",
		"spec.successfulJobsHistoryLimit", "spec.failedJobsHistoryLimit", "spec.retention",
		"status.lastScheduleTime", "status.nextScheduleTime", "status.lastSkippedTime", "status.lastSuccessfulBackup",
	},
	StrategyCRD: {"spec.deletionPolicy", "spec.allowHTTPEndpoint"},
}

// ImmutableSpec is the pseudo-field for "spec has the self == oldSelf rule".
const ImmutableSpec = "spec (immutable)"

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch,resourceNames=plans.backups.cozystack.io;etcds.strategy.backups.cozystack.io;restorejobs.backups.cozystack.io

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
}

type readCRD struct {
	missing []string
	at      time.Time
	// watched: a watch keeps this answer current (it does not go stale).
	watched bool
}

// Missing returns the optional fields crd does not serve (nil when it
// serves them all, or when the CRD cannot be read: the driver then assumes
// its own schema).
func (s *Schema) Missing(ctx context.Context, crd string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.read[crd]; ok && (r.watched || time.Since(r.at) <= refresh) {
		return r.missing
	}
	missing, err := s.readOne(ctx, crd)
	if err != nil {
		// Unreadable: the last answer stands (or the driver's own schema).
		return s.read[crd].missing
	}
	if s.read == nil {
		s.read = map[string]readCRD{}
	}
	s.read[crd] = readCRD{missing: missing, at: time.Now()}
	return missing
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

// readOne reads crd and lists what it lacks; a CRD that is not installed
// lacks nothing the driver could use.
func (s *Schema) readOne(ctx context.Context, name string) ([]string, error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return missingOf(name, crd), nil
}

// missingOf lists what crd (nil: not installed) lacks of name's optional
// fields.
func missingOf(name string, crd *unstructured.Unstructured) []string {
	if crd == nil {
		return nil
	}
	root, ok := storageSchema(crd)
	if !ok {
		return nil
	}
	var out []string
	for _, field := range Optional[name] {
		if !serves(root, field) {
			out = append(out, field)
		}
	}
	if name == RestoreJobCRD && !immutableSpec(root) {
		out = append(out, ImmutableSpec)
	}
	return out
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

// serves walks a dotted path through properties.
func serves(node map[string]any, path string) bool {
	for _, part := range strings.Split(path, ".") {
		props, _ := node["properties"].(map[string]any)
		next, ok := props[part].(map[string]any)
		if !ok {
			return false
		}
		node = next
	}
	return true
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
