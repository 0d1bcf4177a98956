package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/apps/v1alpha1"
	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/s3object"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategypolicy"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/strategytemplate"
)

// An unverified Backup (hand-written, edited, or made by the Cozystack
// driver) may still be restored when it points where this namespace's own
// backups go: the bucket, endpoint and credentials Secret a BackupClass's
// Etcd strategy renders for the application now, and an object directly
// under the rendered key prefix. That keeps a tenant's peer-made Backups
// usable and keeps every other tenant's objects out of reach.

// admit renders every Etcd strategy a BackupClass binds to Etcd
// applications for the job's application, and returns "" when the Backup's
// location matches one of them, otherwise why it does not.
func (r *Reconciler) admit(ctx context.Context, o *observation) (string, error) {
	bound, err := r.boundStrategies(ctx)
	if err != nil {
		return "", err
	}
	app, err := r.application(ctx, o.job.Namespace, o.app)
	if err != nil {
		return "", err
	}
	var rendered []strategyv1alpha1.EtcdS3Template
	var problems []string
	for _, b := range bound {
		dest, err := strategytemplate.RenderFor(b.strategy.Etcd, app, b.parameters,
			strategytemplate.Options{Policy: r.Policy, AllowHTTP: b.strategy.Policy.AllowHTTPEndpoint})
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if credbroker.Brokered(b.strategy) {
			// The snapshot named the namespace's brokered key Secret.
			dest.CredentialsSecretRef.Name = credbroker.SecretName(b.strategy.Name)
		}
		rendered = append(rendered, dest)
	}
	if msg := matchRendered(o.source, rendered); msg != "" {
		if len(problems) > 0 {
			msg += " (strategies that did not render: " + strings.Join(problems, "; ") + ")"
		}
		return msg, nil
	}
	return "", nil
}

// boundStrategy is an Etcd strategy (with its StrategyPolicy) a
// BackupClass binds to Etcd applications, with the class entry's
// parameters.
type boundStrategy struct {
	strategy   strategypolicy.Strategy
	parameters map[string]string
}

// boundStrategies are the Etcd strategies BackupClasses bind to Etcd
// applications (one entry per binding; missing strategies left out).
func (r *Reconciler) boundStrategies(ctx context.Context) ([]boundStrategy, error) {
	var classes backupsv1alpha1.BackupClassList
	if err := r.Client.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("list BackupClasses: %w", err)
	}
	var out []boundStrategy
	for _, c := range classes.Items {
		for _, s := range c.Spec.Strategies {
			if !bindsEtcd(s) {
				continue
			}
			strategy, err := strategypolicy.Get(ctx, r.Client, s.StrategyRef.Name)
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("read Etcd strategy %s: %w", s.StrategyRef.Name, err)
			}
			out = append(out, boundStrategy{strategy: strategy, parameters: s.Parameters})
		}
	}
	return out, nil
}

func bindsEtcd(s backupsv1alpha1.BackupClassStrategy) bool {
	group := backupsv1alpha1.DefaultApplicationAPIGroup
	if s.Application.APIGroup != nil && *s.Application.APIGroup != "" {
		group = *s.Application.APIGroup
	}
	return group == appsv1alpha1.GroupVersion.Group && s.Application.Kind == appsv1alpha1.EtcdKind && strategyv1alpha1.IsEtcd(s.StrategyRef)
}

// application is the object templates render with: the stored application,
// or its bare identity when it does not exist (templates that need more of
// it then fail to render, and the Backup is not admitted).
func (r *Reconciler) application(ctx context.Context, ns, name string) (map[string]any, error) {
	app := &appsv1alpha1.Etcd{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app)
	if apierrors.IsNotFound(err) {
		app = &appsv1alpha1.Etcd{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	} else if err != nil {
		return nil, fmt.Errorf("read Etcd application %s/%s: %w", ns, name, err)
	}
	return strategytemplate.ApplicationObject(app)
}

// matchRendered returns "" when src is an object one of the rendered
// destinations could have written, otherwise why not. Pure.
func matchRendered(src artifact.Source, rendered []strategyv1alpha1.EtcdS3Template) string {
	if len(rendered) == 0 {
		return "no BackupClass binds an Etcd strategy that renders a destination for this application"
	}
	for _, d := range rendered {
		if d.Bucket == src.Bucket && d.Endpoint == src.Endpoint && d.CredentialsSecretRef.Name == src.SecretName &&
			underPrefix(src.Key, d.Key) {
			return ""
		}
	}
	d := rendered[0]
	return fmt.Sprintf("it points at s3://%s/%s at %s with Secret %s, but this namespace's backups go to s3://%s/%s… at %s with Secret %s",
		src.Bucket, src.Key, src.Endpoint, src.SecretName, d.Bucket, artifact.ObjectKey(d.Key, "")[:len(artifact.ObjectKey(d.Key, ""))-len(".db")],
		d.Endpoint, d.CredentialsSecretRef.Name)
}

// underPrefix: key is exactly what the operator writes for some snapshot
// name under prefix (<prefix>[/]<name>.db, name a DNS name with no "/").
func underPrefix(key, prefix string) bool {
	dir := strings.TrimSuffix(artifact.ObjectKey(prefix, ""), ".db")
	rest, ok := strings.CutPrefix(key, dir)
	if !ok {
		return false
	}
	name, ok := strings.CutSuffix(rest, ".db")
	return ok && len(validation.IsDNS1123Subdomain(name)) == 0
}

func errorsIsCredentials(err error) bool { return errors.Is(err, s3object.ErrCredentials) }
