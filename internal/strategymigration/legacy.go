// Package strategymigration moves the platform admin's settings that an
// Etcd strategy holds in fields of the driver's earlier strategy CRD
// (spec.deletionPolicy, allowHTTPEndpoint, credentialBroker, inspection)
// to the StrategyPolicy of its name, where they live now. Helm never
// upgrades a chart's crds/, so on a cluster upgraded in place the earlier
// CRD still serves them; Cozystack's strategy CRD, which replaces it, does
// not. Like the Plans' migration (planpolicy.Migrate, done by
// internal/plankeeper) it reads each strategy once, unstructured (the
// typed strategy has no such fields), writes the new place and says so in
// an Event; where the new place already says something else it changes
// nothing and says that, naming both.
package strategymigration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/textlimit"
)

// legacyKeys are the strategy's earlier spec fields; each is the
// StrategyPolicy field of the same name and shape.
var legacyKeys = []string{"deletionPolicy", "allowHTTPEndpoint", "credentialBroker", "inspection"}

// settings name each setting the earlier fields could hold, as an
// effective policy says it: a field is compared by what it means once
// defaulted, so an earlier CRD's stored default (deletionPolicy Retain) is
// no setting, and a policy that leaves a field unset agrees with a
// strategy that set it to the default.
var settings = []struct {
	field string
	of    func(strategypolicy.Policy) string
}{
	{"spec.deletionPolicy", func(p strategypolicy.Policy) string { return string(p.DeletionPolicy) }},
	{"spec.allowHTTPEndpoint", func(p strategypolicy.Policy) string { return strconv.FormatBool(p.AllowHTTPEndpoint) }},
	{"spec.credentialBroker", func(p strategypolicy.Policy) string { return broker(p.CredentialBroker) }},
	{"spec.inspection.disabled", func(p strategypolicy.Policy) string { return strconv.FormatBool(p.Inspection.Disabled) }},
	{"spec.inspection.maxResourceDropPercent", func(p strategypolicy.Policy) string { return itoa(p.Inspection.MaxResourceDropPercent) }},
	{"spec.inspection.minDroppedObjects", func(p strategypolicy.Policy) string { return itoa(p.Inspection.MinDroppedObjects) }},
	{"spec.inspection.maxNamespacesGone", func(p strategypolicy.Policy) string { return itoa(p.Inspection.MaxNamespacesGone) }},
}

func itoa(v int32) string { return strconv.FormatInt(int64(v), 10) }

// broker says a credential broker in one line.
func broker(b *driverv1alpha1.CredentialBroker) string {
	if b == nil {
		return "none"
	}
	out, _ := json.Marshal(b)
	return string(out)
}

// Setting is one setting a strategy holds in an earlier field.
type Setting struct {
	// Field is its path on the strategy (spec.inspection.minDroppedObjects).
	Field string
	// Value is what it says; Policy what the StrategyPolicy says (set only
	// in a conflict).
	Value, Policy string
}

// Legacy is what a strategy's earlier fields say.
type Legacy struct {
	// Spec holds the earlier fields as a StrategyPolicy's spec (the same
	// names and shapes), for a policy created from them.
	Spec driverv1alpha1.StrategyPolicySpec
	// Settings are those that differ from the defaults, in a fixed order;
	// none means there is nothing to move.
	Settings []Setting
}

// Read decodes the earlier fields of spec (an unstructured strategy's) for
// the strategy named name. Fields that are not the earlier CRD's shape are
// an error: nothing is moved from what cannot be read.
func Read(name string, spec map[string]any) (Legacy, error) {
	old := map[string]any{}
	for _, k := range legacyKeys {
		if v, ok := spec[k]; ok && v != nil {
			old[k] = v
		}
	}
	if len(old) == 0 {
		return Legacy{}, nil
	}
	raw, err := json.Marshal(old)
	if err != nil {
		return Legacy{}, err
	}
	var l Legacy
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l.Spec); err != nil {
		return Legacy{}, fmt.Errorf("the earlier fields of Etcd strategy %q cannot be read as a StrategyPolicy's: %w", name, err)
	}
	was := strategypolicy.Effective(name, &driverv1alpha1.StrategyPolicy{Spec: l.Spec})
	def := strategypolicy.Effective(name, nil)
	for _, s := range settings {
		if v := s.of(was); v != s.of(def) {
			l.Settings = append(l.Settings, Setting{Field: s.field, Value: v})
		}
	}
	return l, nil
}

// Empty reports whether the strategy holds no setting to move.
func (l Legacy) Empty() bool { return len(l.Settings) == 0 }

// Conflicts are the settings sp says otherwise, with what it says.
func (l Legacy) Conflicts(sp *driverv1alpha1.StrategyPolicy) []Setting {
	now := strategypolicy.Effective(sp.Name, sp)
	var out []Setting
	for _, s := range l.Settings {
		for _, f := range settings {
			if f.field == s.Field && f.of(now) != s.Value {
				s.Policy = f.of(now)
				out = append(out, s)
			}
		}
	}
	return out
}

// Said is the settings as a list for a message: field (value), ...
func Said(ss []Setting) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", s.Field, textlimit.Value(s.Value))
	}
	return b.String()
}

// Disagreements is the conflicts as a list for a message.
func Disagreements(ss []Setting) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s is %q but the StrategyPolicy says %q", s.Field, textlimit.Value(s.Value), textlimit.Value(s.Policy))
	}
	return b.String()
}
