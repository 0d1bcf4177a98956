// Package helmstandin is the sandbox's stand-in for Flux's helm-controller:
// a HelmRelease of a chart in the repository's charts/ folder is rendered
// with the Helm SDK (internal/chartrender) and its objects applied, those
// whose kinds the API server serves. While the release is not suspended, an
// applied object that disappears (a deleted EtcdCluster) is applied again,
// which is why an in-place restore must suspend the release first.
package helmstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/chartrender"
)

// Labels helm-controller puts on every object of a release; the stand-in
// maps object events back to their HelmRelease through them.
const (
	NameLabel      = "helm.toolkit.fluxcd.io/name"
	NamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
)

// fieldOwner is the manager name of the stand-in's writes.
const fieldOwner = "helm-controller"

// Reconciler renders and applies HelmReleases.
type Reconciler struct {
	Client client.Client
	// APIReader re-reads a release live before applying, so that a suspend
	// the cache has not delivered yet is still honoured.
	APIReader client.Reader
	// ChartsDir holds one folder per chart (charts/<name>).
	ChartsDir string
}

// SetupWithManager registers the controller; it also watches EtcdClusters
// so that a deleted one is put back.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("sandbox-helm-controller").
		For(&helmv2.HelmRelease{}).
		Watches(&etcdv1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(releaseOf)).
		Complete(r)
}

func releaseOf(_ context.Context, o client.Object) []reconcile.Request {
	name, ns := o.GetLabels()[NameLabel], o.GetLabels()[NamespaceLabel]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// Reconcile installs or upgrades one release unless it is suspended.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var hr helmv2.HelmRelease
	if err := r.APIReader.Get(ctx, req.NamespacedName, &hr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if hr.Spec.Suspend || !hr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	applied, err := r.apply(ctx, &hr)
	reason, status, msg := helmv2.InstallSucceededReason, metav1.ConditionTrue, fmt.Sprintf("Helm install succeeded for release %s (%d objects applied)", releaseName(&hr), applied)
	if hr.Status.ObservedGeneration > 0 {
		reason, msg = helmv2.UpgradeSucceededReason, fmt.Sprintf("Helm upgrade succeeded for release %s (%d objects applied)", releaseName(&hr), applied)
	}
	if err != nil {
		reason, status, msg = helmv2.InstallFailedReason, metav1.ConditionFalse, err.Error()
		if hr.Status.ObservedGeneration > 0 {
			reason = helmv2.UpgradeFailedReason
		}
	}
	hr.Status.ObservedGeneration = hr.Generation
	meta.SetStatusCondition(&hr.Status.Conditions, metav1.Condition{
		Type: fluxmeta.ReadyCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: hr.Generation,
	})
	if uerr := r.Client.Status().Update(ctx, &hr); uerr != nil {
		return ctrl.Result{}, uerr
	}
	return ctrl.Result{}, err
}

func releaseName(hr *helmv2.HelmRelease) string {
	if hr.Spec.ReleaseName != "" {
		return hr.Spec.ReleaseName
	}
	if hr.Spec.TargetNamespace != "" {
		return hr.Spec.TargetNamespace + "-" + hr.Name
	}
	return hr.Name
}

func chartName(hr *helmv2.HelmRelease) string {
	switch {
	case hr.Spec.Chart != nil:
		return hr.Spec.Chart.Spec.Chart
	case hr.Spec.ChartRef != nil:
		return hr.Spec.ChartRef.Name
	}
	return ""
}

// apply renders the release and creates or merge-patches each object. A
// merge patch only sets what the chart renders, as Helm's own three-way
// patch does, so fields others added (spec.bootstrap) are left alone.
func (r *Reconciler) apply(ctx context.Context, hr *helmv2.HelmRelease) (int, error) {
	chart := chartName(hr)
	dir := filepath.Join(r.ChartsDir, chart)
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); chart == "" || err != nil {
		return 0, fmt.Errorf("chart %q is not one the sandbox serves (looked in %s)", chart, r.ChartsDir)
	}
	ns := hr.Namespace
	if hr.Spec.TargetNamespace != "" {
		ns = hr.Spec.TargetNamespace
	}
	objs, err := chartrender.Render(dir, chartrender.Release{Name: releaseName(hr), Namespace: ns, Values: hr.GetValues()})
	if err != nil {
		return 0, err
	}
	log := logf.FromContext(ctx)
	applied := 0
	for _, o := range objs {
		mapping, err := r.Client.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue // no CRD for it here (cert-manager in the sandbox)
			}
			return applied, err
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && o.GetNamespace() == "" {
			o.SetNamespace(ns)
		}
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[NameLabel], labels[NamespaceLabel] = hr.Name, hr.Namespace
		labels["app.kubernetes.io/managed-by"] = "Helm"
		o.SetLabels(labels)
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = releaseName(hr), ns
		o.SetAnnotations(ann)
		if err := r.createOrPatch(ctx, o); err != nil {
			return applied, fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		log.V(1).Info("applied", "kind", o.GetKind(), "name", o.GetName())
		applied++
	}
	return applied, nil
}

// createOrPatch writes with strict field validation: a chart that renders a
// field the served schema does not know fails the release here, instead of
// the API server silently pruning it (Helm's own schema validation would
// refuse such a manifest on a real cluster too).
func (r *Reconciler) createOrPatch(ctx context.Context, o *unstructured.Unstructured) error {
	err := r.Client.Create(ctx, o.DeepCopy(), client.FieldOwner(fieldOwner), client.FieldValidation("Strict"))
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	body, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, body), client.FieldOwner(fieldOwner), client.FieldValidation("Strict"))
}
