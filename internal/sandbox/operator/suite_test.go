package operator_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdmember"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/objstore"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/operator"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// The suite runs the stand-in alone (no driver) on the upstream CRDs, with
// the real kube-controller-manager, an S3 server, and snapshot Jobs whose
// deadline is short enough to watch one expire.
const (
	bucket      = "snapshots"
	credsSecret = "s3-creds"
	jobDeadline = 8 * time.Second
)

// stageCommand is the staging image's command; the kubelet stand-in runs
// fakeStage for it: for the inspect and rehearse subcommands, the real etcd-stage built
// next to it (TestMain builds it from ./cmd/etcd-stage); otherwise a
// script that writes $AWS_ACCESS_KEY_ID to --out, a
// JSON report to --termination-log, and exits with $STAGE_EXIT; or, with
// $STAGE_CRASH set, runs that program instead (crashHelper).
const (
	stageCommand = "/etcd-stage"
	fakeStage    = `#!/bin/sh
if [ "$1" = capture ]; then
	# A capture: each run is traced in $CAPTURE_TRACE (its arguments, the
	# API server it was given, its token and CA); the first exits 3, the
	# next runs until SIGTERM, which it notes.
	run="$CAPTURE_TRACE/run-$(ls "$CAPTURE_TRACE" | grep -c '^run-[0-9]*$')"
	printf 'args: %s\napi: %s:%s\n' "$*" "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" > "$run"
	for a; do case "$a" in
		--progress-token-file=*) cp "${a#*=}" "$run.token" ;;
		--progress-ca-file=*) cp "${a#*=}" "$run.ca" ;;
	esac; done
	[ "$run" = "$CAPTURE_TRACE/run-0" ] && exit 3
	trap 'echo TERM > "$run.term"; exit 0' TERM
	while :; do sleep 0.1; done
fi
[ "$1" = inspect ] && exec "$(dirname "$0")/etcd-stage" "$@"
[ "$1" = rehearse ] && exec "$(dirname "$0")/etcd-stage" "$@"
out= report=
while [ $# -gt 0 ]; do
	case "$1" in
	--out) out=$2; shift ;;
	--termination-log) report=$2; shift ;;
	esac
	shift
done
# STAGE_CRASH names a program that crashes as a Go binary does.
[ -n "$STAGE_CRASH" ] && exec "$STAGE_CRASH"
[ -n "$out" ] && printf '%s' "$AWS_ACCESS_KEY_ID" > "$out"
[ -n "$report" ] && printf '{"outcome":"%s"}' "${STAGE_OUTCOME:-staged}" > "$report"
echo "fake etcd-stage done"
exit "${STAGE_EXIT:-0}"
`
)

var (
	cfg   *rest.Config
	k8s   client.Client
	op    *operator.Operator
	s3    *s3server.Server
	creds = s3server.Credentials{AccessKeyID: "conformance-key", SecretAccessKey: "conformance-secret"}
	// podsDir holds the kubelet stand-in's Pod folders.
	podsDir string
)

func TestMain(m *testing.M) {
	crashHelper()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stand-in-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if s3, err = s3server.Start(filepath.Join(dir, "s3"), creds, bucket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s3.Stop(context.Background())
	testenv.SetupLogs()
	env, err := testenv.StartWith(testenv.Options{ControllerManager: true, Controllers: testenv.WorkloadControllers})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	cfg = env.Config
	scheme := driverscheme.New()
	if err := etcdmember.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8s, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The real etcd-stage, which the fake one runs for inspection Pods.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "etcd-stage"), "./cmd/etcd-stage")
	build.Dir, build.Stdout, build.Stderr = testenv.RepoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build etcd-stage:", err)
		return 1
	}
	api, err := url.Parse(env.Config.Host)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	podsDir = filepath.Join(dir, "pods")
	stage := filepath.Join(dir, "fake-etcd-stage")
	if err := os.WriteFile(stage, []byte(fakeStage), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	op, err = operator.Setup(mgr, operator.Options{
		EtcdBinary: filepath.Join(testenv.RepoRoot(), "bin", "etcd"), DataDir: filepath.Join(dir, "etcd"),
		SnapshotJobDeadline: jobDeadline,
		PodsDir:             podsDir,
		Executables:         map[string]string{stageCommand: stage},
		APIServerHost:       api.Hostname(),
		APIServerPort:       api.Port(),
		ResolveService:      resolveService,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "stand-in manager:", err)
	}
	op.Fleet.StopAll()
	return code
}

// tenant is a fresh namespace for one test.
type tenant struct {
	t   testing.TB
	g   *WithT
	ctx context.Context
	ns  string
}

func newTenant(t testing.TB) *tenant {
	t.Helper()
	tn := &tenant{t: t, g: NewWithT(t), ctx: context.Background(), ns: "conf-" + rand.String(6)}
	tn.g.Expect(k8s.Create(tn.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.ns}})).To(Succeed())
	t.Cleanup(func() {
		// Delete the clusters so their members stop with the test.
		var list etcdv1alpha2.EtcdClusterList
		if k8s.List(tn.ctx, &list, client.InNamespace(tn.ns)) == nil {
			for i := range list.Items {
				_ = k8s.Delete(tn.ctx, &list.Items[i])
			}
		}
	})
	return tn
}

func (tn *tenant) secret() {
	tn.t.Helper()
	tn.g.Expect(k8s.Create(tn.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: credsSecret},
		StringData: map[string]string{objstore.AccessKeyIDKey: creds.AccessKeyID, objstore.SecretAccessKeyKey: creds.SecretAccessKey},
	})).To(Succeed())
}

// cluster creates an EtcdCluster named name with replicas members.
func (tn *tenant) cluster(name string, replicas int32, mutate ...func(*etcdv1alpha2.EtcdCluster)) *etcdv1alpha2.EtcdCluster {
	tn.t.Helper()
	c := &etcdv1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
		Spec:       etcdv1alpha2.EtcdClusterSpec{Version: "3.6.11", Replicas: &replicas},
	}
	for _, m := range mutate {
		m(c)
	}
	tn.g.Expect(k8s.Create(tn.ctx, c)).To(Succeed())
	return c
}

func (tn *tenant) get(c *etcdv1alpha2.EtcdCluster) *etcdv1alpha2.EtcdCluster {
	tn.t.Helper()
	tn.g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	return c
}

// awaitAvailable waits for Available with the given reason.
func (tn *tenant) awaitAvailable(c *etcdv1alpha2.EtcdCluster, status metav1.ConditionStatus, reason string, timeout time.Duration) *etcdv1alpha2.EtcdCluster {
	tn.t.Helper()
	tn.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		cd := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha2.ClusterConditionAvailable)
		g.Expect(cd).NotTo(BeNil())
		g.Expect(cd.Status).To(Equal(status), cd.Message)
		g.Expect(cd.Reason).To(Equal(reason), cd.Message)
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return c
}

func (tn *tenant) awaitHealthy(c *etcdv1alpha2.EtcdCluster) *etcdv1alpha2.EtcdCluster {
	tn.t.Helper()
	tn.awaitAvailable(c, metav1.ConditionTrue, etcdv1alpha2.ReasonQuorumHealthy, time.Minute)
	tn.g.Expect(c.Status.ReadyMembers).To(Equal(*c.Spec.Replicas))
	return c
}

func (tn *tenant) members(c *etcdv1alpha2.EtcdCluster) []etcdmember.EtcdMember {
	tn.t.Helper()
	var list etcdmember.EtcdMemberList
	tn.g.Expect(k8s.List(tn.ctx, &list, client.InNamespace(tn.ns), client.MatchingLabels{etcdmember.ClusterLabel: c.Name})).To(Succeed())
	return list.Items
}

func (tn *tenant) pvcs(cluster string) []corev1.PersistentVolumeClaim {
	tn.t.Helper()
	var list corev1.PersistentVolumeClaimList
	tn.g.Expect(k8s.List(tn.ctx, &list, client.InNamespace(tn.ns), client.MatchingLabels{etcdmember.InstanceLabel: cluster})).To(Succeed())
	return list.Items
}

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func int32p(v int32) *int32 { return &v }
