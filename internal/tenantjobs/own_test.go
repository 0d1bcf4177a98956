package tenantjobs

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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

// deployment is a long-running tenant workload as the capture builds it,
// controlled by its record.
func deployment() *appsv1.Deployment {
	p := Pod{Labels: map[string]string{"etcd-backup-driver.cozystack.io/capture": "uid-1"}, ServiceAccount: "etcd-capture-x",
		Containers: []Container{{Name: "capture", Image: "driver:v1", Args: []string{"capture", "--base-revision=7"}, Env: CredentialsEnv("creds", ""),
			RequestMemory: "128Mi", LimitMemory: "128Mi"}},
		Volumes: []corev1.Volume{{Name: "etcd-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-client-tls"}}}}}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "etcd-capture-x", Labels: p.Labels, UID: "dep-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd-backup-driver.cozystack.io/v1alpha1", Kind: "CaptureProgress", Name: "etcd-capture-x", UID: "uid-1", Controller: ptr(true)}}},
		Spec: DeploymentSpec(p)}
}

// MineDeployment is Mine's rule for the capture's Deployment: a tenant's
// look-alike under its name and labels, or the Deployment edited to run
// something else, as someone else or with another volume, is not read.
func TestMineDeploymentRefusesLookAlikes(t *testing.T) {
	want := deployment()
	if !MineDeployment(want.DeepCopy(), want) {
		t.Fatal("the Deployment as built is not Mine")
	}
	for name, mutate := range map[string]func(d *appsv1.Deployment){
		"no owner":        func(d *appsv1.Deployment) { d.OwnerReferences = nil },
		"another owner":   func(d *appsv1.Deployment) { d.OwnerReferences[0].UID = "uid-2" },
		"no label":        func(d *appsv1.Deployment) { d.Labels = nil },
		"another image":   func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil:latest" },
		"other arguments": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args[1] = "--base-revision=8" },
		"another volume":  func(d *appsv1.Deployment) { d.Spec.Template.Spec.Volumes[0].Secret.SecretName = "other-tls" },
		"another account": func(d *appsv1.Deployment) { d.Spec.Template.Spec.ServiceAccountName = "admin" },
		"a token mounted": func(d *appsv1.Deployment) { d.Spec.Template.Spec.AutomountServiceAccountToken = ptr(true) },
		"a sidecar": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "x"})
		},
		"another environment": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env = nil },
	} {
		d := want.DeepCopy()
		mutate(d)
		if MineDeployment(d, want) {
			t.Errorf("%s: a look-alike is taken for the driver's Deployment", name)
		}
	}
}

// DeploymentPods reads the Pods of the driver's ReplicaSet of the
// Deployment only: a tenant's Pod under the same labels, one controlled
// by a ReplicaSet the tenant made, or one of a ReplicaSet running
// something else is left out.
func TestDeploymentPodsRefusesLookAlikes(t *testing.T) {
	d := deployment()
	rs := func(name, uid string, owner types.UID, mutate func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID(uid), Labels: d.Spec.Selector.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: owner, Controller: ptr(true)}}},
			Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: *d.Spec.Template.DeepCopy()}}
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	pod := func(name string, owner *appsv1.ReplicaSet, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, Labels: d.Spec.Selector.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner.Name, UID: owner.UID, Controller: ptr(true)}}},
			Spec: *owner.Spec.Template.Spec.DeepCopy()}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	ours := rs("ours", "rs-1", d.UID, nil)
	forged := rs("forged", "rs-2", "someone-else", nil)
	other := rs("other", "rs-3", d.UID, func(r *appsv1.ReplicaSet) { r.Spec.Template.Spec.Containers[0].Image = "evil:latest" })
	c := fake.NewClientBuilder().WithObjects(ours, forged, other,
		pod("good", ours, nil),
		pod("other-args", ours, func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"capture", "--base-revision=1"} }),
		pod("owned-not-controlled", ours, func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }),
		pod("of-forged", forged, nil), pod("of-other", other, nil)).Build()
	pods, err := DeploymentPods(context.Background(), c, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Name != "good" {
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		t.Fatalf("DeploymentPods = %v, want [good]", names)
	}
}
