package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/ebdctl"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/planpolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/etcdproc"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/sandbox/kvdata"
)

// ebdctlRun runs the CLI in process with buffers, as `ebdctl ARGS`.
func ebdctlRun(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	args = append([]string{"--kubeconfig", kubeconfig}, args...)
	code = ebdctl.Main("ebdctl", args, ebdctl.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// kubectlInTerminal runs `kubectl etcd-backup ARGS` (kubectl finding the
// plugin on PATH) in a pseudo-terminal and returns everything it wrote.
func kubectlInTerminal(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"etcd-backup", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		return "", err
	}
	defer tty.Close()
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	var raw bytes.Buffer
	_, err = io.Copy(&raw, tty)
	if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the child closed the terminal
		return raw.String(), err
	}
	return raw.String(), cmd.Wait()
}

// One tenant, in order: a backup followed live in a terminal through
// kubectl, list, status, verify (good and tampered), and a restore
// followed step by step.
func TestPluginAgainstTheSandbox(t *testing.T) {
	tn := newTenant(t)
	g := tn.g
	var backupName string
	data := kvdata.Set{Prefix: "/plugin", N: 300, Size: 256, Gen: "v1"}
	etcd, err := etcdproc.Client(sb.Fleet.Endpoints(client.ObjectKey{Namespace: tn.ns, Name: "etcd"})...)
	g.Expect(err).NotTo(HaveOccurred())
	defer etcd.Close()
	g.Expect(data.Write(tn.ctx, etcd)).To(Succeed())

	t.Run("backup --wait shows live progress in a terminal", func(t *testing.T) {
		g := NewWithT(t)
		raw, err := kubectlInTerminal(t, 3*time.Minute, "backup", "etcd", "-n", tn.ns, "--class", tn.class, "--name", "manual", "--wait")
		g.Expect(err).NotTo(HaveOccurred(), raw)
		t.Logf("terminal output:\n%s", strings.Join(screen(raw), "\n"))

		// The live status line was drawn and redrawn in place, and phases
		// are coloured.
		g.Expect(raw).To(ContainSubstring("\r\x1b[K"))
		g.Expect(raw).To(ContainSubstring("\x1b[32mSucceeded\x1b[0m"))
		g.Expect(raw).To(MatchRegexp(`[|/\\-] Running: EtcdSnapshot \S+ \(\d+s\)`))

		// What stays on the screen, in order: the job created, the
		// snapshot's steps as they happened, the snapshot with its size and the job's end
		// (two watches: either may be told first), and the Backup.
		lines := screen(raw)
		complete := regexp.MustCompile(`^\[ *\d+\.\ds\] EtcdSnapshot \S+: Complete, \d+\.\d[KM]iB \(\d+ bytes\)$`)
		succeeded := regexp.MustCompile(`^\[ *\d+\.\ds\] Succeeded BackupCompleted: Backup manual holds s3://`)
		want := []*regexp.Regexp{
			regexp.MustCompile(`^backupjob ` + tn.ns + `/manual created \(application etcd, class ` + tn.class + `\)$`),
			// The job writes its status once, at its end: the snapshot
			// tells its progress.
			regexp.MustCompile(`^\[ *\d+\.\ds\] EtcdSnapshot \S+: (-|Pending|Started)$`),
			regexp.MustCompile(complete.String() + "|" + succeeded.String()),
			regexp.MustCompile(complete.String() + "|" + succeeded.String()),
			regexp.MustCompile(`^Backup manual: \d+\.\d[KM]iB, taken \S+, s3://\S+$`),
		}
		next := 0
		for _, l := range lines {
			if next < len(want) && want[next].MatchString(l) {
				next++
			}
		}
		g.Expect(next).To(Equal(len(want)), "lines in order; matched %d of them in:\n%s", next, strings.Join(lines, "\n"))
		g.Expect(lines).To(ContainElement(MatchRegexp(complete.String())))
		g.Expect(lines).To(ContainElement(MatchRegexp(succeeded.String())))
		for _, l := range lines {
			g.Expect(l).NotTo(ContainSubstring("("+"waiting for the driver"), "the live line is gone from the final screen")
		}
		backupName = "manual"
	})
	g.Expect(backupName).NotTo(BeEmpty())

	var b backupsv1alpha1.Backup
	g.Expect(sb.Client.Get(tn.ctx, client.ObjectKey{Namespace: tn.ns, Name: backupName}, &b)).To(Succeed())

	t.Run("list and status", func(t *testing.T) {
		g := NewWithT(t)
		// The driver verifies its own Backup and says so.
		g.Eventually(func(g Gomega) {
			code, out, errOut := ebdctlRun("list", "-n", tn.ns)
			g.Expect(code).To(Equal(0), errOut)
			g.Expect(out).To(MatchRegexp(`(?m)^etcd\s+manual\s+Ready\s+\S+\s+\d+\.\d[KM]iB\s+True\s+Retain$`), "list:\n%s", out)
		}).WithTimeout(20 * time.Second).Should(Succeed())

		code, out, errOut := ebdctlRun("list", "-A", "-o", "json")
		g.Expect(code).To(Equal(0), errOut)
		var rows ebdctl.RowList[ebdctl.BackupRow]
		g.Expect(json.Unmarshal([]byte(out), &rows)).To(Succeed())
		var mine []ebdctl.BackupRow
		for _, r := range rows.Items {
			if r.Namespace == tn.ns {
				mine = append(mine, r)
			}
		}
		g.Expect(mine).To(HaveLen(1))
		g.Expect(mine[0].SizeBytes).To(Equal(b.Status.Artifact.SizeBytes))
		g.Expect(mine[0].Checksum).To(Equal(b.Status.Artifact.Checksum))

		// A daily Plan (suspended, so it starts nothing here) and then an
		// active one: the fresh backup is within its interval.
		p := &backupsv1alpha1.Plan{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "nightly", Annotations: map[string]string{planpolicy.Suspend: "true"}},
			Spec: backupsv1alpha1.PlanSpec{
				ApplicationRef: backupsv1alpha1.TypedLocalObjectReference{Kind: "Etcd", Name: "etcd"}, BackupClassName: tn.class,
				Schedule: backupsv1alpha1.PlanSchedule{Cron: "0 3 * * *"},
			},
		}
		g.Expect(sb.Client.Create(tn.ctx, p)).To(Succeed())
		code, out, errOut = ebdctlRun("status", "-n", tn.ns)
		g.Expect(code).To(Equal(0), errOut)
		g.Expect(out).To(MatchRegexp(`(?m)^etcd\s+SUSPENDED\s+manual\s`))

		g.Eventually(func() error {
			if err := sb.Client.Get(tn.ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			delete(p.Annotations, planpolicy.Suspend)
			return sb.Client.Update(tn.ctx, p)
		}).Should(Succeed())
		code, out, errOut = ebdctlRun("status", "-n", tn.ns, "-o", "wide")
		g.Expect(code).To(Equal(0), errOut)
		t.Logf("status -o wide:\n%s", out)
		g.Expect(out).To(MatchRegexp(`(?m)^etcd\s+OK\s+manual\s+\S+\s+24h\s+\S+\s+nightly\s+0 3 \* \* \*\s`), "NEXT-RUN comes after INTERVAL")
		g.Expect(sb.Client.Delete(tn.ctx, p)).To(Succeed())
	})

	t.Run("verify the stored snapshot, and refuse a tampered one", func(t *testing.T) {
		g := NewWithT(t)
		code, out, errOut := ebdctlRun("verify", backupName, "-n", tn.ns, "--deep", "--s3-ca-file", sb.S3CAFile)
		g.Expect(code).To(Equal(0), out+errOut)
		t.Logf("verify --deep:\n%s", out)
		g.Expect(out).To(ContainSubstring("ok   sha256"))
		g.Expect(out).To(ContainSubstring("ok   etcd integrity trailer"))
		g.Expect(out).To(MatchRegexp(`etcd: revision \d+, 300 keys`), "the snapshot holds the keys written")
		g.Expect(out).To(ContainSubstring("OK: the stored snapshot is the one the Backup describes"))

		// Copy the snapshot with one byte flipped to a new key, and forge
		// a Backup naming it with the original's size and checksum.
		src, err := artifact.Resolve(&b)
		g.Expect(err).NotTo(HaveOccurred())
		s3, err := sb.S3Client(sb.S3Credentials.AccessKeyID, sb.S3Credentials.SecretAccessKey)
		g.Expect(err).NotTo(HaveOccurred())
		obj, err := s3.GetObject(tn.ctx, src.Bucket, src.Key, minio.GetObjectOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(obj)
		g.Expect(err).NotTo(HaveOccurred())
		data[len(data)/2] ^= 0xff
		tamperedKey := src.Key + ".tampered"
		_, err = s3.PutObject(tn.ctx, src.Bucket, tamperedKey, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		forged := &backupsv1alpha1.Backup{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "tampered"},
			Spec:       *b.Spec.DeepCopy(),
			Status:     *b.Status.DeepCopy(),
		}
		forged.Status.UnderlyingResources = nil
		forged.Status.Artifact.URI = artifact.URI(src.Bucket, tamperedKey)
		g.Expect(sb.Client.Create(tn.ctx, forged)).To(Succeed())

		code, text, _ := ebdctlRun("verify", "tampered", "-n", tn.ns, "--s3-ca-file", sb.S3CAFile)
		g.Expect(code).To(Equal(1), text)
		t.Logf("verify of a tampered copy:\n%s", text)
		code, out, _ = ebdctlRun("verify", "tampered", "-n", tn.ns, "-o", "json", "--s3-ca-file", sb.S3CAFile)
		g.Expect(code).To(Equal(1), out)
		var res ebdctl.VerifyResult
		g.Expect(json.Unmarshal([]byte(out), &res)).To(Succeed())
		g.Expect(res.OK).To(BeFalse())
		byName := map[string]ebdctl.Check{}
		for _, c := range res.Checks {
			byName[c.Name] = c
		}
		g.Expect(byName["size"].OK).To(BeTrue())
		g.Expect(byName["sha256"].OK).To(BeFalse())
		g.Expect(byName["etcd integrity trailer"].Actual).To(Equal("mismatch"))
		g.Expect(sb.Client.Delete(tn.ctx, forged)).To(Succeed())
	})

	t.Run("restore --latest --wait shows every step and the safety Backup", func(t *testing.T) {
		g := NewWithT(t)
		code, out, errOut := ebdctlRun("restore", "etcd", "-n", tn.ns, "--latest", "--name", "back", "--wait", "--terminal", "no")
		t.Logf("output:\n%s", out)
		g.Expect(code).To(Equal(0), out+errOut)
		g.Expect(out).To(HavePrefix("restorejob " + tn.ns + "/back created: application etcd from Backup manual"))
		g.Expect(out).NotTo(ContainSubstring("\x1b["), "no colours off a terminal")

		var safety backupsv1alpha1.BackupList
		g.Expect(sb.Client.List(tn.ctx, &safety, client.InNamespace(tn.ns), client.MatchingLabels{backupsv1alpha1.SafetyBackupLabel: "back"})).To(Succeed())
		g.Expect(safety.Items).To(HaveLen(1))
		name := safety.Items[0].Name

		// Each milestone is printed as it appears, in the order the
		// restore reaches them, between the job's Ready steps.
		var seen []string
		step := regexp.MustCompile(`^\[ *\d+\.\ds\] (?:  (\w+) (True|False) \((\w+)\)|(Pending|Running|Succeeded|Failed) (\w+):|(safety Backup) (\S+) recorded)`)
		for _, l := range strings.Split(out, "\n") {
			m := step.FindStringSubmatch(l)
			switch {
			case m == nil:
			case m[1] != "":
				seen = append(seen, m[1]+"="+m[2])
			case m[4] != "":
				seen = append(seen, m[4]+"/"+m[5])
			default:
				g.Expect(m[7]).To(Equal(name))
				seen = append(seen, "safety-backup")
			}
		}
		for _, want := range [][2]string{
			{"Claimed=True", "SafetyBackup=True"},
			{"SafetyBackup=True", "EtcdClusterSpecCaptured=True"},
			{"EtcdClusterSpecCaptured=True", "TargetPurged=True"},
			{"TargetPurged=True", "EtcdClusterRecreated=True"},
			{"EtcdClusterRecreated=True", "Succeeded/RestoreCompleted"},
			{"Running/SafetySnapshotRunning", "safety-backup"},
		} {
			g.Expect(indexOf(seen, want[0])).To(BeNumerically(">=", 0), "%s in %v", want[0], seen)
			g.Expect(indexOf(seen, want[0])).To(BeNumerically("<", indexOf(seen, want[1])), "%s before %s in %v", want[0], want[1], seen)
		}
		g.Expect(out).To(ContainSubstring("safety Backup: " + name + " (to undo: ebdctl restore etcd -n " + tn.ns + " --from " + name + ")"))
	})
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
