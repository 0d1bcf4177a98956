// Package inspection gives every Etcd Backup a manifest of what its
// snapshot holds. It keeps the inspection Job's spec (build.go) and the
// controller that drives it (controller.go, job.go, record.go, setup.go);
// the step the Job runs, `etcd-stage inspect`, is ./step.
//
// When a Backup is Ready and verified, the controller runs the inspection
// Job where the bytes are: in the Backup's namespace, with the Backup's
// credentials, from the driver's own image. The step streams the object
// from S3 with staging's checks (size, sha256, etcd's trailer) into an
// emptyDir, opens it as etcd's bolt database and reports what it holds in
// its termination message, which the controller reads strictly and checks
// against the exit code (tenantjobs.ReadReport). The controller signs the
// manifest together with the Backup's provenance and compares it with the
// previous good manifest of the same application and Plan
// (internal/contentdrop, by internal/manifest's one rule for a list that
// was cut). A drop marks the new Backup ContentDrop, raises an Event and
// holds the last good Backup from retention until a person removes the
// hold.
//
// The Job is hardened as every tenant Job is (tenantjobs.JobSpec). Its
// name is keyed with the driver's provenance key (tenantjobs.KeyedName),
// so a tenant cannot place a Job there first; a Job found under that name
// is still read only when it is exactly the one the driver builds, owned
// by this Backup (tenantjobs.Mine), and a Pod only when the Job controls
// it and it runs the Job's containers (tenantjobs.MyPod).
package inspection
