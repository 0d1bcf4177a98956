package operator_test

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/report"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
	"github.com/etcd-backup-driver/etcd-backup-driver/test/testenv"
)

// crashEnv makes this test binary, run as a staging container, crash as
// a Go program does: "panic" (a panic nobody recovers) or "fatal" (a
// runtime fatal error). Both exit 2.
const crashEnv = "SANDBOX_STAGE_CRASH"

// crashHelper crashes when the binary runs as a staging container.
func crashHelper() {
	switch os.Getenv(crashEnv) {
	case "panic":
		panic("etcd-stage: index out of range (a bug)")
	case "fatal":
		var mu sync.Mutex
		mu.Unlock() // fatal error: sync: unlock of unlocked mutex
	}
}

// A staging container that crashes — a Go panic or a runtime fatal error,
// both exit code 2 — is not a refused artifact: the driver's own staging
// Job (staging.Build) lets the real Job controller retry it, and only
// the refusal's own exit code ends the Job at once by its
// podFailurePolicy, which the driver reads as Refused.
func TestStagingCrashIsRetriedNotRefused(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	build := func(tn *tenant, env ...corev1.EnvVar) *batchv1.Job {
		uid := types.UID("restore-" + rand.String(8))
		pvc, job := staging.Build(staging.Spec{
			Namespace: tn.ns, RestoreJobName: "restore", RestoreJobUID: uid, Image: "sandbox.invalid/etcd-backup-driver:test",
			Restore: staging.Object{Endpoint: s3.URL, Bucket: bucket, Key: "t/etcd/snap.db", SecretName: credsSecret,
				Size: 4096, SHA256: strings.Repeat("ab", 32)},
			AllowedEndpointCIDRs: testenv.LoopbackCIDRs, AllowHTTP: true, Deadline: 5 * time.Minute,
		})
		job.Spec.Template.Spec.Containers[0].Env = append(job.Spec.Template.Spec.Containers[0].Env, env...)
		tn.g.Expect(k8s.Create(tn.ctx, pvc)).To(Succeed())
		tn.g.Expect(k8s.Create(tn.ctx, job)).To(Succeed())
		t.Cleanup(func() {
			_ = k8s.Delete(tn.ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
		return job
	}

	for _, crash := range []string{"panic", "fatal"} {
		t.Run(crash, func(t *testing.T) {
			tn := newTenant(t)
			tn.secret()
			job := build(tn, corev1.EnvVar{Name: "STAGE_CRASH", Value: self}, corev1.EnvVar{Name: crashEnv, Value: crash})
			var first corev1.Pod
			tn.g.Eventually(func(g Gomega) {
				pods := tn.jobPods(job)
				g.Expect(pods).NotTo(BeEmpty())
				first = pods[0]
				g.Expect(first.Status.Phase).To(Equal(corev1.PodFailed))
			}, time.Minute).Should(Succeed())
			term := first.Status.ContainerStatuses[0].State.Terminated
			tn.g.Expect(term).NotTo(BeNil())
			tn.g.Expect(term.ExitCode).To(BeEquivalentTo(2), "a Go crash exits 2: %s", term.Message)

			// The Job controller retries it (backoff 10 s) instead of
			// failing the Job as refused.
			tn.g.Eventually(func(g Gomega) {
				g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
				if out, why := staging.OutcomeOf(job); out == staging.Refused {
					StopTrying("a crash was taken for a refused artifact: " + why).Now()
				}
				g.Expect(len(tn.jobPods(job))).To(BeNumerically(">=", 2), "no retry after the crash")
			}, time.Minute).Should(Succeed())
		})
	}

	t.Run("refused", func(t *testing.T) {
		tn := newTenant(t)
		tn.secret()
		job := build(tn, corev1.EnvVar{Name: "STAGE_EXIT", Value: strconv.Itoa(report.ExitRefused)},
			corev1.EnvVar{Name: "STAGE_OUTCOME", Value: "refused"})
		tn.g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(tn.ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			out, why := staging.OutcomeOf(job)
			g.Expect(out).To(Equal(staging.Refused), why)
		}, time.Minute).Should(Succeed())
		tn.g.Expect(tn.jobPods(job)).To(HaveLen(1), "a refusal is not retried")
	})
}
