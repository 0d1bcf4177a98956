// Package legacyvalues converts the etcd chart's removed backup.* values
// (the earlier release's EtcdBackupSchedule settings) into the objects that
// replace them: an Etcd strategy with its StrategyPolicy, a BackupClass
// binding etcd applications to it, a Plan with the old schedule, and the S3
// credentials Secret.
//
// The earlier release's rules still apply to the input: destinationPath,
// endpointURL, s3AccessKey and s3SecretKey are all required, and
// destinationPath starts with s3:// and has no empty (//) segment.
package legacyvalues

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	strategyv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/strategy/v1alpha1"
)

// DefaultApp is the application name of a tenant etcd: the chart pins its
// release, and so the application, to "etcd".
const DefaultApp = "etcd"

// Backup is the removed backup.* block.
type Backup struct {
	Enabled         bool   `json:"enabled"`
	Schedule        string `json:"schedule"`
	DestinationPath string `json:"destinationPath"`
	EndpointURL     string `json:"endpointURL"`
	S3AccessKey     string `json:"s3AccessKey"`
	S3SecretKey     string `json:"s3SecretKey"`
}

// Options say where the converted objects go.
type Options struct {
	// Namespace of the etcd application (required).
	Namespace string
	// App is the application's name; empty means DefaultApp.
	App string
}

// Objects are the replacements of one release's backup.* values.
type Objects struct {
	Strategy *strategyv1alpha1.Etcd
	// Policy is the strategy's StrategyPolicy: Retain, as the earlier
	// release never deleted a snapshot, and plain http when the earlier
	// release's endpoint was http (it used it so).
	Policy      *driverv1alpha1.StrategyPolicy
	BackupClass *backupsv1alpha1.BackupClass
	Plan        *backupsv1alpha1.Plan
	Secret      *corev1.Secret
}

// ParseValues reads the backup block of a release's values file.
func ParseValues(valuesYAML []byte) (Backup, error) {
	var values struct {
		Backup *Backup `json:"backup"`
	}
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		return Backup{}, fmt.Errorf("parse values: %w", err)
	}
	if values.Backup == nil {
		return Backup{}, errors.New("the values have no backup block: nothing to migrate")
	}
	return *values.Backup, nil
}

// Convert validates b with the earlier release's rules and builds its
// replacements. Every problem is reported at once, each naming its value.
func Convert(b Backup, o Options) (*Objects, error) {
	if o.App == "" {
		o.App = DefaultApp
	}
	var errs []error
	if !b.Enabled {
		errs = append(errs, errors.New("backup.enabled is not true: these values never scheduled backups, so there is nothing to migrate"))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); o.Namespace == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace %q: the etcd application's namespace is required and must be a DNS-1123 label", o.Namespace))
	}
	if msgs := validation.IsDNS1123Subdomain(o.App); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--app %q is not a valid object name: %s", o.App, strings.Join(msgs, "; ")))
	}
	bucket, prefix, err := splitDestination(b.DestinationPath)
	if err != nil {
		errs = append(errs, err)
	}
	if err := checkEndpoint(b.EndpointURL); err != nil {
		errs = append(errs, err)
	}
	if b.S3AccessKey == "" {
		errs = append(errs, errors.New("backup.s3AccessKey is required"))
	}
	if b.S3SecretKey == "" {
		errs = append(errs, errors.New("backup.s3SecretKey is required"))
	}
	if err := checkSchedule(b.Schedule); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ name, value string }{
		{"backup.destinationPath", b.DestinationPath},
		{"backup.endpointURL", b.EndpointURL},
	} {
		// Strategy fields are Go templates; a literal "{{" would be
		// executed rather than stored.
		if strings.Contains(f.value, "{{") || strings.Contains(f.value, "}}") {
			errs = append(errs, fmt.Errorf("%s contains template braces ({{ or }}), which the Etcd strategy would try to execute", f.name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return build(b, o, bucket, prefix), nil
}

// splitDestination applies the legacy destinationPath rules and splits
// s3://bucket/prefix into the bucket and the key prefix.
func splitDestination(path string) (bucket, prefix string, err error) {
	if path == "" {
		return "", "", errors.New("backup.destinationPath is required (s3://<bucket>/<prefix>)")
	}
	rest, ok := strings.CutPrefix(path, "s3://")
	if !ok {
		return "", "", fmt.Errorf("backup.destinationPath %q must start with s3://", path)
	}
	if strings.Contains(rest, "//") {
		return "", "", fmt.Errorf("backup.destinationPath %q must not contain an empty // segment", path)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("backup.destinationPath %q names no bucket (s3://<bucket>/<prefix>)", path)
	}
	if msgs := validation.IsDNS1123Subdomain(bucket); len(msgs) > 0 || len(bucket) < 3 || len(bucket) > 63 {
		return "", "", fmt.Errorf("backup.destinationPath %q: bucket %q is not a valid S3 bucket name (3-63 lowercase letters, digits, dots and hyphens)", path, bucket)
	}
	return bucket, prefix, nil
}

func checkEndpoint(endpoint string) error {
	if endpoint == "" {
		return errors.New("backup.endpointURL is required (http:// or https:// URL of the S3 service)")
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("backup.endpointURL %q must be an http:// or https:// URL with a host", endpoint)
	}
	return nil
}

// checkSchedule accepts what a Plan accepts: five cron fields, a descriptor
// such as @daily, either optionally after CRON_TZ=<zone>.
func checkSchedule(schedule string) error {
	s := strings.TrimSpace(schedule)
	if s == "" {
		return errors.New(`backup.schedule is required (a five-field cron expression such as "0 2 * * *")`)
	}
	if strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=") {
		if _, after, ok := strings.Cut(s, " "); ok {
			s = strings.TrimSpace(after)
		}
	}
	if strings.HasPrefix(s, "@") {
		return nil
	}
	if n := len(strings.Fields(s)); n != 5 {
		return fmt.Errorf("backup.schedule %q has %d fields; a Plan takes a standard five-field cron expression (minute hour day-of-month month day-of-week)", schedule, n)
	}
	return nil
}

// Names of the converted objects. The strategy and class are cluster-scoped
// but carry one tenant's destination, so their names include the namespace.
func names(o Options) (clusterScoped, plan, secret string) {
	return fmt.Sprintf("legacy-%s-%s", o.Namespace, o.App), o.App + "-legacy-backup", o.App + "-backup-s3-credentials"
}

func build(b Backup, o Options, bucket, prefix string) *Objects {
	clusterName, planName, secretName := names(o)
	labels := map[string]string{"app.kubernetes.io/managed-by": "ebdctl-migrate-legacy-values"}
	appGroup := backupsv1alpha1.DefaultApplicationAPIGroup
	strategyGroup := strategyv1alpha1.GroupVersion.Group
	// Custom S3 endpoints (MinIO, SeaweedFS, Ceph) rarely have the
	// wildcard DNS virtual-hosted addressing needs.
	pathStyle := true
	return &Objects{
		Secret: &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: o.Namespace, Labels: labels},
			Type:       corev1.SecretTypeOpaque,
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": b.S3AccessKey, "AWS_SECRET_ACCESS_KEY": b.S3SecretKey},
		},
		Strategy: &strategyv1alpha1.Etcd{
			TypeMeta:   metav1.TypeMeta{APIVersion: strategyv1alpha1.GroupVersion.String(), Kind: strategyv1alpha1.EtcdStrategyKind},
			ObjectMeta: metav1.ObjectMeta{Name: clusterName, Labels: labels},
			Spec: strategyv1alpha1.EtcdSpec{
				Template: strategyv1alpha1.EtcdTemplate{Destination: strategyv1alpha1.EtcdDestinationTemplate{S3: &strategyv1alpha1.EtcdS3Template{
					Bucket:               bucket,
					Endpoint:             b.EndpointURL,
					Key:                  prefix,
					ForcePathStyle:       &pathStyle,
					CredentialsSecretRef: strategyv1alpha1.SecretReference{Name: secretName},
				}}},
			},
		},
		Policy: &driverv1alpha1.StrategyPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: driverv1alpha1.GroupVersion.String(), Kind: driverv1alpha1.StrategyPolicyKind},
			ObjectMeta: metav1.ObjectMeta{Name: clusterName, Labels: labels},
			Spec: driverv1alpha1.StrategyPolicySpec{
				DeletionPolicy:    driverv1alpha1.DeletionPolicyRetain,
				AllowHTTPEndpoint: strings.HasPrefix(b.EndpointURL, "http://"),
			},
		},
		BackupClass: &backupsv1alpha1.BackupClass{
			TypeMeta:   metav1.TypeMeta{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "BackupClass"},
			ObjectMeta: metav1.ObjectMeta{Name: clusterName, Labels: labels},
			Spec: backupsv1alpha1.BackupClassSpec{Strategies: []backupsv1alpha1.BackupClassStrategy{{
				StrategyRef: backupsv1alpha1.TypedLocalObjectReference{APIGroup: &strategyGroup, Kind: strategyv1alpha1.EtcdStrategyKind, Name: clusterName},
				Application: backupsv1alpha1.ApplicationSelector{APIGroup: &appGroup, Kind: "Etcd"},
			}}},
		},
		Plan: &backupsv1alpha1.Plan{
			TypeMeta:   metav1.TypeMeta{APIVersion: backupsv1alpha1.GroupVersion.String(), Kind: "Plan"},
			ObjectMeta: metav1.ObjectMeta{Name: planName, Namespace: o.Namespace, Labels: labels},
			Spec: backupsv1alpha1.PlanSpec{
				ApplicationRef:  backupsv1alpha1.TypedLocalObjectReference{APIGroup: &appGroup, Kind: "Etcd", Name: o.App},
				BackupClassName: clusterName,
				Schedule:        backupsv1alpha1.PlanSchedule{Type: backupsv1alpha1.PlanScheduleTypeCron, Cron: strings.TrimSpace(b.Schedule)},
			},
		},
	}
}
