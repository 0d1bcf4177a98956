// Package operator is the sandbox's stand-in for the etcd-operator
// (etcd-operator.cozystack.io/v1alpha2, cozystack/etcd-operator), for
// machines with no kubelet. It runs against the operator's own CRDs and
// next to the real kube-controller-manager (garbage collector, Job
// controller, PVC protection), and reproduces the operator's observable
// contract wherever the driver's correctness depends on it; the
// conformance test (conformance_test.go) states each behaviour with the
// upstream file it comes from.
//
// EtcdCluster (cluster_controller.go):
//   - The first reconcile latches the spec into status.observed, sets a
//     cluster token and status.progressDeadline = now +
//     spec.progressDeadlineSeconds (600 by the CRD's default):
//     Progressing=True/InitialSnapshot.
//   - replicas 0 from the start is never bootstrapped: no member, no PVC,
//     Available=False/Paused.
//   - Otherwise a seed EtcdMember founds the cluster alone; only it carries
//     spec.bootstrap.restore. As soon as it answers MemberList the cluster
//     ID is latched: Available=True/ClusterDiscovered, readyMembers still 0.
//   - The other members are added one at a time, each registered with etcd
//     as a learner, started, and promoted once it has caught up.
//     readyMembers is recounted only when every member of the target
//     exists, with Available=True/QuorumHealthy when all are ready,
//     QuorumAvailable with a majority, Available=False/QuorumLost below.
//     Progressing=False/Reconciled clears the deadline.
//   - A target not reached by status.progressDeadline ends in
//     Available=False/BootstrapFailed when the cluster never formed (final:
//     delete and re-create it) or DeadlineExceeded when it did (a spec
//     change retries). Setting status.progressDeadline in the past aborts
//     at once, as upstream.
//
// EtcdMember (member_controller.go): named <cluster>-<random>, controlled by
// its cluster, with the finalizer etcd-operator.cozystack.io/member-cleanup
// and the PVC data-<member> (labels app.kubernetes.io/instance=<cluster>,
// etcd-operator.cozystack.io/cluster=<cluster>, the cluster's
// additionalMetadata) controlled by the member. Deleting the cluster lets
// the garbage collector delete the members; each stops its process, drops
// its data and releases its finalizer, and the collector then deletes the
// PVCs. A member deleted while its cluster lives is first removed from etcd.
// The seed's restore runs the agent's steps: HEAD the exact object key,
// require twice its size free on the volume (spec.storage.size), refuse an
// etcd version without etcdutl (< 3.5), download, etcdutl restore with the
// hash check skipped. Its credentials Secret missing keeps the seed in
// CreateContainerConfigError until the Secret appears; any other failure
// crash-loops, so the cluster ends BootstrapFailed at its deadline. A
// source.pvc restore reads the file subPath on the claim's folder
// (Volumes: <volumes>/<namespace>/<claim>/, what upstream mounts read-only
// at /restore/src) with the same checks; the claim missing keeps the seed
// in CreateContainerConfigError until it appears, and a file that is not a
// whole bolt database (still being written) crash-loops.
//
// Staging Pods (staging_kubelet.go): the driver's restore staging Jobs
// (label etcd-backup-driver.cozystack.io/staging-for on the Job or its
// Pods) run as real local processes: Options.Executables maps the image's
// command (/etcd-stage) to a local binary, env secretKeyRefs and
// configMapKeyRefs are resolved (missing: CreateContainerConfigError,
// waiting), claims are mounted as their Volumes folder and emptyDirs as
// folders of the Pod, and mount paths and the termination message path are
// rewritten in args and env. Init containers run in order and the first
// failure fails the Pod; each container ends with its exit code and the
// termination message file's content, so the real Job controller applies
// the Job's podFailurePolicy. A claim's folder is removed once the claim
// is deleted.
//
// Capture Pods (capture_kubelet.go, restarting_run.go): the driver's
// point-in-time capture Deployment (with the real Deployment and
// ReplicaSet controllers, testenv.WorkloadControllers) gets its Pod run
// as a kubelet runs it, and only the driver's: a Pod of a ReplicaSet of a
// Deployment controlled by a CaptureProgress, with keeper.Labels of that
// name, one container running `/etcd-stage capture`. Secret and projected
// volumes are written into the Pod's folder (volumes_projected.go): a
// service-account token requested for the Pod's ServiceAccount through
// the TokenRequest API (bound to the Pod, the projection's audience and
// life), renewed at 80% of its life, and the namespace's kube-root-ca.crt,
// which the real root-CA publisher writes. The container restarts after
// every exit with the kubelet's back-off (10 s doubling to 5 min), its
// status counts restarts and keeps the last exit in lastState; deleting
// the Pod sends SIGTERM, kills after terminationGracePeriodSeconds, and
// removes the Pod. Every container the stand-ins run gets
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (the API server's own
// address: its certificate names 127.0.0.1); Service names in the
// arguments of a local process are resolved to the address they reach
// (Options.ResolveService: the tenant etcd client Service's proxy, whose
// certificate names that address too), since a process has no resolver
// the sandbox could point, while containers (container mode) get
// Options.HostsFile as /etc/hosts.
//
// EtcdSnapshot (snapshot_controller.go, snapshot_job.go, kubelet.go):
// Pending, then a real Job <snapshot>-snapshot owned by the snapshot
// (backoffLimit 3, activeDeadlineSeconds 1800, the agent's environment with
// secretKeyRefs to the credentials Secret), Started/JobCreated, then
// Failed/JobFailed when the Job controller fails the Job, or Complete with
// status.artifact {uri, sizeBytes, sha256:<hex>} once it has a succeeded
// Pod. The kubelet stand-in runs only these Pods: it reports
// CreateContainerConfigError while a referenced Secret or key is missing
// (so the snapshot hangs until the Job's deadline, as on a real cluster),
// otherwise it runs the agent (stream Maintenance.Snapshot to
// <S3_KEY><name>.db, refuse to overwrite another snapshot's object) and
// marks the Pod Succeeded or Failed.
//
// Failure injection (Operator.Faults, Sandbox.Faults):
// FailBootstrap(key, n) makes the next n incarnations of an EtcdCluster
// fail to bootstrap (the seed crash-loops); with a short
// spec.progressDeadlineSeconds, or status.progressDeadline patched into the
// past, the cluster ends BootstrapFailed: the failure a restore's rollback
// must handle. FailJoin(key, n) makes the next n joining members never
// start, so a scale-up ends DeadlineExceeded.
//
// Differences from a real cluster, all invisible to the driver: members
// are etcd processes on 127.0.0.1 serving plain HTTP (TLS and auth settings
// are accepted but unused), with no Pods and no Services; their data lives
// in a folder per member and the PVCs stay Pending (no provisioner); etcd
// runs with --strict-reconfig-check=false so a learner can be added without
// etcd's five-second connectivity wait; pausing a formed cluster
// (replicas 0 after bootstrap) and defragmentation are not reproduced; the
// agent's log marker is handed over in memory. Client URLs are published in
// a ConfigMap <cluster>-sandbox-endpoints, owned by the cluster, for
// scripts.
package operator
