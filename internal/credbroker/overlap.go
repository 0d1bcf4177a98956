package credbroker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
)

// ErrOverlappingScopes means a tenant's prefix may hold objects of another
// Etcd strategy's tenants: it starts another brokered strategy's prefix
// root on the same bucket (namespace "tenants" of a strategy with root "",
// against a strategy with root "tenants/"), or a strategy that brokers no
// keys may render its keys into it. That tenant is given no key.
var ErrOverlappingScopes = errors.New("the tenant's prefix may hold another Etcd strategy's objects")

// Placement is what the overlap rule reads of one Etcd strategy: where its
// objects go (bucket, endpoint and key, as templates) and its broker
// settings, nil when it brokers no keys (placementOf reads them: the
// destination from the strategy, the broker from its StrategyPolicy).
type Placement struct {
	Strategy string
	Bucket   string
	Endpoint string
	Key      string
	Broker   *driverv1alpha1.CredentialBroker
}

// placementOf reads strategy's placement.
func placementOf(strategy strategypolicy.Strategy) Placement {
	p := Placement{Strategy: strategy.Name, Broker: strategy.Policy.CredentialBroker}
	if d := strategy.Spec.Template.Destination.S3; d != nil {
		p.Bucket, p.Endpoint, p.Key = d.Bucket, d.Endpoint, d.Key
	}
	return p
}

// scope is what the key of a brokered placement's tenant in namespace
// reaches.
func (p Placement) scope(namespace string) Scope {
	root := ""
	if p.Broker != nil {
		root = p.Broker.PrefixRoot
	}
	return Scope{Bucket: p.Bucket, Prefix: root + namespace + "/"}
}

// overlapping is the one rule: the strategy among all, other than self,
// whose objects the prefix of self's tenant in namespace may hold, with
// why; nil when there is none. Brokered or not, every strategy on the same
// bucket counts (a templated bucket may be any bucket).
//
//   - A brokered strategy keeps each tenant's objects under
//     <its root><namespace>/. Roots are "" or end with "/", and namespaces
//     hold no "/", so only a prefix that starts the other's root holds
//     another's tenants (the other's own tenants are refused the reverse).
//     Endpoints are not compared: two URLs may name one service, and
//     refusing one tenant too many is the safe side.
//   - A strategy that brokers no keys confines nothing: its objects start
//     with its key's literal text (up to the first template action) and go
//     on with whatever the template renders from names tenants choose.
//     They may lie under the prefix when either of the two starts the
//     other. Such a key often starts with an action, which would overlap
//     every tenant: the strategy counts only when it also names the same
//     service (host and port; a templated endpoint names any), so that a
//     bucket of the same name on another S3 service refuses no one.
func overlapping(self Placement, namespace string, all []Placement) (*Placement, string) {
	scope := self.scope(namespace)
	for i := range all {
		other := &all[i]
		if other.Strategy == self.Strategy || !templatedOr(other.Bucket, func(b string) bool { return b == scope.Bucket }) {
			continue
		}
		if other.Broker != nil {
			if strings.HasPrefix(other.Broker.PrefixRoot, scope.Prefix) {
				return other, fmt.Sprintf("which holds every tenant of Etcd strategy %q (prefix root %q); give the strategies prefix roots of which neither starts the other, or the same one",
					other.Strategy, other.Broker.PrefixRoot)
			}
			continue
		}
		if !templatedOr(other.Endpoint, func(e string) bool { return sameService(e, self.Endpoint) }) {
			continue
		}
		lit := literalPrefix(other.Key)
		if strings.HasPrefix(lit, scope.Prefix) || strings.HasPrefix(scope.Prefix, lit) {
			return other, fmt.Sprintf("where Etcd strategy %q, which brokers no keys, may write its tenants' snapshots (its key %q starts with %q); give that strategy a key that starts with a literal prefix outside every brokered tenant's, or another bucket",
				other.Strategy, other.Key, lit)
		}
	}
	return nil, ""
}

// templatedOr: text is a template (it may render to anything), or same
// holds for it.
func templatedOr(text string, same func(string) bool) bool {
	return strings.Contains(text, "{{") || same(text)
}

// literalPrefix is the text every key rendered from template key starts
// with: up to its first action, less the spaces a "{{-" trims.
func literalPrefix(key string) string {
	i := strings.Index(key, "{{")
	if i < 0 {
		return key
	}
	lit := key[:i]
	if strings.HasPrefix(key[i:], "{{-") {
		lit = strings.TrimRightFunc(lit, unicode.IsSpace)
	}
	return lit
}

// sameService reports whether two endpoint URLs name one host and port
// (the scheme's default when none is given; case, a trailing dot and the
// path aside). URLs that do not parse are taken as the same: the safe side.
func sameService(a, b string) bool {
	ha, oka := hostPort(a)
	hb, okb := hostPort(b)
	return !oka || !okb || ha == hb
}

func hostPort(endpoint string) (string, bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port), true
}

// refuseOverlap returns ErrOverlappingScopes when the tenant prefix of
// strategy in namespace may hold another strategy's objects, whichever of
// the two was made or changed first.
func (b *Broker) refuseOverlap(ctx context.Context, strategy strategypolicy.Strategy, namespace string) error {
	all, err := b.placements(ctx)
	if err != nil {
		return err
	}
	self := placementOf(strategy)
	if _, why := overlapping(self, namespace, all); why != "" {
		return fmt.Errorf("%w: namespace %s of Etcd strategy %q would get %s, %s", ErrOverlappingScopes, namespace, strategy.Name, self.scope(namespace), why)
	}
	return nil
}

// placements reads the placement of every Etcd strategy.
func (b *Broker) placements(ctx context.Context) ([]Placement, error) {
	all, err := strategypolicy.List(ctx, b.Client)
	if err != nil {
		return nil, err
	}
	out := make([]Placement, 0, len(all))
	for i := range all {
		out = append(out, placementOf(all[i]))
	}
	return out, nil
}
