package shard

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every label value, present or not, has exactly one owning shard; shard
// 0 takes what names no shard.
func TestEveryObjectHasOneShard(t *testing.T) {
	g := NewWithT(t)
	const count = 3
	for _, l := range []map[string]string{nil, {Label: "0"}, {Label: "1"}, {Label: "2"}, {Label: "3"}, {Label: "x"}, {"other": "1"}} {
		owners := []int{}
		for i := range count {
			if (Shard{Index: i, Count: count}).Owns(l) {
				owners = append(owners, i)
			}
		}
		g.Expect(owners).To(HaveLen(1), "labels %v", l)
		if v, ok := l[Label]; ok && (v == "1" || v == "2") {
			g.Expect(owners[0]).To(Equal(int(v[0] - '0')))
		} else {
			g.Expect(owners[0]).To(BeZero(), "labels %v", l)
		}
	}
	g.Expect(Shard{}.Owns(map[string]string{Label: "5"})).To(BeTrue(), "unsharded owns everything")
}

func TestOf(t *testing.T) {
	ns := func(name string, labels map[string]string) metav1.Object {
		return &metav1.ObjectMeta{Name: name, Labels: labels}
	}
	for _, tc := range []struct {
		ns    metav1.Object
		count int
		want  int
	}{
		{ns("tenant-a", nil), 1, 0},
		// t=30 e=15 n=24 a=11 -=0: 30+15+24+24+11+30+0+11 = 145
		{ns("tenant-a", nil), 3, 145 % 3},
		{ns("tenant-b", nil), 3, 146 % 3},
		{ns("tenant-a", map[string]string{Label: "2"}), 3, 2},
		{ns("tenant-a", map[string]string{Label: "3"}), 3, 145 % 3},
		{ns("tenant-a", map[string]string{Label: "02"}), 3, 145 % 3},
	} {
		if got := Of(tc.ns, tc.count); got != tc.want {
			t.Errorf("Of(%s %v, %d) = %d, want %d", tc.ns.GetName(), tc.ns.GetLabels(), tc.count, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Shard{}.Validate()).To(Succeed())
	g.Expect(Shard{Index: 2, Count: 3}.Validate()).To(Succeed())
	g.Expect(Shard{Index: 3, Count: 3}.Validate()).NotTo(Succeed())
	g.Expect(Shard{Index: 1, Count: 1}.Validate()).NotTo(Succeed())
	g.Expect(Shard{Index: -1, Count: 2}.Validate()).NotTo(Succeed())
}
