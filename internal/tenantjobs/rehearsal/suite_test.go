package rehearsal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	clientv3 "go.etcd.io/etcd/client/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/liverevision"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/provenance"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/s3server"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// k is the test's own uncached client: it plays the tenant, the
// etcd-operator and Flux.
var k client.Client

var (
	s3srv   *s3server.Server
	s3c     *minio.Client
	s3Creds = s3server.Credentials{AccessKeyID: "rehearsal-test", SecretAccessKey: "rehearsal-test-secret"}
	// stageBin is cmd/etcd-stage built for the suite: the Jobs' command.
	stageBin string
	// lives maps a namespace to the client URL of its live etcd.
	lives sync.Map
	// held are namespaces whose rehearsal Jobs runJobs does not run.
	held sync.Map
	// testReconciler is the controller under test (a test makes it
	// forget what it holds in memory, as a restarted driver would).
	testReconciler *Reconciler
)

var testKeys = provenance.StaticKeys{ActiveID: "t1", Keys: map[string][]byte{"t1": []byte(strings.Repeat("k", 32))}}

const (
	testBucket = "bkt"
	testPrefix = "tenant/etcd/"
	testSecret = "s3-creds"
	testImage  = "etcd-backup-driver:test"
)

var testEndpoint string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rehearsal-suite-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// The Jobs run the real binary, built from this tree.
	stageBin = filepath.Join(dir, "etcd-stage")
	build := exec.Command("go", "build", "-o", stageBin, "./cmd/etcd-stage")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("build etcd-stage: %v\n%s", err, out))
	}
	if s3srv, err = s3server.Start(filepath.Join(dir, "s3"), s3Creds, testBucket); err != nil {
		panic(err)
	}
	testEndpoint = s3srv.URL
	if s3c, err = testenv.S3Client(s3srv.URL, s3Creds.AccessKeyID, s3Creds.SecretAccessKey); err != nil {
		panic(err)
	}
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		k = env.Client
		createStrategy(env.Client)
		ctrl.SetLogger(zap.New(zap.WriteTo(testenv.LogWriter())))
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: driverscheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			panic(err)
		}
		policy, err := endpointpolicy.Parse(testenv.LoopbackCIDRs)
		if err != nil {
			panic(err)
		}
		r := &Reconciler{
			Client: mgr.GetClient(), Reader: mgr.GetClient(), LiveReader: mgr.GetAPIReader(),
			Recorder: mgr.GetEventRecorder("etcd-rehearsal"), Keys: testKeys, Policy: policy, Image: testImage,
			Census: plainCensus{}, AllowedEndpointCIDRs: testenv.LoopbackCIDRs, Deadline: 10 * time.Minute,
		}
		if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 2}); err != nil {
			panic(err)
		}
		testReconciler = r
		go func() {
			if err := mgr.Start(context.Background()); err != nil {
				panic(err)
			}
		}()
		go runJobs(context.Background(), filepath.Join(dir, "pods"))
	}))
}

// plainCensus counts a namespace's live etcd (a real etcd process of the
// test, plain http on loopback) with the same count as
// liverevision.Census (liverevision.Count), whose TLS dialling is tested
// in its package. censusReads counts its reads by namespace; stalls makes
// them wait.
type plainCensus struct{}

// censusReads holds a *atomic.Int32 by namespace: the censuses taken.
var censusReads sync.Map

func censusesOf(ns string) int32 {
	n, _ := censusReads.LoadOrStore(ns, new(atomic.Int32))
	return n.(*atomic.Int32).Load()
}

// stalls holds, by namespace, a channel the census of that namespace
// waits for: an etcd that takes its time to answer.
var stalls sync.Map

func (plainCensus) Census(ctx context.Context, ns string) (liverevision.Census, error) {
	n, _ := censusReads.LoadOrStore(ns, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	if stall, ok := stalls.Load(ns); ok {
		select {
		case <-stall.(chan struct{}):
		case <-ctx.Done():
			return liverevision.Census{}, ctx.Err()
		}
	}
	url, ok := lives.Load(ns)
	if !ok {
		return liverevision.Census{}, fmt.Errorf("no live etcd for %s", ns)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url.(string)}, DialTimeout: 5 * time.Second})
	if err != nil {
		return liverevision.Census{}, err
	}
	defer cli.Close()
	return liverevision.Count(ctx, cli)
}

// runJobs plays the Job controller and the kubelet for rehearsal Jobs
// that run the driver's command: it runs the container's command (the
// real etcd-stage) as a local process with the Pod's volume and
// termination log mapped to folders, creates the Job's Pod with the
// container's exit code and termination message, and ends the Job as
// the Job controller would (podFailurePolicy on ExitRefused). Other Jobs
// (a tenant's) are left alone.
func runJobs(ctx context.Context, dir string) {
	started := map[string]bool{}
	for ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		var jobs batchv1.JobList
		if k.List(ctx, &jobs, client.HasLabels{backupsv1alpha1.RehearsalLabel}) != nil {
			continue
		}
		for i := range jobs.Items {
			j := &jobs.Items[i]
			c := j.Spec.Template.Spec.Containers
			if _, hold := held.Load(j.Namespace); hold {
				continue
			}
			if started[string(j.UID)] || len(j.Status.Conditions) > 0 || len(c) != 1 || len(c[0].Command) != 1 ||
				c[0].Command[0] != tenantjobs.Command {
				continue
			}
			started[string(j.UID)] = true
			go runJob(ctx, j.DeepCopy(), filepath.Join(dir, string(j.UID)))
		}
	}
}

func runJob(ctx context.Context, j *batchv1.Job, dir string) {
	c := j.Spec.Template.Spec.Containers[0]
	work, termLog := filepath.Join(dir, "work"), filepath.Join(dir, "termination-log")
	if err := os.MkdirAll(work, 0o755); err != nil {
		panic(err)
	}
	var args []string
	for _, a := range c.Args {
		a = strings.Replace(a, "--work-dir="+WorkDir, "--work-dir="+work, 1)
		a = strings.Replace(a, "--termination-log="+report.TerminationLog, "--termination-log="+termLog, 1)
		args = append(args, a)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			var s corev1.Secret
			if err := k.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: ref.SecretKeyRef.Name}, &s); err == nil {
				env = append(env, e.Name+"="+string(s.Data[ref.SecretKeyRef.Key]))
			}
			continue
		}
		env = append(env, e.Name+"="+e.Value)
	}
	cmd := exec.CommandContext(ctx, stageBin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = testenv.LogWriter(), testenv.LogWriter()
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			panic(err)
		}
		code = ee.ExitCode()
	}
	msg, _ := os.ReadFile(termLog)
	finishJob(ctx, j, int32(code), string(msg))
}

// finishJob records the Pod of j that ended with code and message, and
// ends j as the Job controller does.
func finishJob(ctx context.Context, j *batchv1.Job, code int32, msg string) {
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name + "-pod", Labels: j.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: &yes}}},
		Spec: *j.Spec.Template.Spec.DeepCopy(),
	}
	if err := k.Create(ctx, pod); err != nil {
		panic(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}}
	if code != 0 {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses[0].State.Terminated.Reason = "Error"
	}
	if err := k.Status().Update(ctx, pod); err != nil {
		panic(err)
	}
	j.Status.StartTime = &now
	if code == 0 {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
		}
	} else {
		reason, m := batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"
		if code == report.ExitRefused {
			reason, m = batchv1.JobReasonPodFailurePolicy, fmt.Sprintf("Container rehearse for pod %s exited with a non-zero exit code %d matching FailJob rule at index 0", pod.Name, code)
		}
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: m, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: m, LastTransitionTime: now, LastProbeTime: now},
		}
	}
	if err := k.Status().Update(ctx, j); err != nil {
		panic(err)
	}
}
