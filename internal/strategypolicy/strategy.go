package strategypolicy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// Strategy is an Etcd strategy (where snapshots go, as Cozystack's kind
// says) with its effective policy (what the platform admin set for it).
type Strategy struct {
	*strategyv1alpha1.Etcd
	Policy Policy
}

// Get reads the Etcd strategy named name and its policy through r. A
// strategy that does not exist is the client's NotFound error.
func Get(ctx context.Context, r client.Reader, name string) (Strategy, error) {
	s := &strategyv1alpha1.Etcd{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		return Strategy{}, err
	}
	p, err := Of(ctx, r, name)
	return Strategy{Etcd: s, Policy: p}, err
}

// List reads every Etcd strategy with its policy through r.
func List(ctx context.Context, r client.Reader) ([]Strategy, error) {
	var strategies strategyv1alpha1.EtcdList
	if err := r.List(ctx, &strategies); err != nil {
		return nil, fmt.Errorf("list Etcd strategies: %w", err)
	}
	var policies driverv1alpha1.StrategyPolicyList
	if err := r.List(ctx, &policies); err != nil {
		return nil, fmt.Errorf("list StrategyPolicies: %w", err)
	}
	byName := make(map[string]*driverv1alpha1.StrategyPolicy, len(policies.Items))
	for i := range policies.Items {
		byName[policies.Items[i].Name] = &policies.Items[i]
	}
	out := make([]Strategy, len(strategies.Items))
	for i := range strategies.Items {
		s := &strategies.Items[i]
		out[i] = Strategy{Etcd: s, Policy: Effective(s.Name, byName[s.Name])}
	}
	return out, nil
}

// ErrInvalid means a StrategyPolicy and its Etcd strategy do not go
// together: nothing the policy governs is done through the strategy until
// one of them is fixed.
var ErrInvalid = errors.New("the StrategyPolicy does not go with its Etcd strategy")

// Check returns ErrInvalid (wrapped, naming the StrategyPolicy and what to
// change) when the policy brokers per-tenant keys and the strategy
// templates its bucket or endpoint: one tenant key covers one bucket at one
// endpoint, and a key re-scoped to whatever a template renders could reach
// another tenant's bucket. Before the settings left the strategy kind,
// CEL on the strategy refused that; the rule now spans two objects, so the
// driver checks it.
func (s Strategy) Check() error {
	if !s.Policy.Brokered() || s.Etcd == nil || s.Spec.Template.Destination.S3 == nil {
		return nil
	}
	d := s.Spec.Template.Destination.S3
	var templated []string
	for _, f := range []struct{ name, value string }{{"bucket", d.Bucket}, {"endpoint", d.Endpoint}} {
		if strings.Contains(f.value, "{{") {
			templated = append(templated, "spec.template.destination.s3."+f.name)
		}
	}
	if len(templated) == 0 {
		return nil
	}
	return fmt.Errorf("%w: StrategyPolicy %q sets credentialBroker, but Etcd strategy %q templates %s; with brokered keys the bucket and endpoint are literal (one tenant key covers one bucket): make them literal in the strategy, or delete the StrategyPolicy to stop brokering (its tenant keys are removed)",
		ErrInvalid, s.Name, s.Name, strings.Join(templated, " and "))
}
