package tenantjobs

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// job is a tenant Job as a spec package builds it, owned (not
// controlled) by a Backup.
func job() *batchv1.Job {
	p := Pod{Labels: map[string]string{"backups.cozystack.io/inspection": "uid-1"},
		Containers: []Container{{Name: "inspect", Image: "driver:v1", Args: []string{"inspect", "--key=k"}, Env: CredentialsEnv("creds", ""),
			RequestMemory: "128Mi", LimitMemory: "512Mi"}}}
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "etcd-inspect-x", Labels: p.Labels, UID: "job-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "backups.cozystack.io/v1alpha1", Kind: "Backup", Name: "b", UID: "uid-1", Controller: ptr(false)}}},
		Spec: JobSpec(p, time.Hour, time.Hour)}
}

// Mine takes only the Job as built: a label, an owner reference, a
// container's image, command, arguments, environment or an extra init
// container a tenant's look-alike differs in makes it not the driver's.
func TestMineRefusesLookAlikes(t *testing.T) {
	want := job()
	if !Mine(want.DeepCopy(), want) {
		t.Fatal("the Job as built is not Mine")
	}
	for name, mutate := range map[string]func(j *batchv1.Job){
		"no owner":           func(j *batchv1.Job) { j.OwnerReferences = nil },
		"another owner":      func(j *batchv1.Job) { j.OwnerReferences[0].UID = "uid-2" },
		"owner as a kind":    func(j *batchv1.Job) { j.OwnerReferences[0].Kind = "ConfigMap" },
		"owner as a control": func(j *batchv1.Job) { j.OwnerReferences[0].Controller = ptr(true) },
		"another label":      func(j *batchv1.Job) { j.Labels["backups.cozystack.io/inspection"] = "uid-2" },
		"no label":           func(j *batchv1.Job) { j.Labels = nil },
		"another image":      func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "evil:latest" },
		"another command":    func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Command = []string{"/bin/sh"} },
		"other arguments":    func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Args[1] = "--key=other" },
		"other environment":  func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Env = nil },
		"an init container":  func(j *batchv1.Job) { j.Spec.Template.Spec.InitContainers = j.Spec.Template.Spec.Containers },
		"a volume":           func(j *batchv1.Job) { j.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "host"}} },
		"another report":     func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/tmp/forged" },
	} {
		j := want.DeepCopy()
		mutate(j)
		if Mine(j, want) {
			t.Errorf("%s: a look-alike is taken for the driver's Job", name)
		}
	}
}

// MyPod takes a Pod the Job controls that runs its containers as built;
// a Pod a tenant made with the Job as its owner is not read.
func TestMyPodRefusesLookAlikes(t *testing.T) {
	j := job()
	pod := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "p",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr(true)}}},
			Spec: *j.Spec.Template.Spec.DeepCopy()}
	}
	if !MyPod(pod(), j) {
		t.Fatal("the Job's own Pod is not MyPod")
	}
	for name, mutate := range map[string]func(p *corev1.Pod){
		"owned, not controlled": func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil },
		"another Job's":         func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other" },
		"other arguments":       func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"inspect", "--key=other"} },
		"an init container":     func(p *corev1.Pod) { p.Spec.InitContainers = p.Spec.Containers },
	} {
		p := pod()
		mutate(p)
		if MyPod(p, j) {
			t.Errorf("%s: a look-alike Pod is read", name)
		}
	}
}

// A keyed name is the same for the same key and object, another for
// another key or object, and a valid object name.
func TestKeyedName(t *testing.T) {
	a := KeyedName("etcd-inspect-", []byte("key-1"), "purpose", "uid-1")
	if a != KeyedName("etcd-inspect-", []byte("key-1"), "purpose", "uid-1") || len(a) != len("etcd-inspect-")+16 {
		t.Fatalf("keyed name %q is not stable", a)
	}
	for _, other := range []string{
		KeyedName("etcd-inspect-", []byte("key-2"), "purpose", "uid-1"),
		KeyedName("etcd-inspect-", []byte("key-1"), "purpose", "uid-2"),
		KeyedName("etcd-inspect-", []byte("key-1"), "other purpose", "uid-1"),
	} {
		if other == a {
			t.Fatalf("%q for another key, object or purpose", other)
		}
	}
}
