package strategytemplate

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// A template that would run (practically) forever is refused before it
// runs, on the caller's goroutine: no goroutine outlives the render, so
// nothing keeps burning CPU after the render returned. The loops come from
// the template itself (a range over a number it makes up) or from a number
// the tenant writes into its application.
func TestRenderIsBoundedByWorkWithoutLeakingGoroutines(t *testing.T) {
	app := map[string]any{"metadata": map[string]any{"namespace": "t", "name": "etcd"},
		"spec": map[string]any{"replicas": int64(1) << 40}}
	before := runtime.NumGoroutine()
	for name, tc := range map[string]struct {
		key  string
		text string
	}{
		"range over a literal": {`{{ range 1000000000 }}{{ range 1000000000 }}{{ end }}{{ end }}p/`, "range over"},
		"range over a call":    {`{{ range (len .Application.metadata.name) }}{{ end }}p/`, "range over"},
		"tenant's number":      {`{{ range .Application.spec.replicas }}{{ end }}p/`, "steps"},
		"tenant's number, nested": {`{{ range $i := .Application.spec.replicas }}{{ range $.Application.spec.replicas }}{{ end }}{{ end }}p/`,
			"steps"},
		"printf width":   {`{{ printf "%099999999d" 1 }}`, "printf"},
		"printf star":    {`{{ printf "%*d" 99999999 1 }}`, "printf"},
		"replace blowup": {`{{ replace "" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" (printf "%2000d" 1) }}`, "replace"},
	} {
		t.Run(name, func(t *testing.T) {
			s3 := valid()
			s3.Key = tc.key
			start := time.Now()
			_, err := Render(tmpl(s3), Context{Application: app})
			if err == nil || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %q", err, tc.text)
			}
			if d := time.Since(start); d > 200*time.Millisecond {
				t.Fatalf("refused after %s, want before running", d)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines outlived their render", after-before)
	}
}
