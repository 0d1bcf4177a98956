// Package strategytemplate renders an Etcd strategy's destination template for
// one application and validates the result. Rendering is hermetic: templates
// see only .Application (the application object) and .Parameters (the
// BackupClass parameters), a curated set of pure string functions, and no
// process environment, DNS, files, clock or randomness. A reference to a
// missing key is an error, and every error names the field it came from.
package strategytemplate

import (
	"errors"
	"fmt"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// Context is what a template sees.
type Context struct {
	// Application is the application object (apiVersion, kind, metadata,
	// spec), as stored by the API server.
	Application map[string]any
	// Parameters are the matched BackupClass entry's parameters.
	Parameters map[string]string
}

// FieldError is a template or validation failure of one field.
type FieldError struct {
	// Field is the path of the field in the strategy, for example
	// spec.template.destination.s3.bucket.
	Field string
	// Err says what is wrong.
	Err error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

const s3Path = "spec.template.destination.s3."

// Render renders every string field of the strategy's S3 destination.
// Non-string fields (forcePathStyle) are copied as they are.
func Render(tmpl strategyv1alpha1.EtcdTemplate, ctx Context) (strategyv1alpha1.EtcdS3Template, error) {
	src := tmpl.Destination.S3
	if src == nil {
		return strategyv1alpha1.EtcdS3Template{}, &FieldError{Field: "spec.template.destination.s3", Err: fmt.Errorf("is not set")}
	}
	out := *src.DeepCopy()
	data := map[string]any{"Application": ctx.Application, "Parameters": nonNil(ctx.Parameters)}
	for _, f := range []struct {
		path string
		val  *string
	}{
		{"bucket", &out.Bucket},
		{"endpoint", &out.Endpoint},
		{"key", &out.Key},
		{"region", &out.Region},
		{"credentialsSecretRef.name", &out.CredentialsSecretRef.Name},
	} {
		rendered, err := renderString(*f.val, data)
		if err != nil {
			return strategyv1alpha1.EtcdS3Template{}, &FieldError{Field: s3Path + f.path, Err: err}
		}
		*f.val = rendered
	}
	return out, nil
}

func renderString(text string, data map[string]any) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	if len(text) > MaxTemplateBytes {
		return "", fmt.Errorf("template is %d bytes, more than %d", len(text), MaxTemplateBytes)
	}
	t, err := template.New("field").Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("template does not parse: %w", err)
	}
	sh, err := checkShape(t)
	if err != nil {
		return "", err
	}
	return execute(t, sh, data)
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ErrInvalid marks a rendered destination that failed Validate, as opposed
// to a template that did not render.
var ErrInvalid = errors.New("invalid destination")

// RenderFor renders strategy's destination for application (an object the
// API server stored, typed or not) with the class parameters, and validates
// it with o (the endpoint policy, and the plain-http allowance of the
// strategy's StrategyPolicy). Errors wrap ErrInvalid when the template
// rendered but its result is not a usable destination.
func RenderFor(strategy *strategyv1alpha1.Etcd, application map[string]any, params map[string]string, o Options) (strategyv1alpha1.EtcdS3Template, error) {
	dest, err := Render(strategy.Spec.Template, Context{Application: application, Parameters: params})
	if err != nil {
		return dest, fmt.Errorf("Etcd strategy %q did not render: %w", strategy.Name, err)
	}
	if err := Validate(dest, o); err != nil {
		return dest, fmt.Errorf("%w: Etcd strategy %q rendered an invalid destination: %w", ErrInvalid, strategy.Name, err)
	}
	return dest, nil
}

// ApplicationObject is the application as templates see it: the stored
// object as a map, with apiVersion and kind set (objects read from a cache
// may lack them).
func ApplicationObject(app *appsv1alpha1.Etcd) (map[string]any, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(app)
	if err != nil {
		return nil, fmt.Errorf("convert application %s/%s: %w", app.Namespace, app.Name, err)
	}
	obj["apiVersion"], obj["kind"] = appsv1alpha1.GroupVersion.String(), appsv1alpha1.EtcdKind
	return obj, nil
}
