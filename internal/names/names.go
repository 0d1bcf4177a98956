// Package names derives Kubernetes names and label values from names a user
// chose. A user's name may be up to 253 characters and contain dots; a label
// value or a DNS label may not. Every derived value here is deterministic,
// valid, within its limit, and unique for distinct inputs: when the input
// does not fit as it is, a readable prefix is kept and a hash of the whole
// input is appended.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits of the Kubernetes name kinds.
const (
	// MaxLabelValue is the longest label value.
	MaxLabelValue = validation.LabelValueMaxLength
	// MaxDNSLabel is the longest DNS-1123 label (most names, Job names,
	// anything that becomes a label or a hostname).
	MaxDNSLabel = validation.DNS1123LabelMaxLength
	// MaxSubdomain is the longest DNS-1123 subdomain (ConfigMap, Lease and
	// most object names).
	MaxSubdomain = validation.DNS1123SubdomainMaxLength
)

// hashLen is how many hex digits of sha256 make a value unique.
const hashLen = 10

// Hash is a short, stable hex digest of the parts, joined unambiguously.
func Hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:hashLen]
}

// LabelValue is v when it is a valid label value, otherwise a valid one
// derived from it: its label-safe characters, cut to fit, then a hash of v.
// Selecting by a derived value means deriving it the same way.
func LabelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	return fit(sanitize(v, true), Hash(v), MaxLabelValue)
}

// DNSLabel joins parts with "-" into a DNS-1123 label of at most max
// characters (max ≤ 63). Dots and other characters a label may not hold
// become "-". When the result would not fit, or differs from the plain
// join, a hash of the parts keeps it unique.
func DNSLabel(max int, parts ...string) string {
	max = min(max, MaxDNSLabel)
	joined := strings.Join(parts, "-")
	clean := sanitize(strings.ToLower(joined), false)
	if clean == joined && len(clean) <= max && len(validation.IsDNS1123Label(clean)) == 0 {
		return clean
	}
	return fit(clean, Hash(parts...), max)
}

// Subdomain joins parts with "-" into a DNS-1123 subdomain of at most max
// characters (max ≤ 253), hashing like DNSLabel when it must shorten.
func Subdomain(max int, parts ...string) string {
	max = min(max, MaxSubdomain)
	joined := strings.Join(parts, "-")
	if len(joined) <= max && len(validation.IsDNS1123Subdomain(joined)) == 0 {
		return joined
	}
	return fit(sanitize(strings.ToLower(joined), false), Hash(parts...), max)
}

// WithSuffix is base with "-<suffix>" appended, shortened (with a hash of
// base) so the whole is a DNS-1123 label of at most max characters. Use it
// for child names such as "<job>-<hash of uid>".
func WithSuffix(max int, base, suffix string) string {
	max = min(max, MaxDNSLabel)
	tail := "-" + suffix
	room := max - len(tail)
	clean := sanitize(strings.ToLower(base), false)
	if clean == base && len(clean) <= room && clean != "" {
		return clean + tail
	}
	return fit(clean, Hash(base), room) + tail
}

// fit is prefix cut so that prefix + "-" + hash fits max, with no leading or
// trailing separator; just the hash when no prefix remains.
func fit(prefix, hash string, max int) string {
	if len(hash) >= max {
		return hash[:max]
	}
	room := max - len(hash) - 1
	if len(prefix) > room {
		prefix = prefix[:room]
	}
	prefix = strings.Trim(prefix, "-._")
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}

// sanitize keeps lower-case alphanumerics and "-" (and, for label values,
// "_" and "."), replacing anything else with "-".
func sanitize(s string, label bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case label && (r >= 'A' && r <= 'Z' || r == '_' || r == '.'):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-._")
}
