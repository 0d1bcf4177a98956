package operator

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
)

// Member Ready reasons.
const (
	reasonPodReady                   = "PodReady"
	reasonPodNotReady                = "PodNotReady"
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	reasonCrashLoopBackOff           = "CrashLoopBackOff"
)

// memberStartTimeout bounds how long a new member may take to serve.
const memberStartTimeout = 30 * time.Second

// joinStallTimeouts are the waits after which a joining member that does
// not serve yet is restarted on its data, before the last, long attempt.
// etcd loses a joiner's first self-publication now and then (the proposal
// goes out on the peer pipeline just as the transport is reset for the
// snapshot the leader sends) and retries only after its 7-second request
// timeout; a restart publishes again at once, as a kubelet's liveness probe
// would get it to. A normal join takes well under a second.
var joinStallTimeouts = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

// crashLoopBackOff is how soon a member whose start failed is retried, as
// the kubelet restarts a failing container.
const crashLoopBackOff = 2 * time.Second

// memberReconciler plays the operator's EtcdMember controller and the
// kubelet running the member's Pod: the cleanup finalizer, the data PVC
// owned by the member, the seed's restore init container, and the etcd
// process itself, restarted when it exits.
type memberReconciler struct {
	client     client.Client
	reader     client.Reader
	fleet      *Fleet
	faults     *Faults
	etcdBinary string
	volumes    *Volumes
	// s3RootCAs verify the S3 endpoint a restore reads.
	s3RootCAs *x509.CertPool

	// exits carries member process exits back into the work queue.
	exits chan event.TypedGenericEvent[*etcdmember.EtcdMember]
}

func (r *memberReconciler) setup(mgr ctrl.Manager) error {
	r.exits = make(chan event.TypedGenericEvent[*etcdmember.EtcdMember], 64)
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-etcd-operator-member").
		For(&etcdmember.EtcdMember{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.membersUsingSecret)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.membersRestoringFromClaim)).
		WatchesRawSource(source.Channel(r.exits, &handler.TypedEnqueueRequestForObject[*etcdmember.EtcdMember]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// membersUsingSecret wakes the members whose restore waits for a Secret.
func (r *memberReconciler) membersUsingSecret(ctx context.Context, o client.Object) []reconcile.Request {
	var list etcdmember.EtcdMemberList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, m := range list.Items {
		if s3 := restoreS3(&m); s3 != nil && s3.CredentialsSecretRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
		}
	}
	return reqs
}

// membersRestoringFromClaim wakes the members whose restore reads the claim.
func (r *memberReconciler) membersRestoringFromClaim(ctx context.Context, o client.Object) []reconcile.Request {
	var list etcdmember.EtcdMemberList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, m := range list.Items {
		if m.Spec.Restore != nil && m.Spec.Restore.Source.PVC != nil && m.Spec.Restore.Source.PVC.ClaimName == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
		}
	}
	return reqs
}

// Reconcile keeps one member's volume and process.
func (r *memberReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var m etcdmember.EtcdMember
	if err := r.client.Get(ctx, req.NamespacedName, &m); err != nil {
		if isNotFound(err) {
			r.fleet.remove(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &m)
	}
	if controllerutil.AddFinalizer(&m, etcdmember.Finalizer) {
		if err := r.client.Update(ctx, &m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if m.Spec.InitialCluster == "" {
		return ctrl.Result{}, nil // not registered with etcd yet
	}
	if err := r.ensurePVC(ctx, &m); err != nil {
		return ctrl.Result{}, err
	}
	if p := r.fleet.get(req.NamespacedName); p != nil {
		switch {
		case p.uid != m.UID:
			r.fleet.remove(req.NamespacedName) // another member's leftovers
		case p.proc.Running():
			return ctrl.Result{}, r.setReady(ctx, &m, p.proc)
		default:
			// The process exited: restart it on its data, as the kubelet
			// restarts a container.
			r.fleet.forget(req.NamespacedName)
		}
	}
	return r.start(ctx, &m)
}

// start runs the member's "Pod": for the seed of a restoring cluster the
// restore init container first, then etcd.
func (r *memberReconciler) start(ctx context.Context, m *etcdmember.EtcdMember) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(m)
	owner := metav1.GetControllerOf(m)
	if owner == nil {
		return ctrl.Result{}, nil // not created by a cluster: nothing to run
	}
	if m.Spec.Bootstrap && r.faults.bootstrapFails(owner.UID) {
		return ctrl.Result{}, r.setNotReady(ctx, m, reasonCrashLoopBackOff,
			"injected bootstrap failure (the sandbox's Faults.FailBootstrap): the seed's container keeps crashing")
	}
	if !m.Spec.Bootstrap && r.faults.memberFails(key) {
		return ctrl.Result{}, r.setNotReady(ctx, m, reasonCrashLoopBackOff,
			"injected join failure (the sandbox's Faults.FailJoin): the member's container keeps crashing")
	}
	dataDir := r.fleet.dataDir(key)
	peer := m.Annotations[peerURLAnnotation]
	if m.Spec.Restore != nil {
		src, waiting, err := r.restoreSource(ctx, m)
		if errors.Is(err, errNoRestoreSource) {
			return ctrl.Result{}, r.setNotReady(ctx, m, reasonCrashLoopBackOff, "restore init container failed: "+err.Error())
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if waiting != "" {
			// The kubelet cannot start the init container yet; the
			// Secret's or claim's creation wakes us.
			return ctrl.Result{}, r.setNotReady(ctx, m, reasonCreateContainerConfigError, "restore init container: "+waiting)
		}
		agent := restoreAgent{src: src, dataDir: dataDir, name: m.Name, peerURL: peer,
			token: m.Spec.ClusterToken, version: m.Spec.Version, capacity: capacityOf(m.Spec.Storage)}
		if err := agent.run(ctx); err != nil {
			return ctrl.Result{RequeueAfter: crashLoopBackOff}, r.setNotReady(ctx, m, reasonCrashLoopBackOff, "restore init container failed: "+err.Error())
		}
	}
	clientURL, err := etcdproc.FreeURL()
	if err != nil {
		return ctrl.Result{}, err
	}
	spec := etcdproc.Spec{
		Binary: r.etcdBinary, Name: m.Name, DataDir: dataDir, ClientURL: clientURL, PeerURL: peer,
		InitialCluster: m.Spec.InitialCluster, Existing: !m.Spec.Bootstrap, Token: m.Spec.ClusterToken,
		LogFile: filepath.Join(filepath.Dir(dataDir), m.Name+".log"), Flags: etcdFlags(m.Spec.Options),
	}
	proc, err := startProcess(ctx, spec, !m.Spec.Bootstrap)
	if err != nil {
		return ctrl.Result{RequeueAfter: crashLoopBackOff}, r.setNotReady(ctx, m, reasonCrashLoopBackOff, err.Error())
	}
	r.fleet.put(key, &memberProc{uid: m.UID, cluster: types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.ClusterName}, clusterUID: owner.UID, proc: proc})
	obj := m.DeepCopy()
	go func() {
		<-proc.Exited()
		select { // never block a member's exit on a stopped controller
		case r.exits <- event.TypedGenericEvent[*etcdmember.EtcdMember]{Object: obj}:
		default:
		}
	}()
	logf.FromContext(ctx).V(1).Info("member started", "clientURL", clientURL)
	return ctrl.Result{}, r.setReady(ctx, m, proc)
}

// startProcess starts a member and waits until it serves; a joiner stalled
// past joinStallTimeouts is restarted.
func startProcess(ctx context.Context, spec etcdproc.Spec, joining bool) (*etcdproc.Member, error) {
	waits := []time.Duration{memberStartTimeout}
	if joining {
		waits = append(slices.Clone(joinStallTimeouts), memberStartTimeout)
	}
	var last error
	for _, wait := range waits {
		proc, err := etcdproc.Start(spec)
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		last = proc.WaitHealthy(wctx)
		cancel()
		if last == nil {
			return proc, nil
		}
		proc.Stop(0)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// finalize removes a deleted member from etcd when its cluster lives on (a
// scale-down), then stops it, drops its data and releases the finalizer.
// When the cluster itself is gone there is nobody to remove it from.
func (r *memberReconciler) finalize(ctx context.Context, m *etcdmember.EtcdMember) error {
	if !controllerutil.ContainsFinalizer(m, etcdmember.Finalizer) {
		return nil
	}
	key := client.ObjectKeyFromObject(m)
	if err := r.leaveCluster(ctx, m); err != nil {
		return err
	}
	r.fleet.remove(key)
	controllerutil.RemoveFinalizer(m, etcdmember.Finalizer)
	return client.IgnoreNotFound(r.client.Update(ctx, m))
}

func (r *memberReconciler) leaveCluster(ctx context.Context, m *etcdmember.EtcdMember) error {
	owner := metav1.GetControllerOf(m)
	if owner == nil {
		return nil
	}
	var c etcdv1alpha2.EtcdCluster
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, &c)
	if isNotFound(err) || (err == nil && (c.UID != owner.UID || !c.DeletionTimestamp.IsZero())) {
		return nil
	}
	if err != nil {
		return err
	}
	var others []string
	for _, ep := range r.fleet.endpointsOf(owner.UID) {
		if p := r.fleet.get(client.ObjectKeyFromObject(m)); p == nil || p.proc.Spec.ClientURL != ep {
			others = append(others, ep)
		}
	}
	if len(others) == 0 {
		return nil
	}
	cli, err := etcdproc.Client(others...)
	if err != nil {
		return err
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	for _, em := range list.Members {
		if em.Name == m.Name || (len(em.PeerURLs) > 0 && em.PeerURLs[0] == m.Annotations[peerURLAnnotation]) {
			if _, err := cli.MemberRemove(ctx, em.ID); err != nil {
				return fmt.Errorf("remove member %s from etcd: %w", m.Name, err)
			}
		}
	}
	return nil
}

// ensurePVC creates data-<member>, owned by the member so that the garbage
// collector removes it with the member. The sandbox has no provisioner, so
// the claim stays Pending; the data lives in the member's folder.
func (r *memberReconciler) ensurePVC(ctx context.Context, m *etcdmember.EtcdMember) error {
	if m.Spec.Storage.Medium == "Memory" {
		return nil
	}
	name := "data-" + m.Name
	var pvc corev1.PersistentVolumeClaim
	err := r.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, &pvc)
	if err == nil {
		if !metav1.IsControlledBy(&pvc, m) {
			return fmt.Errorf("PVC %s is owned by another EtcdMember; awaiting its garbage collection", name)
		}
		return nil
	}
	if !isNotFound(err) {
		return err
	}
	labels := map[string]string{}
	for k, v := range m.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range m.Annotations {
		if k != peerURLAnnotation {
			annotations[k] = v
		}
	}
	pvc = corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: m.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: sizeOf(m.Spec.Storage),
			}},
		},
	}
	if err := controllerutil.SetControllerReference(m, &pvc, r.client.Scheme()); err != nil {
		return err
	}
	return client.IgnoreAlreadyExists(r.client.Create(ctx, &pvc))
}

// setReady reports a serving member with its etcd ID and role.
func (r *memberReconciler) setReady(ctx context.Context, m *etcdmember.EtcdMember, proc *etcdproc.Member) error {
	base := m.DeepCopy()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := proc.Status(sctx)
	cancel()
	if err != nil {
		return r.setNotReady(ctx, m, reasonPodNotReady, err.Error())
	}
	m.Status.MemberID = fmt.Sprintf("%016x", st.Header.MemberId)
	m.Status.IsVoter = !st.IsLearner
	if m.Spec.Storage.Medium != "Memory" {
		m.Status.PVCName = "data-" + m.Name
	}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: etcdmember.ConditionReady, Status: metav1.ConditionTrue, Reason: reasonPodReady, Message: "member is serving",
		ObservedGeneration: m.Generation,
	})
	return r.patchStatus(ctx, m, base)
}

func (r *memberReconciler) setNotReady(ctx context.Context, m *etcdmember.EtcdMember, reason, msg string) error {
	base := m.DeepCopy()
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: etcdmember.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
		ObservedGeneration: m.Generation,
	})
	return r.patchStatus(ctx, m, base)
}

func (r *memberReconciler) patchStatus(ctx context.Context, m, base *etcdmember.EtcdMember) error {
	if equality.Semantic.DeepEqual(base.Status, m.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, m, client.MergeFrom(base)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// sizeOf is the member volume's size (1Gi, the CRD default, when unset).
func sizeOf(s etcdv1alpha2.StorageSpec) resource.Quantity {
	if s.Size == nil {
		return resource.MustParse("1Gi")
	}
	return s.Size.DeepCopy()
}

// capacityOf is the member volume's size in bytes.
func capacityOf(s etcdv1alpha2.StorageSpec) int64 {
	size := sizeOf(s)
	return size.Value()
}

// etcdFlags are the flags the operator derives from spec.options, plus one
// the stand-in adds: with strict reconfiguration checks etcd refuses to add
// a member until the others have been connected for five seconds, which
// on loopback only slows the sandbox down.
func etcdFlags(o *etcdv1alpha2.EtcdOptions) []string {
	flags := []string{"--strict-reconfig-check=false"}
	if o == nil {
		return flags
	}
	if o.QuotaBackendBytes != nil && *o.QuotaBackendBytes > 0 {
		flags = append(flags, fmt.Sprintf("--quota-backend-bytes=%d", *o.QuotaBackendBytes))
	}
	if o.AutoCompactionMode != "" {
		flags = append(flags, "--auto-compaction-mode="+o.AutoCompactionMode)
	}
	if o.AutoCompactionRetention != "" {
		flags = append(flags, "--auto-compaction-retention="+o.AutoCompactionRetention)
	}
	if o.SnapshotCount != nil {
		flags = append(flags, fmt.Sprintf("--snapshot-count=%d", *o.SnapshotCount))
	}
	return flags
}

// versionAtLeast reports whether an X.Y.Z version is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
