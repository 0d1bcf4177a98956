package ebdctl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/spf13/cobra"
	etcdsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/artifact"
)

// Secret keys of S3 credentials, as the etcd-operator's agents read them.
const (
	accessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	secretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

type verifyOptions struct {
	output   string
	endpoint string
	envCreds bool
	deep     bool
	caFile   string
}

func (e *env) verifyCommand() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify BACKUP",
		Short: "Download a Backup's snapshot and check it locally",
		Long: `Streams the Backup's snapshot from S3 (credentials from the Secret the Backup
names) and checks, without keeping it: its size and sha256 against the Backup's
status.artifact, and etcd's own integrity trailer (a snapshot from etcd's
Maintenance API ends with the sha256 of everything before it). With --deep it
also writes the snapshot to a temporary file and opens it as an etcd database
(etcdutl's snapshot status: page consistency, revision, key count).
Exits 1 if anything does not match.`,
		Example: `  %[1]s verify etcd-manual -n tenant-a
  %[1]s verify etcd-manual -n tenant-a --deep -o json
  %[1]s verify etcd-manual -n tenant-a --s3-endpoint https://s3.example.com`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			return e.runVerify(cmd.Context(), args[0], o)
		},
	}
	cmd.Example = fmt.Sprintf(cmd.Example, e.name)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "output format: json or yaml")
	cmd.Flags().StringVar(&o.endpoint, "s3-endpoint", "", "reach S3 here instead of the endpoint the Backup records (for example from outside the cluster)")
	cmd.Flags().BoolVar(&o.envCreds, "env-credentials", false, "take S3 keys from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY instead of the Backup's Secret")
	cmd.Flags().BoolVar(&o.deep, "deep", false, "also open the snapshot as an etcd database (needs its size in free space under $TMPDIR)")
	addS3CAFlag(cmd, &o.caFile)
	return cmd
}

// VerifyResult is what verify found; -o json and -o yaml print it.
type VerifyResult struct {
	Namespace string  `json:"namespace"`
	Backup    string  `json:"backup"`
	URI       string  `json:"uri"`
	Endpoint  string  `json:"endpoint"`
	OK        bool    `json:"ok"`
	Checks    []Check `json:"checks"`
	// Etcd is the database status, with --deep.
	Etcd *EtcdStatus `json:"etcd,omitempty"`
}

// Check is one comparison.
type Check struct {
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual"`
	Detail   string `json:"detail,omitempty"`
}

// EtcdStatus is what etcd reads from the snapshot database.
type EtcdStatus struct {
	Revision       int64  `json:"revision"`
	TotalKeys      int    `json:"totalKeys"`
	DatabaseBytes  int64  `json:"databaseBytes"`
	StorageVersion string `json:"storageVersion,omitempty"`
	Hash           uint32 `json:"hash"`
}

func (e *env) runVerify(ctx context.Context, name string, o verifyOptions) error {
	ns, err := e.namespace()
	if err != nil {
		return err
	}
	c, err := e.newClient()
	if err != nil {
		return err
	}
	b, err := getBackup(ctx, c, ns, name)
	if err != nil {
		return err
	}
	src, err := artifact.Resolve(b)
	if err != nil {
		return fmt.Errorf("Backup %s/%s does not say where its snapshot is: %w", ns, name, err)
	}
	if o.endpoint != "" {
		src.Endpoint = o.endpoint
	}
	access, secret, err := e.s3Keys(ctx, c, ns, src.SecretName, o.envCreds)
	if err != nil {
		return err
	}
	transport, err := s3Transport(o.caFile)
	if err != nil {
		return err
	}
	res := &VerifyResult{Namespace: ns, Backup: name, URI: artifact.URI(src.Bucket, src.Key), Endpoint: src.Endpoint}
	if err := check(ctx, b, src, s3Keys{access, secret, transport}, o.deep, res); err != nil {
		return err
	}
	if o.output == outputJSON || o.output == outputYAML {
		if err := writeStructured(e.streams.Out, o.output, res); err != nil {
			return err
		}
	} else {
		e.printVerify(res, b)
	}
	if !res.OK {
		return silentFailure
	}
	return nil
}

func (e *env) s3Keys(ctx context.Context, c client.Reader, ns, secretName string, fromEnv bool) (string, string, error) {
	if fromEnv {
		a, s := os.Getenv(accessKeyIDKey), os.Getenv(secretAccessKeyKey)
		if a == "" || s == "" {
			return "", "", usagef("--env-credentials needs $%s and $%s", accessKeyIDKey, secretAccessKeyKey)
		}
		return a, s, nil
	}
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); err != nil {
		return "", "", fmt.Errorf("S3 credentials Secret %s/%s: %w (or pass --env-credentials)", ns, secretName, err)
	}
	for _, k := range []string{accessKeyIDKey, secretAccessKeyKey} {
		if len(s.Data[k]) == 0 {
			return "", "", fmt.Errorf("S3 credentials Secret %s/%s has no %s", ns, secretName, k)
		}
	}
	return string(s.Data[accessKeyIDKey]), string(s.Data[secretAccessKeyKey]), nil
}

// check streams the snapshot once and fills res.
func check(ctx context.Context, b *backupsv1alpha1.Backup, src artifact.Source, keys s3Keys, deep bool, res *VerifyResult) error {
	s3, err := s3Client(src, keys)
	if err != nil {
		return err
	}
	obj, err := s3.GetObject(ctx, src.Bucket, src.Key, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("download %s: %w", res.URI, err)
	}
	defer obj.Close()

	sum := newSnapshotCheck()
	var sink io.Writer = sum
	var tmp *os.File
	if deep {
		dir, err := os.MkdirTemp("", "ebdctl-verify-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if tmp, err = os.Create(filepath.Join(dir, "snapshot.db")); err != nil {
			return err
		}
		defer tmp.Close()
		sink = io.MultiWriter(sum, tmp)
	}
	if _, err := io.Copy(sink, obj); err != nil {
		return fmt.Errorf("download %s: %w", res.URI, err)
	}

	var want backupsv1alpha1.BackupArtifact
	if b.Status.Artifact != nil {
		want = *b.Status.Artifact
	}
	res.Checks = append(res.Checks,
		Check{Name: "size", Expected: fmt.Sprint(want.SizeBytes), Actual: fmt.Sprint(sum.Size()),
			OK: want.SizeBytes == 0 || want.SizeBytes == sum.Size(), Detail: unrecorded(want.SizeBytes == 0, "status.artifact.sizeBytes")},
		Check{Name: "sha256", Expected: want.Checksum, Actual: sum.Checksum(),
			OK: want.Checksum == "" || want.Checksum == sum.Checksum(), Detail: unrecorded(want.Checksum == "", "status.artifact.checksum")},
	)
	trailer := Check{Name: "etcd integrity trailer", Actual: "matches", OK: sum.HasTrailer() && sum.TrailerMatches()}
	switch {
	case !sum.HasTrailer():
		trailer.Actual = "absent"
		trailer.Detail = "the size is not a whole number of 512-byte sectors plus a 32-byte sha256, so this is not a snapshot as etcd's Maintenance API writes it"
	case !sum.TrailerMatches():
		trailer.Actual = "mismatch"
		trailer.Detail = "the last 32 bytes are not the sha256 of the rest: the snapshot is damaged"
	}
	res.Checks = append(res.Checks, trailer)
	if deep {
		if err := tmp.Close(); err != nil {
			return err
		}
		st, err := etcdsnapshot.NewV3(zap.NewNop()).Status(tmp.Name())
		db := Check{Name: "etcd database", Actual: "opens and is consistent", OK: err == nil}
		if err != nil {
			db.Actual, db.Detail = "unreadable", oneLine(err.Error())
		} else {
			res.Etcd = &EtcdStatus{Revision: st.Revision, TotalKeys: st.TotalKey, DatabaseBytes: st.TotalSize, StorageVersion: st.Version, Hash: st.Hash}
		}
		res.Checks = append(res.Checks, db)
	}
	res.OK = true
	for _, c := range res.Checks {
		res.OK = res.OK && c.OK
	}
	return nil
}

func unrecorded(absent bool, field string) string {
	if absent {
		return "the Backup records no " + field + "; not compared"
	}
	return ""
}

// s3Keys are what verify reaches S3 with: the keys, and the transport
// trusting --s3-ca-file.
type s3Keys struct {
	access, secret string
	transport      http.RoundTripper
}

// s3Client reaches src the way the snapshot agent wrote it: path-style
// addressing only when the Backup records forcePathStyle=true.
func s3Client(src artifact.Source, keys s3Keys) (*minio.Client, error) {
	u, err := url.Parse(src.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("S3 endpoint %q is not an http(s) URL", src.Endpoint)
	}
	region := src.Region
	if region == "" {
		region = "us-east-1"
	}
	lookup := minio.BucketLookupDNS
	if src.ForcePathStyle != nil && *src.ForcePathStyle {
		lookup = minio.BucketLookupPath
	}
	return minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(keys.access, keys.secret, ""), Secure: u.Scheme == "https",
		Region: region, BucketLookup: lookup, Transport: keys.transport,
	})
}

func (e *env) printVerify(res *VerifyResult, b *backupsv1alpha1.Backup) {
	out := e.streams.Out
	colour, _ := e.isTerminal()
	fmt.Fprintf(out, "Backup %s/%s: %s (via %s)\n", res.Namespace, res.Backup, res.URI, res.Endpoint)
	for _, c := range res.Checks {
		mark := paint(colour, colourGreen, "ok  ")
		if !c.OK {
			mark = paint(colour, colourRed, "FAIL")
		}
		line := fmt.Sprintf("  %s %-22s %s", mark, c.Name, c.Actual)
		if c.Expected != "" && c.Expected != c.Actual {
			line += " (Backup records " + c.Expected + ")"
		}
		fmt.Fprintln(out, line)
		if c.Detail != "" {
			fmt.Fprintf(out, "       %s\n", c.Detail)
		}
	}
	if res.Etcd != nil {
		fmt.Fprintf(out, "  etcd: revision %d, %d keys, database %s, storage version %s\n",
			res.Etcd.Revision, res.Etcd.TotalKeys, humanBytes(res.Etcd.DatabaseBytes), orDash(res.Etcd.StorageVersion))
	}
	if c := verifiedOf(b); c != nil {
		fmt.Fprintf(out, "  provenance (the driver's Verified condition): %s %s\n", c.Status, c.Reason)
	}
	if res.OK {
		fmt.Fprintln(out, paint(colour, colourGreen, "OK")+": the stored snapshot is the one the Backup describes and is intact")
	} else {
		fmt.Fprintln(out, paint(colour, colourRed, "FAILED")+": do not restore from this Backup")
	}
}
