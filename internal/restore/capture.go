package restore

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/names"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/pointintime"
	stagingjob "github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs/staging"
)

// The capture is a ConfigMap in the driver's own namespace, where tenants
// cannot write: a look-alike in the tenant's namespace is never read. It
// has no size limit worth worrying about, it outlives the RestoreJob, and
// an admin can read and re-apply it by hand. It also freezes what the
// re-create needs (the exact source, and the safety Backup's for a
// rollback), so the re-create never depends on a Backup a tenant can edit.
const (
	captureComponent      = "etcd-restore-capture"
	captureKeyCluster     = "etcdcluster.yaml"
	captureKeyHelmRelease = "helmrelease-prior-state"
	captureKeySource      = "restore-source.yaml"
	captureKeyRollback    = "rollback-source.yaml"
	captureKeyReadme      = "README"
	// captureKeyUID is the UID of the cluster captured live: any other
	// cluster seen later is not the one the restore set out to replace.
	captureKeyUID = "etcdcluster-uid"
	// captureKeyRecreated and captureKeySucceeded record, once the
	// cluster the restore re-created was found healthy, that cluster's UID
	// and the restore's success (the seal). Decisions read them here, in
	// the driver's namespace, not from annotations on the tenant's
	// cluster or HelmRelease, which the tenant can write.
	captureKeyRecreated = "recreated-etcdcluster-uid"
	captureKeySucceeded = "restore-succeeded"
	// captureKeyFormat marks captures that record the above; one without
	// it was made by an earlier driver, whose seal is on the cluster and
	// the HelmRelease (read for those captures only, so a restore running
	// across an upgrade ends as it would have).
	captureKeyFormat = "format"
	captureFormat    = "2"
	// captureKeyStagingJob and captureKeyStagingClaim are the names the
	// restore's staging Job and claim get (stagingjob.NewName), drawn when
	// the cluster is captured: no tenant knows them before the driver
	// creates the objects.
	captureKeyStagingJob   = "staging-job"
	captureKeyStagingClaim = "staging-claim"
)

// hrState is the HelmRelease's state before the restore touched it.
type hrState string

const (
	hrSuspended    hrState = "Suspended"
	hrNotSuspended hrState = "NotSuspended"
	hrAbsent       hrState = "Absent"
)

// restoreSource is an exact S3 object a re-create reads.
type restoreSource struct {
	Bucket         string `json:"bucket"`
	Endpoint       string `json:"endpoint"`
	Region         string `json:"region,omitempty"`
	ForcePathStyle bool   `json:"forcePathStyle,omitempty"`
	SecretName     string `json:"credentialsSecretName"`
	Key            string `json:"key"`
	BackupName     string `json:"backupName"`
	// Size and SHA256 are what the Backup records of the object (and the
	// restore verified): the staging Job accepts only those bytes.
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

func sourceFrom(src artifact.Source, b *backupsv1alpha1.Backup) restoreSource {
	out := restoreSource{
		Bucket: src.Bucket, Endpoint: src.Endpoint, Region: src.Region,
		ForcePathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle,
		SecretName:     src.SecretName, Key: src.Key, BackupName: b.Name,
	}
	if a := b.Status.Artifact; a != nil {
		out.Size, out.SHA256 = a.SizeBytes, a.Checksum
	}
	return out
}

// capture is the parsed capture ConfigMap.
type capture struct {
	namespace string
	name      string
	app       string
	cluster   *unstructured.Unstructured
	hrPrior   hrState
	source    restoreSource
	// rollback is the safety Backup's object, when one was taken.
	rollback *restoreSource
	// from names the capture the cluster's definition was copied from
	// when the cluster was absent ("" when it was captured live).
	from string
	// uid is the captured live cluster's UID ("" when absent, or for a
	// capture made before it was recorded).
	uid types.UID
	// recreated and succeeded are the restore's seal (captureKeyRecreated,
	// captureKeySucceeded); legacy marks a capture of an earlier driver.
	recreated types.UID
	succeeded bool
	legacy    bool
	// stagingJob and stagingClaim are the staging's names ("" in a capture
	// of an earlier driver: stagingjob.Name of the RestoreJob's UID).
	stagingJob, stagingClaim string
	// point is the pin of a restore to a point (preflight.go), nil for none.
	point *pointintime.Pin
}

// captureName is unique per RestoreJob (namespace, name and UID) within
// the driver's namespace, and a valid ConfigMap name whatever the job's.
func captureName(rj *backupsv1alpha1.RestoreJob) string {
	return names.Subdomain(names.MaxSubdomain, "restore-capture", rj.Namespace, rj.Name, names.Hash(string(rj.UID)))
}

// capturedCluster copies what a re-create needs from the live object:
// identity, labels, annotations and the whole spec, unknown fields included.
// Server-set metadata and status are left out.
func capturedCluster(live *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(live.GetAPIVersion())
	out.SetKind(live.GetKind())
	out.SetNamespace(live.GetNamespace())
	out.SetName(live.GetName())
	out.SetLabels(live.GetLabels())
	out.SetAnnotations(live.GetAnnotations())
	if spec, ok := live.Object["spec"]; ok {
		out.Object["spec"] = runtimeDeepCopy(spec)
	}
	return out
}

func runtimeDeepCopy(v any) any {
	return (&unstructured.Unstructured{Object: map[string]any{"v": v}}).DeepCopy().Object["v"]
}

func priorState(hr *helmv2.HelmRelease) hrState {
	switch {
	case hr == nil:
		return hrAbsent
	case hr.Spec.Suspend:
		return hrSuspended
	default:
		return hrNotSuspended
	}
}

// buildCapture renders the capture ConfigMap for rj in namespace ns.
func buildCapture(ns string, rj *backupsv1alpha1.RestoreJob, app string, live *unstructured.Unstructured,
	hr *helmv2.HelmRelease, src restoreSource, rollback *restoreSource) (*corev1.ConfigMap, error) {
	clusterYAML, err := yaml.Marshal(capturedCluster(live).Object)
	if err != nil {
		return nil, fmt.Errorf("encode captured EtcdCluster: %w", err)
	}
	srcYAML, err := yaml.Marshal(src)
	if err != nil {
		return nil, fmt.Errorf("encode restore source: %w", err)
	}
	data := map[string]string{
		captureKeyCluster:      string(clusterYAML),
		captureKeyHelmRelease:  string(priorState(hr)),
		captureKeySource:       string(srcYAML),
		captureKeyUID:          string(live.GetUID()),
		captureKeyFormat:       captureFormat,
		captureKeyStagingJob:   stagingjob.NewName(),
		captureKeyStagingClaim: stagingjob.NewName(),
		captureKeyReadme: fmt.Sprintf(`EtcdCluster %s/%s as it was before RestoreJob %s/%s restored Backup %s.
To bring the old cluster definition back by hand: suspend HelmRelease %s/%s, delete the EtcdCluster,
and kubectl create -f the %s key of this ConfigMap. The HelmRelease was %s before the restore.
`, live.GetNamespace(), live.GetName(), rj.Namespace, rj.Name, src.BackupName, rj.Namespace, app, captureKeyCluster, priorState(hr)),
	}
	if rollback != nil {
		rbYAML, err := yaml.Marshal(rollback)
		if err != nil {
			return nil, fmt.Errorf("encode rollback source: %w", err)
		}
		data[captureKeyRollback] = string(rbYAML)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      captureName(rj),
			Labels: map[string]string{
				claim.ComponentLabel:                 captureComponent,
				backupsv1alpha1.CaptureForLabel:      rj.Namespace,
				backupsv1alpha1.ApplicationNameLabel: names.LabelValue(app),
				backupsv1alpha1.RestoreJobNameLabel:  names.LabelValue(rj.Name),
				backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
			},
			Annotations: map[string]string{captureAppAnnotation: app},
		},
		Data: data,
	}, nil
}

// parseCapture reads a capture ConfigMap back. It refuses one made for
// another RestoreJob.
func parseCapture(cm *corev1.ConfigMap, rj *backupsv1alpha1.RestoreJob) (*capture, error) {
	if uid := cm.Labels[backupsv1alpha1.RestoreJobUIDLabel]; uid != string(rj.UID) || cm.Labels[backupsv1alpha1.CaptureForLabel] != rj.Namespace {
		return nil, fmt.Errorf("ConfigMap %s/%s belongs to another RestoreJob", cm.Namespace, cm.Name)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data[captureKeyCluster]), &obj); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, captureKeyCluster, err)
	}
	src, err := parseSource(cm, captureKeySource)
	if err != nil {
		return nil, err
	}
	c := &capture{namespace: cm.Namespace, name: cm.Name, app: cm.Annotations[captureAppAnnotation],
		cluster: &unstructured.Unstructured{Object: obj}, source: *src, from: cm.Data[captureKeyFrom], uid: types.UID(cm.Data[captureKeyUID]),
		recreated: types.UID(cm.Data[captureKeyRecreated]), succeeded: cm.Data[captureKeySucceeded] == string(rj.UID),
		legacy: cm.Data[captureKeyFormat] == "", stagingJob: cm.Data[captureKeyStagingJob], stagingClaim: cm.Data[captureKeyStagingClaim]}
	if c.app == "" {
		c.app = applicationName
	}
	if c.point, err = pointintime.ParseCaptureText(cm.Data[pointintime.CaptureKey]); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if _, ok := cm.Data[captureKeyRollback]; ok {
		if c.rollback, err = parseSource(cm, captureKeyRollback); err != nil {
			return nil, err
		}
	}
	c.hrPrior = hrState(cm.Data[captureKeyHelmRelease])
	switch c.hrPrior {
	case hrSuspended, hrNotSuspended, hrAbsent:
	default:
		return nil, fmt.Errorf("ConfigMap %s/%s key %s is %q", cm.Namespace, cm.Name, captureKeyHelmRelease, c.hrPrior)
	}
	return c, nil
}

// captureAppAnnotation keeps the application's exact name (a label holds
// only a derived value).
const captureAppAnnotation = "backups.cozystack.io/application"

func parseSource(cm *corev1.ConfigMap, key string) (*restoreSource, error) {
	var src restoreSource
	if err := yaml.Unmarshal([]byte(cm.Data[key]), &src); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, key, err)
	}
	if src.Key == "" || src.Bucket == "" {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s has no bucket or object key", cm.Namespace, cm.Name, key)
	}
	return &src, nil
}
