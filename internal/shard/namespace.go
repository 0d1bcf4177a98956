package shard

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nameAlphabet gives each character of a namespace name (a DNS label) its
// value, by its place; the admission policy's CEL uses the same string.
const nameAlphabet = "-0123456789abcdefghijklmnopqrstuvwxyz"

// Of is the shard of namespace ns among count shards: the namespace's own
// Label when it is a number below count, else the sum of the values of its
// name's characters (nameAlphabet) modulo count. Admission CEL has no hash
// function and cannot read a namespace's UID (it declares metadata.UID,
// the object holds metadata.uid), so the name, which never changes, is the
// input: consecutive names (tenant-1, tenant-2...) go round the shards, but
// names that are anagrams of each other share one; pin a namespace with
// its Label to move it. The chart's admission policy
// (charts/etcd-backup-driver/templates/sharding.yaml) computes the same.
func Of(ns metav1.Object, count int) int {
	if count <= 1 {
		return 0
	}
	if v, ok := ns.GetLabels()[Label]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < count && strconv.Itoa(n) == v {
			return n
		}
	}
	sum := 0
	for _, c := range ns.GetName() {
		sum += strings.IndexRune(nameAlphabet, c)
	}
	if sum < 0 {
		return 0
	}
	return sum % count
}
