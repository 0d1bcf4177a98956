// Package strategytemplate renders an Etcd strategy's destination template for
// one application and validates the result. Rendering is hermetic: templates
// see only .Application (the application object) and .Parameters (the
// BackupClass parameters), a curated set of pure string functions, and no
// process environment, DNS, files, clock or randomness. A reference to a
// missing key is an error, and every error names the field it came from.
package strategytemplate

import (
	"fmt"
	"strings"
	"text/template"

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
	t, err := template.New("field").Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("template does not parse: %w", err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("template failed: %w", err)
	}
	return b.String(), nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
