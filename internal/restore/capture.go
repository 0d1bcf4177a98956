package restore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/claim"
)

// The capture is a ConfigMap, not a condition message: it has no 24 KiB
// limit, it is not owned by the RestoreJob (so deleting the job keeps it),
// and a person can read and re-apply it by hand.
const (
	captureComponent      = "etcd-restore-capture"
	captureKeyCluster     = "etcdcluster.yaml"
	captureKeyHelmRelease = "helmrelease-prior-state"
	captureKeySource      = "restore-source.yaml"
	captureKeyReadme      = "README"
)

// hrState is the HelmRelease's state before the restore touched it.
type hrState string

const (
	hrSuspended    hrState = "Suspended"
	hrNotSuspended hrState = "NotSuspended"
	hrAbsent       hrState = "Absent"
)

// restoreSource is the exact S3 object a restore reads, frozen in the
// capture so the re-create never depends on the Backup still existing.
type restoreSource struct {
	Bucket         string `json:"bucket"`
	Endpoint       string `json:"endpoint"`
	Region         string `json:"region,omitempty"`
	ForcePathStyle bool   `json:"forcePathStyle,omitempty"`
	SecretName     string `json:"credentialsSecretName"`
	Key            string `json:"key"`
	BackupName     string `json:"backupName"`
}

func sourceFrom(src artifact.Source, backupName string) restoreSource {
	return restoreSource{
		Bucket: src.Bucket, Endpoint: src.Endpoint, Region: src.Region,
		ForcePathStyle: src.ForcePathStyle != nil && *src.ForcePathStyle,
		SecretName:     src.SecretName, Key: src.Key, BackupName: backupName,
	}
}

// capture is the parsed capture ConfigMap.
type capture struct {
	name    string
	app     string
	cluster *unstructured.Unstructured
	hrPrior hrState
	source  restoreSource
}

// childName derives a name from the RestoreJob that stays unique across
// re-created RestoreJobs of the same name (UID suffix) and within max.
func childName(rj *backupsv1alpha1.RestoreJob, suffix string, maxLen int) string {
	sum := sha256.Sum256([]byte(rj.UID))
	tail := "-" + suffix + "-" + hex.EncodeToString(sum[:])[:8]
	base := rj.Name
	if len(base)+len(tail) > maxLen {
		base = base[:maxLen-len(tail)]
	}
	return base + tail
}

func captureName(rj *backupsv1alpha1.RestoreJob) string {
	return childName(rj, "capture", 63)
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

// buildCapture renders the capture ConfigMap for rj.
func buildCapture(rj *backupsv1alpha1.RestoreJob, app string, live *unstructured.Unstructured,
	hr *helmv2.HelmRelease, src restoreSource) (*corev1.ConfigMap, error) {
	clusterYAML, err := yaml.Marshal(capturedCluster(live).Object)
	if err != nil {
		return nil, fmt.Errorf("encode captured EtcdCluster: %w", err)
	}
	srcYAML, err := yaml.Marshal(src)
	if err != nil {
		return nil, fmt.Errorf("encode restore source: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: rj.Namespace,
			Name:      captureName(rj),
			Labels: map[string]string{
				claim.ComponentLabel:                 captureComponent,
				backupsv1alpha1.ApplicationNameLabel: app,
				backupsv1alpha1.RestoreJobNameLabel:  rj.Name,
				backupsv1alpha1.RestoreJobUIDLabel:   string(rj.UID),
			},
		},
		Data: map[string]string{
			captureKeyCluster:     string(clusterYAML),
			captureKeyHelmRelease: string(priorState(hr)),
			captureKeySource:      string(srcYAML),
			captureKeyReadme: fmt.Sprintf(`EtcdCluster %s/%s as it was before RestoreJob %s restored Backup %s.
To bring the old cluster definition back by hand: suspend HelmRelease %s, delete the EtcdCluster,
and kubectl create -f the %s key of this ConfigMap. The HelmRelease was %s before the restore.
`, live.GetNamespace(), live.GetName(), rj.Name, src.BackupName, app, captureKeyCluster, priorState(hr)),
		},
	}, nil
}

// parseCapture reads a capture ConfigMap back. It refuses one that another
// RestoreJob (same name, other UID) made.
func parseCapture(cm *corev1.ConfigMap, rj *backupsv1alpha1.RestoreJob) (*capture, error) {
	if uid := cm.Labels[backupsv1alpha1.RestoreJobUIDLabel]; uid != string(rj.UID) {
		return nil, fmt.Errorf("ConfigMap %s/%s belongs to RestoreJob UID %q, not this one", cm.Namespace, cm.Name, uid)
	}
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data[captureKeyCluster]), &obj); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, captureKeyCluster, err)
	}
	var src restoreSource
	if err := yaml.Unmarshal([]byte(cm.Data[captureKeySource]), &src); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, captureKeySource, err)
	}
	if src.Key == "" || src.Bucket == "" {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s has no bucket or object key", cm.Namespace, cm.Name, captureKeySource)
	}
	prior := hrState(cm.Data[captureKeyHelmRelease])
	switch prior {
	case hrSuspended, hrNotSuspended, hrAbsent:
	default:
		return nil, fmt.Errorf("ConfigMap %s/%s key %s is %q", cm.Namespace, cm.Name, captureKeyHelmRelease, prior)
	}
	return &capture{
		name:    cm.Name,
		app:     cm.Labels[backupsv1alpha1.ApplicationNameLabel],
		cluster: &unstructured.Unstructured{Object: obj},
		hrPrior: prior,
		source:  src,
	}, nil
}
