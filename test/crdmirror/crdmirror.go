// Package crdmirror checks a Go mirror of someone else's kind against that
// kind's CRD as pinned (config/crd/upstream): every JSON field the Go type
// can write must be one the CRD's schema serves. A field it does not serve
// is pruned by the API server on every write, and code that sets or reads
// it silently does nothing.
package crdmirror

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Schema reads the CRD in file and returns the openAPIV3Schema of its
// version.
func Schema(file, version string) (*apiextensionsv1.JSONSchemaProps, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return v.Schema.OpenAPIV3Schema, nil
		}
	}
	return nil, fmt.Errorf("%s: no schema of version %s", file, version)
}

// Unserved returns, sorted, the dotted paths (list items as "[]", map
// values as "{}") of the JSON fields of the kind t (a struct type: a root
// object with TypeMeta, ObjectMeta, spec...) that root does not serve.
// Types with a JSON encoding of their own (metav1.Time, metav1.Duration,
// resource.Quantity...) are leaves; metadata is always served; under
// x-kubernetes-preserve-unknown-fields everything is.
func Unserved(t reflect.Type, root *apiextensionsv1.JSONSchemaProps) []string {
	w := walker{seen: map[reflect.Type]bool{}}
	w.walk(t, root, "")
	sort.Strings(w.unserved)
	return w.unserved
}

type walker struct {
	unserved []string
	// seen guards against recursive types: each is walked once per path
	// down.
	seen map[reflect.Type]bool
}

var marshaler = reflect.TypeFor[json.Marshaler]()

func (w *walker) walk(t reflect.Type, s *apiextensionsv1.JSONSchemaProps, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		return
	}
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) || w.seen[t] {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.seen[t] = true
		defer delete(w.seen, t)
		w.fields(t, s, path)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte: a base64 string
		}
		if s.Items == nil || s.Items.Schema == nil {
			w.unserved = append(w.unserved, path+"[]")
			return
		}
		w.walk(t.Elem(), s.Items.Schema, path+"[]")
	case reflect.Map:
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			if s.AdditionalProperties == nil || !s.AdditionalProperties.Allows {
				w.unserved = append(w.unserved, path+"{}")
			}
			return
		}
		w.walk(t.Elem(), s.AdditionalProperties.Schema, path+"{}")
	}
}

// fields walks the JSON fields of struct t against s's properties.
func (w *walker) fields(t reflect.Type, s *apiextensionsv1.JSONSchemaProps, path string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			w.walk(f.Type, s, path) // inlined: its fields are this object's
			continue
		}
		if name == "" {
			name = f.Name
		}
		child := join(path, name)
		if child == "metadata" {
			continue // ObjectMeta: the API server serves it for every kind
		}
		prop, ok := s.Properties[name]
		if !ok {
			w.unserved = append(w.unserved, child)
			continue
		}
		w.walk(f.Type, &prop, child)
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
