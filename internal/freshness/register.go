package freshness

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	registeredMu sync.Mutex
	registered   = map[prometheus.Registerer]*Collector{}
)

// Register registers c on reg in place of the Collector registered there
// before, if any. Tests and the sandbox build several managers in one
// process, all serving controller-runtime's one global registry; the
// newest manager's cache is the one that is running.
func Register(reg prometheus.Registerer, c *Collector) error {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	if prev, ok := registered[reg]; ok {
		reg.Unregister(prev)
		delete(registered, reg)
	}
	if err := reg.Register(c); err != nil {
		return err
	}
	registered[reg] = c
	return nil
}
