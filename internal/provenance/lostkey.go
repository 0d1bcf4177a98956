package provenance

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// A key Secret that goes missing after keys were issued is a loss, not a
// first start: every Backup signed so far becomes unverifiable, so the
// driver must not quietly make a new key. The keyring records that it
// issued keys in a marker ConfigMap next to the Secret (the driver's
// namespace, out of tenants' reach); the Secret missing while the marker
// exists is reported (log, Event on the marker, metric, alert) and no new
// key is made until an operator restores the Secret (docs/runbook.md).

// Reasons of the keyring's Events.
const (
	ReasonKeyLost  = "ProvenanceKeyLost"
	ReasonKeyFound = "ProvenanceKeyFound"
)

var keyLost = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "etcd_backup_driver_provenance_key_lost",
	Help: "1 while the provenance key Secret is missing although the driver issued keys (Backups cannot be signed or verified), else 0.",
})

func init() {
	metrics.Registry.MustRegister(keyLost)
}

// markerName names the marker ConfigMap of the key Secret.
func (k *Keyring) markerName() string { return k.Name + "-issued" }

// issued reports whether the marker says keys were issued.
func (k *Keyring) issued(ctx context.Context) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := k.Reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.markerName()}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", k.Namespace, k.markerName(), err)
	}
	return &cm, nil
}

// markIssued creates the marker (idempotent).
func (k *Keyring) markIssued(ctx context.Context) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.markerName(), Labels: map[string]string{
			"app.kubernetes.io/name": "etcd-backup-driver", "app.kubernetes.io/component": "provenance-key"}},
		Data: map[string]string{"secret": k.Name,
			"note": "keys were issued in Secret " + k.Name + "; if it goes missing the driver reports it and makes no new key (docs/runbook.md)"},
	}
	if err := k.Writer.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("record that provenance keys were issued (ConfigMap %s/%s): %w", k.Namespace, k.markerName(), err)
	}
	return nil
}

// errLost is the error of every signing and verification while the Secret
// is lost.
func (k *Keyring) errLost() error {
	return fmt.Errorf("provenance key Secret %s/%s is missing although the driver issued keys (ConfigMap %s records it): "+
		"Backups can be neither signed nor verified until it is restored from your backup of it; no new key is made, because it would leave "+
		"every Backup signed so far unverifiable (docs/runbook.md, alert EtcdBackupProvenanceKeyLost)", k.Namespace, k.Name, k.markerName())
}

// setLost records whether the Secret is lost; a change is logged and, with
// a Recorder, an Event on the marker.
func (k *Keyring) setLost(ctx context.Context, lost bool, marker *corev1.ConfigMap) {
	k.mu.Lock()
	changed := k.lost != lost
	k.lost = lost
	k.mu.Unlock()
	if lost {
		keyLost.Set(1)
	} else {
		keyLost.Set(0)
	}
	if !changed {
		return
	}
	if lost {
		log.FromContext(ctx).Error(k.errLost(), "provenance keys lost")
	} else {
		log.FromContext(ctx).Info("provenance key Secret is back", "namespace", k.Namespace, "name", k.Name)
	}
	if k.Recorder == nil || marker == nil {
		return
	}
	if lost {
		k.Recorder.Eventf(marker, nil, corev1.EventTypeWarning, ReasonKeyLost, "Check", "%s", k.errLost().Error())
	} else {
		k.Recorder.Eventf(marker, nil, corev1.EventTypeNormal, ReasonKeyFound, "Check", "provenance key Secret %s/%s is readable again", k.Namespace, k.Name)
	}
}
