package tenantjobs

import backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"

// The labels every tenant Job (and its Pods) carries. A tenant can put
// them on Jobs of its own: they say what a Job claims to be, never that
// the driver made it (Mine says that). The driver's Job cache selects
// Jobs by PartOfLabel and keeps little of one bigger than the driver
// builds (cachetrim.Job, CacheBudget).
const (
	// PartOfLabel is PartOf on every Job the driver runs in a tenant's
	// namespace.
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOf      = "etcd-backup-driver"
	// NameLabel names what the Job does (etcd-staging, etcd-inspection,
	// etcd-rehearsal).
	NameLabel = "app.kubernetes.io/name"
)

// Labels are a tenant Job's: key (the staging, inspection or rehearsal
// label) set to the UID of the object it serves, NameLabel set to name,
// and PartOfLabel.
func Labels(key, uid, name string) map[string]string {
	return map[string]string{key: uid, NameLabel: name, PartOfLabel: PartOf}
}

// LabelKeys are the label keys the driver sets on its tenant Jobs and
// reads of them: the Job cache keeps only these of a Job it trims.
func LabelKeys() []string {
	return []string{PartOfLabel, NameLabel, backupsv1alpha1.StagingLabel, backupsv1alpha1.InspectionLabel, backupsv1alpha1.RehearsalLabel}
}

// CacheBudget bounds the size (JSON, without managed fields) of every Job
// the driver builds, with an extra CA bundle of caBytes handed to each of
// its containers: a few KiB of spec (S3 keys of up to 1 KiB in the
// staging's arguments twice), and the bundle in each of at most four
// containers. The Job cache keeps a bigger Job only trimmed
// (cachetrim.Job): a tenant's look-alike, not the driver's.
func CacheBudget(caBytes int) int { return 16<<10 + 4*caBytes }
