// Package shard splits the tenants among several driver replicas, the way
// Flux shards its controllers: every object the driver reconciles in a
// tenant namespace carries the label Label with the number of the shard
// that owns the namespace, each shard's caches hold only objects with its
// number, and each shard is its own Deployment with its own leader election.
//
// A namespace's shard is a pure function of the Namespace (Of): its own
// Label when that names a shard, else the sum of its name's characters
// modulo the shard count. The chart's MutatingAdmissionPolicy computes the
// same function in CEL and stamps tenant-created objects with it; the driver
// stamps what it creates (Stamping) and moves objects whose label is missing
// or stale to their shard (Sweeper). Shard 0 also holds every object whose
// label names no shard, so nothing is left unowned while they wait to move.
package shard

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Label is the shard label: on tenant objects, the number of the shard
// that reconciles them; on a Namespace, set by an admin, the shard its
// objects go to (overriding its name's).
const Label = "sharding.etcd-backup-driver.io/shard"

// Shard is one replica set's share: Index of Count shards. The zero value
// and Count 1 mean unsharded: one shard owns everything.
type Shard struct {
	Index int
	Count int
}

// Enabled reports whether there are several shards.
func (s Shard) Enabled() bool { return s.Count > 1 }

// Validate checks the index is one of the shards.
func (s Shard) Validate() error {
	if s.Count < 0 || (s.Count <= 1 && s.Index != 0) || (s.Count > 1 && (s.Index < 0 || s.Index >= s.Count)) {
		return fmt.Errorf("--shard=%d is not one of --shards=%d (0 to %d)", s.Index, s.Count, max(s.Count-1, 0))
	}
	return nil
}

// Value is the label value of this shard's objects.
func (s Shard) Value() string { return strconv.Itoa(s.Index) }

// Selector selects the objects this shard reconciles: those labelled with
// its number and, for shard 0, also those whose label is missing or names
// no shard (created before the admission policy, or labelled for a shard
// count that no longer holds), so that every object has exactly one owner.
// Unsharded, it selects everything.
func (s Shard) Selector() labels.Selector {
	if !s.Enabled() {
		return labels.Everything()
	}
	var req *labels.Requirement
	var err error
	if s.Index == 0 {
		others := make([]string, 0, s.Count-1)
		for i := 1; i < s.Count; i++ {
			others = append(others, strconv.Itoa(i))
		}
		// notin also matches objects without the label.
		req, err = labels.NewRequirement(Label, selection.NotIn, others)
	} else {
		req, err = labels.NewRequirement(Label, selection.Equals, []string{s.Value()})
	}
	if err != nil {
		panic(fmt.Sprintf("shard selector: %v", err)) // label and values are ours and valid
	}
	return labels.NewSelector().Add(*req)
}

// Owns reports whether an object with these labels is this shard's (the
// same rule as Selector).
func (s Shard) Owns(objLabels map[string]string) bool {
	return s.Selector().Matches(labels.Set(objLabels))
}
