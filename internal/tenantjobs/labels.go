package tenantjobs

// The labels every tenant Job (and its Pods) carries. A tenant can put
// them on Jobs of its own: they say what a Job claims to be, never that
// the driver made it (Mine says that). The driver's Job cache selects
// Jobs by PartOfLabel and keeps little of each (cachetrim.Job).
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
