package keeper

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/tenantjobs"
)

// ensure runs s's capture: its Deployment as built, made or rolled onto
// the template of s. A Deployment at the name that the driver did not
// make (controlledBy) is a look-alike: it is left as it is and the
// refusal says so.
func (r *Reconciler) ensure(ctx context.Context, s Spec) (refusal string, err error) {
	want := Deployment(s)
	var d appsv1.Deployment
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(want), &d)
	switch {
	case apierrors.IsNotFound(err):
		if refusal, err := r.ensureGrant(ctx, s); err != nil || refusal != "" {
			return refusal, err
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return "", fmt.Errorf("create the capture Deployment %s/%s: %w", s.Namespace, s.Name, err)
		}
		log.FromContext(ctx).Info("capture started", "deployment", s.Name, "base", s.Options.Base.Revision)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the capture Deployment %s/%s: %w", s.Namespace, s.Name, err)
	case tenantjobs.MineDeployment(&d, want):
		return "", nil
	case !controlledBy(&d, s.Name, s.Record):
		return fmt.Sprintf("Deployment %s is not the capture the driver builds for this Plan (it was not made by the driver): "+
			"the driver leaves it alone and captures nothing; delete it and the driver starts the capture", s.Name), nil
	}
	if refusal, err := r.ensureGrant(ctx, s); err != nil || refusal != "" {
		return refusal, err
	}
	// The driver's own Deployment of an older template (another base,
	// other settings, or edited): rolled onto what s says. Recreate: the
	// old Pod stops (its SIGTERM makes what it holds durable) before the
	// new one starts.
	d.Labels, d.Annotations, d.Spec = want.Labels, want.Annotations, want.Spec
	if err := r.Client.Update(ctx, &d); err != nil {
		return "", fmt.Errorf("roll the capture Deployment %s/%s: %w", s.Namespace, s.Name, err)
	}
	log.FromContext(ctx).Info("capture rolled onto a new template", "deployment", s.Name, "base", s.Options.Base.Revision)
	return "", nil
}

// ensureGrant makes the capture's ServiceAccount, its Role (patch the one
// record's status) and RoleBinding when missing. They are read live (not
// cached) and only when the Deployment is made or rolled.
func (r *Reconciler) ensureGrant(ctx context.Context, s Spec) (string, error) {
	for _, want := range []client.Object{ServiceAccount(s), Role(s), RoleBinding(s)} {
		got := want.DeepCopyObject().(client.Object)
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), got)
		switch {
		case apierrors.IsNotFound(err):
			if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("create the capture's %s %s/%s: %w", kindOf(want), s.Namespace, s.Name, err)
			}
		case err != nil:
			return "", fmt.Errorf("read the capture's %s %s/%s: %w", kindOf(want), s.Namespace, s.Name, err)
		case !controlledBy(got, s.Name, s.Record):
			return fmt.Sprintf("%s %s is not the driver's (it was not made by the driver): the driver leaves it alone and captures nothing; delete it and the driver starts the capture",
				kindOf(want), s.Name), nil
		}
	}
	return "", nil
}

// removeWorkload deletes the capture's Deployment and grant, each only if
// the driver made it for rec.
func (r *Reconciler) removeWorkload(ctx context.Context, rec *driverv1alpha1.CaptureProgress) error {
	key := client.ObjectKey{Namespace: rec.Namespace, Name: rec.Name}
	var d appsv1.Deployment
	if err := r.Client.Get(ctx, key, &d); err == nil {
		if controlledBy(&d, rec.Name, rec.UID) {
			if err := r.Client.Delete(ctx, &d, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the capture Deployment %s/%s: %w", rec.Namespace, rec.Name, err)
			}
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	for _, o := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}, &corev1.ServiceAccount{}} {
		err := r.APIReader.Get(ctx, key, o)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if controlledBy(o, rec.Name, rec.UID) {
			if err := r.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the capture's %s %s/%s: %w", kindOf(o), rec.Namespace, rec.Name, err)
			}
		}
	}
	return nil
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *rbacv1.Role:
		return "Role"
	case *rbacv1.RoleBinding:
		return "RoleBinding"
	}
	return fmt.Sprintf("%T", o)
}
