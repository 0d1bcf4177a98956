package keeper

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/capture"
)

const (
	// ContainerName is the capture's one container.
	ContainerName = "capture"
	// TLSDir is where the tenant's etcd client certificate is mounted.
	TLSDir = "/etcd-tls"
	// TokenDir is where the ServiceAccount token and the API server's CA
	// are projected.
	TokenDir = "/var/run/capture"
	// TokenSeconds is the projected token's life (the kubelet renews it
	// at 80%; the capture reads the file again at every write).
	TokenSeconds = 3600
	// CaptureLabel marks the capture's objects with their keyed name.
	CaptureLabel = "etcd-backup-driver.cozystack.io/capture"
	// PlanAnnotation names the Plan the objects serve (a hint for waking
	// the Plan; the reconcile checks ownership itself).
	PlanAnnotation = "etcd-backup-driver.cozystack.io/plan"
	// GapBaseAnnotation, on the record, is the base revision whose gap
	// the driver already answered with a new base BackupJob: one per
	// chain, however often the status says gap.
	GapBaseAnnotation = "etcd-backup-driver.cozystack.io/gap-answered"
	// ChainStartedAnnotation, on the record, is when the driver started
	// its current chain (RFC 3339): a capture that has not reported by
	// then plus maxLagSeconds is Stalled.
	ChainStartedAnnotation = "etcd-backup-driver.cozystack.io/chain-started"

	tlsVolume   = "etcd-tls"
	tokenVolume = "progress-token"
	// clientSecret is the etcd chart's client certificate Secret.
	clientSecret = "etcd-client-tls"
)

// Spec is what one capture's objects are built from.
type Spec struct {
	Namespace, Name string
	// Record is the CaptureProgress every other object is controlled by.
	Record types.UID
	Plan   string
	Image  string
	// Options are the capture's flags (Progress and the TLS files are
	// set by Build).
	Options capture.Options
	// SecretName is the tenant's S3 key (the base Backup's Secret).
	SecretName string
	CAPEM      string
	MemoryMiB  int32
}

// Labels mark a capture's objects and its Pods.
func Labels(name string) map[string]string {
	return map[string]string{
		CaptureLabel:                name,
		"app.kubernetes.io/name":    "etcd-capture",
		"app.kubernetes.io/part-of": "etcd-backup-driver",
	}
}

// LabelKeys are the keys of Labels: what the Deployment cache keeps of a
// look-alike it trims (cachetrim.Deployment).
func LabelKeys() []string {
	keys := make([]string, 0, 3)
	for k := range Labels("") {
		keys = append(keys, k)
	}
	return keys
}

// meta is the metadata every object of s carries: controlled by its
// record.
func (s Spec) meta() metav1.ObjectMeta {
	yes, no := true, false
	return metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Labels: Labels(s.Name),
		Annotations: map[string]string{PlanAnnotation: s.Plan},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: driverv1alpha1.GroupVersion.String(), Kind: driverv1alpha1.CaptureProgressKind,
			Name: s.Name, UID: s.Record, Controller: &yes, BlockOwnerDeletion: &no}}}
}

// FullOptions are s.Options with the files Build mounts and the record.
func (s Spec) FullOptions() capture.Options {
	o := s.Options
	o.EtcdCert, o.EtcdKey, o.EtcdCA = TLSDir+"/tls.crt", TLSDir+"/tls.key", TLSDir+"/ca.crt"
	o.Progress = capture.ProgressRecord{Namespace: s.Namespace, Name: s.Name, TokenFile: TokenDir + "/token", CAFile: TokenDir + "/ca.crt"}
	return o
}

// Deployment is the capture's Deployment.
func Deployment(s Spec) *appsv1.Deployment {
	mem := strconv.Itoa(int(s.MemoryMiB)) + "Mi"
	expire := int64(TokenSeconds)
	// The modes the API server would default, written out, so that the
	// Deployment as stored is the one built (MineDeployment compares the
	// volumes whole) and is not rewritten at every reconcile.
	mode := int32(corev1.SecretVolumeSourceDefaultMode)
	pod := tenantjobs.Pod{
		Labels:         Labels(s.Name),
		ServiceAccount: s.Name,
		Containers: []tenantjobs.Container{{
			Name: ContainerName, Image: s.Image, Args: append([]string{capture.Subcommand}, s.FullOptions().Args()...),
			Env: tenantjobs.CredentialsEnv(s.SecretName, s.CAPEM),
			Mounts: []corev1.VolumeMount{{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true},
				{Name: tokenVolume, MountPath: TokenDir, ReadOnly: true}},
			RequestMemory: mem, LimitMemory: mem,
		}},
		Volumes: []corev1.Volume{
			{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: clientSecret, DefaultMode: &mode}}},
			{Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expire}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			}}}},
		},
	}
	return &appsv1.Deployment{ObjectMeta: s.meta(), Spec: tenantjobs.DeploymentSpec(pod)}
}

// ServiceAccount is the capture Pod's: it mounts no token of its own
// (the Pod projects one).
func ServiceAccount(s Spec) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{ObjectMeta: s.meta(), AutomountServiceAccountToken: &no}
}

// Role may patch the status of the one record, and nothing else.
func Role(s Spec) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: s.meta(), Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{driverv1alpha1.GroupVersion.Group}, Resources: []string{"captureprogresses/status"},
		ResourceNames: []string{s.Name}, Verbs: []string{"patch"},
	}}}
}

// RoleBinding binds Role to ServiceAccount.
func RoleBinding(s Spec) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: s.meta(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: s.Name, Namespace: s.Namespace}}}
}

// controlledBy reports whether o carries the driver's labels for name and
// is controlled by the record uid: an object the driver made for this
// capture, perhaps with an older template. Anything else at the name is a
// look-alike, never changed or deleted.
func controlledBy(o metav1.Object, name string, uid types.UID) bool {
	for k, v := range Labels(name) {
		if o.GetLabels()[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == uid && ref.Kind == driverv1alpha1.CaptureProgressKind &&
		ref.APIVersion == driverv1alpha1.GroupVersion.String()
}
