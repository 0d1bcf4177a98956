package strategytemplate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"text/template"
)

// funcs is the whole function set templates may call besides text/template's
// builtins. Every function is pure: no environment, network, files, clock or
// randomness, so a template renders the same for the same inputs and cannot
// read the controller's secrets.
var funcs = template.FuncMap{
	"default":    defaultValue,
	"required":   required,
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"trim":       strings.TrimSpace,
	"trimPrefix": func(prefix, s string) string { return strings.TrimPrefix(s, prefix) },
	"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
	"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
	"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
	"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
	"contains":   func(substr, s string) bool { return strings.Contains(s, substr) },
	"trunc":      trunc,
	"sha256sum":  func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) },
	"join":       func(sep string, parts ...string) string { return strings.Join(parts, sep) },
}

// defaultValue returns value unless it is empty, then def. Used as
// {{ default "x" .Parameters.prefix }}; with missingkey=error a missing map
// key still fails, so use {{ default "x" (index .Parameters "prefix") }} for
// optional parameters.
func defaultValue(def any, value ...any) any {
	if len(value) == 0 || value[0] == nil || value[0] == "" {
		return def
	}
	return value[0]
}

// required fails the render with msg when value is empty.
func required(msg string, value any) (any, error) {
	if value == nil || value == "" {
		return nil, errors.New(msg)
	}
	return value, nil
}

func trunc(n int, s string) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("trunc: negative length %d", n)
	}
	if len(s) <= n {
		return s, nil
	}
	return s[:n], nil
}
