package shard

import (
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hexDigits maps a lowercase hex digit to its value by its position; the
// admission policy's CEL uses the same string, as CEL cannot parse hex.
const hexDigits = "0123456789abcdef"

// Of is the shard of namespace ns among count shards: the namespace's own
// Label when it is a number below count, else the first two hex digits of
// its UID (random in a version 4 UUID, 256 values: shards differ in size
// by at most one in 256/count) modulo count. The chart's admission policy
// (charts/etcd-backup-driver/templates/sharding.yaml) must compute the same.
func Of(ns metav1.Object, count int) int {
	if count <= 1 {
		return 0
	}
	if v, ok := ns.GetLabels()[Label]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < count && strconv.Itoa(n) == v {
			return n
		}
	}
	uid := strings.ToLower(string(ns.GetUID()))
	if len(uid) < 2 {
		return 0
	}
	hi, lo := strings.IndexByte(hexDigits, uid[0]), strings.IndexByte(hexDigits, uid[1])
	if hi < 0 || lo < 0 {
		return 0
	}
	return (hi*16 + lo) % count
}
