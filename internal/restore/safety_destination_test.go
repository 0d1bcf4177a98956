package restore

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
)

// safetyWorld is a restore about to take its safety snapshot of a Backup
// whose object is tenant-a/etcd/b-aaaaa.db.
func safetyWorld() *observation {
	o := world()
	o.capture = nil
	o.source.Key, o.source.Prefix = "tenant-a/etcd/b-aaaaa.db", "tenant-a/etcd/"
	o.verdict = provenance.Verdict{Verified: true, Version: "v2", Facts: provenance.Facts{Application: testApp,
		Bucket: o.source.Bucket, Endpoint: o.source.Endpoint, SecretName: o.source.SecretName,
		Key: o.source.Key, Prefix: o.source.Prefix}}
	withCondition(o, backupsv1alpha1.RestoreConditionArtifactVerified, metav1.ConditionTrue, backupsv1alpha1.ReasonArtifactVerified,
		"ok ["+fingerprint(o)+"]", t0)
	o.cluster.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha2.ClusterConditionAvailable, Status: metav1.ConditionTrue}}
	return o
}

// A tenant edits the recorded key prefix of a Backup (unsigned by v1, and
// never checked by admission) to another tenant's directory: the driver
// would write, and sign, its safety snapshot there. The safety snapshot
// goes where the signed facts say, whatever the Backup records now.
func TestSafetySnapshotIgnoresAnEditedPrefix(t *testing.T) {
	for name, mutate := range map[string]func(o *observation){
		"verified v1 Backup, prefix edited": func(o *observation) {
			o.verdict.Version = "v1" // Verify gives the signed key's directory
			o.source.Prefix = "tenant-b/etcd/"
		},
		"unverified Backup admitted by its key, prefix edited": func(o *observation) {
			o.verdict = provenance.Verdict{Reason: provenance.ReasonUnsigned, Facts: provenance.Facts{Prefix: "tenant-b/etcd/"}}
			o.source.Prefix = "tenant-b/etcd/"
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := safetyWorld()
			mutate(o)
			d := decide(o, 30*time.Minute)
			if d.state != stateCreateSafetySnapshot {
				t.Fatalf("decided %v (%s), want the safety snapshot", d.state, d.message)
			}
			dest := safetyDestination(o)
			if dest == nil || dest.Key != "tenant-a/etcd/" || dest.Bucket != testBucket || dest.CredentialsSecretRef.Name != testSecret {
				t.Fatalf("safety snapshot goes to %+v, want bucket %s under tenant-a/etcd/", dest, testBucket)
			}
		})
	}
}

// What the safety snapshot's destination is made of is validated like a
// rendered destination before anything is created from it: an admitted
// unverified Backup's region is not something admission compares.
func TestSafetyDestinationIsValidatedLikeARenderedOne(t *testing.T) {
	o := safetyWorld()
	o.verdict = provenance.Verdict{Reason: provenance.ReasonUnsigned}
	o.source.Region = "eu-1\nx-amz-meta: forged"
	o.safetyDestErr = checkSafetyDestination(o, endpointpolicy.Policy{})
	d := decide(o, 30*time.Minute)
	if d.state != stateConclude || d.reason != backupsv1alpha1.ReasonSafetySnapshotFailed {
		t.Fatalf("decided %v %s (%s), want the job failed before any snapshot", d.state, d.reason, d.message)
	}
	if good := safetyWorld(); checkSafetyDestination(good, endpointpolicy.Policy{}) != nil {
		t.Fatalf("a valid destination is refused: %v", checkSafetyDestination(good, endpointpolicy.Policy{}))
	}
}
