package strategytemplate

import (
	"errors"
	"os"
	"strings"
	"testing"

	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

func tmpl(s3 strategyv1alpha1.EtcdS3Template) strategyv1alpha1.EtcdTemplate {
	return strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &s3}}
}

var app = map[string]any{
	"apiVersion": "apps.cozystack.io/v1alpha1", "kind": "Etcd",
	"metadata": map[string]any{"namespace": "tenant-a", "name": "etcd"},
	"spec":     map[string]any{"replicas": int64(3)},
}

func valid() strategyv1alpha1.EtcdS3Template {
	return strategyv1alpha1.EtcdS3Template{
		Bucket: "backups", Endpoint: "https://s3.example.com", Key: "tenants/",
		CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: "creds"},
	}
}

func TestRenderUsesApplicationAndParameters(t *testing.T) {
	s3 := valid()
	s3.Bucket = "{{ .Parameters.bucket }}"
	s3.Key = "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/r{{ .Application.spec.replicas }}/"
	s3.Region = `{{ default "us-east-1" (index .Parameters "region") }}`
	fps := true
	s3.ForcePathStyle = &fps
	got, err := Render(tmpl(s3), Context{Application: app, Parameters: map[string]string{"bucket": "b-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Bucket != "b-1" || got.Key != "tenant-a/etcd/r3/" || got.Region != "us-east-1" || !*got.ForcePathStyle {
		t.Fatalf("unexpected render %+v", got)
	}
	if s3.Bucket != "{{ .Parameters.bucket }}" {
		t.Fatal("Render modified its input")
	}
}

func TestRenderErrorsNameTheField(t *testing.T) {
	t.Setenv("SECRET_FROM_ENV", "leaked")
	for name, tc := range map[string]struct {
		mutate func(*strategyv1alpha1.EtcdS3Template)
		field  string
		text   string
	}{
		"missing parameter":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "{{ .Parameters.bucket }}" }, "spec.template.destination.s3.bucket", "bucket"},
		"missing app field":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "{{ .Application.spec.nope }}" }, "spec.template.destination.s3.key", "nope"},
		"unknown top level":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Region = "{{ .Nope }}" }, "spec.template.destination.s3.region", "Nope"},
		"env is not defined":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = `{{ env "SECRET_FROM_ENV" }}` }, "spec.template.destination.s3.endpoint", `"env" not defined`},
		"expandenv undefined": {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = `{{ expandenv "$HOME" }}` }, "spec.template.destination.s3.key", `"expandenv" not defined`},
		"unknown function":    {func(s *strategyv1alpha1.EtcdS3Template) { s.CredentialsSecretRef.Name = "{{ getHostByName .x }}" }, "spec.template.destination.s3.credentialsSecretRef.name", "getHostByName"},
		"required fails":      {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = `{{ required "set the bucket parameter" "" }}` }, "spec.template.destination.s3.bucket", "set the bucket parameter"},
		"parse error":         {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "{{ .Parameters.bucket " }, "spec.template.destination.s3.bucket", "does not parse"},
	} {
		t.Run(name, func(t *testing.T) {
			s3 := valid()
			tc.mutate(&s3)
			_, err := Render(tmpl(s3), Context{Application: app})
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %q, want it to mention %q", err, tc.text)
			}
			if strings.Contains(err.Error(), os.Getenv("SECRET_FROM_ENV")) {
				t.Fatal("the environment leaked into the error")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if err := Validate(valid(), Options{}); err != nil {
		t.Fatalf("valid destination rejected: %v", err)
	}
	for name, tc := range map[string]struct {
		mutate func(*strategyv1alpha1.EtcdS3Template)
		field  string
	}{
		"bucket upper case":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "Backups" }, "bucket"},
		"bucket too short":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "ab" }, "bucket"},
		"bucket too long":    {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = strings.Repeat("a", 64) }, "bucket"},
		"bucket double dot":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "a..b" }, "bucket"},
		"bucket ip":          {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "10.0.0.1" }, "bucket"},
		"bucket no value":    {func(s *strategyv1alpha1.EtcdS3Template) { s.Bucket = "<no value>" }, "bucket"},
		"endpoint no scheme": {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "s3.example.com" }, "endpoint"},
		"endpoint ftp":       {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "ftp://s3.example.com" }, "endpoint"},
		"endpoint no host":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "https://" }, "endpoint"},
		"endpoint userinfo":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "https://ak:sk@s3.example.com" }, "endpoint"},
		"key leading slash":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "/tenants/" }, "key"},
		"key dotdot":         {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "tenants/../other/" }, "key"},
		"key control char":   {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = "a\nb" }, "key"},
		"key too long":       {func(s *strategyv1alpha1.EtcdS3Template) { s.Key = strings.Repeat("k/", 500) }, "key"},
		"endpoint http":      {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "http://s3.example.com" }, "endpoint"},
		"endpoint loopback":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "https://127.0.0.1:9000" }, "endpoint"},
		"endpoint metadata":  {func(s *strategyv1alpha1.EtcdS3Template) { s.Endpoint = "https://169.254.169.254" }, "endpoint"},
		"region spaces":      {func(s *strategyv1alpha1.EtcdS3Template) { s.Region = "us east" }, "region"},
		"secret upper":       {func(s *strategyv1alpha1.EtcdS3Template) { s.CredentialsSecretRef.Name = "Creds" }, "credentialsSecretRef.name"},
		"secret empty":       {func(s *strategyv1alpha1.EtcdS3Template) { s.CredentialsSecretRef.Name = "" }, "credentialsSecretRef.name"},
	} {
		t.Run(name, func(t *testing.T) {
			s3 := valid()
			tc.mutate(&s3)
			err := Validate(s3, Options{})
			if err == nil || !strings.Contains(err.Error(), "spec.template.destination.s3."+tc.field+":") {
				t.Fatalf("err = %v, want an error on %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "ak:sk") {
				t.Fatal("endpoint credentials leaked into the error")
			}
		})
	}
}

// Templates range over tenant-controlled metadata: recursion, deep loops,
// runaway output and oversized keys are refused with a field error.
func TestRenderIsBounded(t *testing.T) {
	labels := map[string]any{}
	for i := range 200 {
		labels[strings.Repeat("l", 10)+string(rune('a'+i%26))+strings.Repeat("x", i)] = strings.Repeat("v", 60)
	}
	big := map[string]any{"metadata": map[string]any{"namespace": "t", "name": "etcd", "labels": labels}}
	for name, tc := range map[string]struct {
		key  string
		text string
	}{
		"define":       {`{{ define "x" }}a{{ end }}p/`, "sub-templates"},
		"recursion":    {`{{ template "field" . }}`, "another template"},
		"deep ranges":  {`{{ range .Application.metadata.labels }}{{ range $.Application.metadata.labels }}{{ range $.Application.metadata.labels }}x{{ end }}{{ end }}{{ end }}`, "nests more than"},
		"output":       {`{{ range .Application.metadata.labels }}{{ . }}{{ end }}`, "renders to more than"},
		"huge literal": {strings.Repeat("a", MaxTemplateBytes) + "{{ .Parameters }}", "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			s3 := valid()
			s3.Key = tc.key
			_, err := Render(tmpl(s3), Context{Application: big})
			if err == nil || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), "spec.template.destination.s3.key") {
				t.Fatalf("err = %v, want %q on the key field", err, tc.text)
			}
		})
	}
	// Two nested loops over bounded data are allowed.
	s3 := valid()
	s3.Key = `{{ range $k, $v := .Application.metadata.labels }}{{ if eq $k "none" }}{{ range $.Application.metadata.labels }}{{ end }}{{ end }}{{ end }}p/`
	if got, err := Render(tmpl(s3), Context{Application: big}); err != nil || got.Key != "p/" {
		t.Fatalf("Render = %q, %v", got.Key, err)
	}
}
