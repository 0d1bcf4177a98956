package restoreoptions

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Told remembers, per RestoreJob, the generation whose ignored change an
// Event told, where no status of the teller's records it (a dry run's
// status is the rehearsal's): each change is told once, and once more
// after a restart. Bounded: past toldCap entries it starts afresh. The
// zero value is ready to use.
type Told struct {
	mu sync.Mutex
	m  map[types.UID]int64
}

const toldCap = 4096

// First reports whether generation of uid is told for the first time.
func (t *Told) First(uid types.UID, generation int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g, ok := t.m[uid]; ok && g == generation {
		return false
	}
	if t.m == nil || len(t.m) >= toldCap {
		t.m = map[types.UID]int64{}
	}
	t.m[uid] = generation
	return true
}
