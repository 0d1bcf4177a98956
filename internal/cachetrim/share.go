package cachetrim

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/intern"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/shard"
)

// shared holds one copy of each repeating value in the caches while some
// cached object holds it (see internal/intern): namespaces and the values
// of the driver's own keys, which a tenant can write on its Backups.
var shared = intern.New()

// knownKeys are the label and driverMetadata keys the driver writes, each
// with whether its values repeat across objects (a namespace, an
// application, a bucket) or are one object's own (a UID, a job name, a
// signature). A known key is replaced by the driver's constant, so no
// table holds keys; only the repeating values are shared, and keys a
// tenant invents, with their values, are left as decoded.
var knownKeys = map[string]bool{
	backupsv1alpha1.ApplicationNameLabel:    true,
	backupsv1alpha1.OwningJobNamespaceLabel: true,
	backupsv1alpha1.PlanNameLabel:           true,
	backupsv1alpha1.OwningJobNameLabel:      false,
	backupsv1alpha1.OwningJobUIDLabel:       false,
	backupsv1alpha1.SafetyBackupLabel:       false,
	backupsv1alpha1.RestoreJobUIDLabel:      false,
	backupsv1alpha1.RestoreJobNameLabel:     false,
	shard.Label:                             true,

	artifact.MetaBucket:          true,
	artifact.MetaEndpoint:        true,
	artifact.MetaKey:             true,
	artifact.MetaRegion:          true,
	artifact.MetaForcePathStyle:  true,
	artifact.MetaCredentialsName: true,
	artifact.MetaDeletionPolicy:  true,
	artifact.MetaEtcdVersion:     true,
	artifact.MetaSnapshotName:    false,
	artifact.MetaSnapshotUID:     false,
	artifact.MetaProvenance:      false,
}

// knownValues are the other strings the driver writes and that repeat in
// every object: its finalizers, its owners' kinds, the groups and kind of
// the Etcd application and strategy. Only these are replaced by the
// driver's constant; a tenant's own finalizers and owners are left alone.
var knownValues = constants(
	backupsv1alpha1.CleanupFinalizer,
	backupsv1alpha1.BackupCleanupFinalizer,
	backupsv1alpha1.BackupJobSnapshotFinalizer,
	backupsv1alpha1.SnapshotRecordFinalizer,
	backupsv1alpha1.RestoreFinalizer,
	backupsv1alpha1.GroupVersion.String(),
	"Backup",
	"BackupJob",
	"RestoreJob",
	"Etcd",
	backupsv1alpha1.DefaultApplicationAPIGroup,
	strategyv1alpha1.GroupVersion.Group,
)

// keyConstants maps each known key to the driver's own copy of it.
var keyConstants = func() map[string]string {
	m := make(map[string]string, len(knownKeys))
	for k := range knownKeys {
		m[k] = k
	}
	return m
}()

// constants maps each of vs to itself: looking a decoded string up
// yields the driver's copy, held for good at no cost per object.
func constants(vs ...string) map[string]string {
	m := make(map[string]string, len(vs))
	for _, v := range vs {
		m[v] = v
	}
	return m
}

// shareKnown returns the driver's copy of s when the driver wrote it
// (knownValues), else s.
func shareKnown(s string) string {
	if c, ok := knownValues[s]; ok {
		return c
	}
	return s
}

// shareMap shares the known keys of m and their repeating values. It
// returns m itself when it holds no known key.
func shareMap(m map[string]string) map[string]string {
	known := false
	for k := range m {
		if _, ok := knownKeys[k]; ok {
			known = true
			break
		}
	}
	if !known {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if repeats, ok := knownKeys[k]; ok {
			k = keyConstants[k]
			if repeats {
				v = shared.String(v)
			}
		}
		out[k] = v
	}
	return out
}

// shareMeta shares what repeats in an object's metadata: its namespace,
// known label keys and values, and the driver's finalizers and owners'
// kinds.
func shareMeta(o metav1.Object) {
	o.SetNamespace(shared.String(o.GetNamespace()))
	if l := o.GetLabels(); len(l) > 0 {
		o.SetLabels(shareMap(l))
	}
	f := o.GetFinalizers()
	for i := range f {
		f[i] = shareKnown(f[i])
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind = shareKnown(r.APIVersion), shareKnown(r.Kind)
	}
}

// shareRef shares a typed reference's group and kind when they are the
// Etcd application's or strategy's, the same in every Backup; the name is
// tenant-writable and left alone.
func shareRef(r *backupsv1alpha1.TypedLocalObjectReference) {
	if r.APIGroup != nil {
		if g, ok := knownValues[*r.APIGroup]; ok {
			r.APIGroup = &g
		}
	}
	r.Kind = shareKnown(r.Kind)
}

// shareConditions shares the Verified condition the driver writes on
// every Backup it recorded; other conditions are left as decoded.
func shareConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		if c.Type == backupsv1alpha1.BackupConditionVerified && c.Reason == backupsv1alpha1.BackupReasonProvenanceVerified &&
			c.Message == artifact.VerifiedMessage {
			c.Type, c.Reason, c.Message = backupsv1alpha1.BackupConditionVerified,
				backupsv1alpha1.BackupReasonProvenanceVerified, artifact.VerifiedMessage
		}
	}
}
