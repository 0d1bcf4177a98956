package operator

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	bolt "go.etcd.io/bbolt"
)

func TestCheckBoltLayoutRefusesTornFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	db, err := bolt.Open(whole, 0o600, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("key"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := b.Put([]byte{byte(i >> 8), byte(i)}, make([]byte, 100)); err != nil {
				return err
			}
		}
		return nil
	})).To(Succeed())
	g.Expect(db.Close()).To(Succeed())
	data, err := os.ReadFile(whole)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(checkBoltLayout(whole)).To(Succeed())

	withTrailer := filepath.Join(dir, "trailer.db")
	g.Expect(os.WriteFile(withTrailer, append(append([]byte(nil), data...), make([]byte, hashTrailer)...), 0o600)).To(Succeed())
	g.Expect(checkBoltLayout(withTrailer)).To(Succeed())

	torn := filepath.Join(dir, "torn.db")
	g.Expect(os.WriteFile(torn, data[:len(data)/2/4096*4096], 0o600)).To(Succeed())
	g.Expect(checkBoltLayout(torn)).To(MatchError(ContainSubstring("torn or truncated")))

	junk := filepath.Join(dir, "junk.db")
	g.Expect(os.WriteFile(junk, []byte("not a database at all, not at all"), 0o600)).To(Succeed())
	g.Expect(checkBoltLayout(junk)).To(MatchError(ContainSubstring("no bolt database header")))
}
