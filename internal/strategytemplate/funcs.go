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
	"replace":    replace,
	"hasPrefix":  func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
	"hasSuffix":  func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
	"contains":   func(substr, s string) bool { return strings.Contains(s, substr) },
	"trunc":      trunc,
	"sha256sum":  func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) },
	"join":       join,
	// printf replaces the builtin: a width or precision in its format
	// would allocate without bound before the output limit is reached.
	"printf": printf,
}

var errIntermediate = fmt.Errorf("a function's result would exceed %d bytes", MaxIntermediateBytes)

func replace(old, new, s string) (string, error) {
	if old == "" {
		return "", errors.New("replace: the string to replace is empty")
	}
	if n := strings.Count(s, old); len(s)+n*(len(new)-len(old)) > MaxIntermediateBytes {
		return "", errIntermediate
	}
	return strings.ReplaceAll(s, old, new), nil
}

func join(sep string, parts ...string) (string, error) {
	n := len(sep) * len(parts)
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxIntermediateBytes {
		return "", errIntermediate
	}
	return strings.Join(parts, sep), nil
}

// printf is fmt.Sprintf without '*' widths and with every number in a verb
// (width, precision, argument index) at most MaxOutputBytes.
func printf(format string, args ...any) (string, error) {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		n := 0
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				return "", errors.New("printf: '*' widths are not allowed")
			}
			if c < '0' || c > '9' {
				n = 0
				if c == '%' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
					break // the verb ends the directive
				}
				continue
			}
			if n = n*10 + int(c-'0'); n > MaxOutputBytes {
				return "", fmt.Errorf("printf: widths and precisions above %d are not allowed", MaxOutputBytes)
			}
		}
	}
	out := fmt.Sprintf(format, args...)
	if len(out) > MaxIntermediateBytes {
		return "", errIntermediate
	}
	return out, nil
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
