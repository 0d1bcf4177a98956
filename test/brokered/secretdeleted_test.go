package brokered

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
)

// A tenant deletes the driver's key Secret in its namespace: the next
// restore re-issues it before it checks the snapshot (before, it failed at
// once with CredentialsUnavailable), and so does the next backup; the key
// the Secret held before is not the one written back.
func TestDeletedBrokerSecretIsReissuedForRestoreAndBackup(t *testing.T) {
	tn := plat.NewTenant(t, "careless")
	b := tn.Backup("before", "")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.NS, Name: credbroker.SecretName(strategy)}}

	deleted := secretKeyID(tn)
	tn.G.Expect(env.Client.Delete(tn.Ctx, secret)).To(Succeed())
	rj := tn.Restore("after-delete", b.Name, "")
	tn.G.Expect(rj.Status.Phase).To(Equal(backupsv1alpha1.RestoreJobPhaseSucceeded), "restore: %+v", rj.Status)
	reissued := secretKeyID(tn)
	tn.G.Expect(reissued).NotTo(Equal(deleted))
	noPlatformKey(tn)

	tn.G.Expect(env.Client.Delete(tn.Ctx, secret)).To(Succeed())
	tn.Backup("again", "")
	tn.G.Expect(secretKeyID(tn)).NotTo(Equal(reissued))
}
