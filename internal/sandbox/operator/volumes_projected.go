package operator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Projected service-account tokens, as the kubelet handles them.
const (
	// defaultTokenSeconds is a projection's life when it names none.
	defaultTokenSeconds = 3600
	// tokenRetry is how soon a token request that failed is tried again.
	tokenRetry = 10 * time.Second
)

// volumeFiles is one file of a Secret, ConfigMap or token volume.
type volumeFiles map[string]volumeFile

type volumeFile struct {
	data []byte
	mode os.FileMode
}

// secretVolume writes a Secret volume's keys (or its items) into dir; a
// missing Secret keeps the Pod ContainerCreating unless it is optional.
func (p planner) secretVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume, dir string) error {
	src := v.Secret
	files, err := p.secretFiles(ctx, pod.Namespace, src.SecretName, src.Items, src.Optional, src.DefaultMode)
	if err != nil {
		return volumeNotReady(v.Name, err)
	}
	return files.write(dir)
}

// projectedVolume writes a projected volume: its Secrets, ConfigMaps and
// service-account token (requested for the Pod's ServiceAccount through
// the TokenRequest API, bound to the Pod, with the projection's audience
// and life). It returns what keeps the token fresh while the Pod runs.
func (p planner) projectedVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume, dir string) (func(context.Context), error) {
	files := volumeFiles{}
	var token *tokenProjection
	for _, src := range v.Projected.Sources {
		var more volumeFiles
		var err error
		switch {
		case src.Secret != nil:
			more, err = p.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, v.Projected.DefaultMode)
		case src.ConfigMap != nil:
			more, err = p.configMapFiles(ctx, pod.Namespace, src.ConfigMap, v.Projected.DefaultMode)
		case src.ServiceAccountToken != nil:
			token = &tokenProjection{tokens: p.node.Tokens, pod: pod, src: *src.ServiceAccountToken, file: filepath.Join(dir, src.ServiceAccountToken.Path),
				mode: modeOf(nil, v.Projected.DefaultMode)}
			err = token.refresh(ctx)
		default:
			err = fmt.Errorf("the sandbox kubelet projects only secrets, configMaps and serviceAccountTokens")
		}
		if err != nil {
			return nil, volumeNotReady(v.Name, err)
		}
		for k, f := range more {
			files[k] = f
		}
	}
	if err := files.write(dir); err != nil {
		return nil, err
	}
	if token == nil {
		return nil, nil
	}
	return token.keep, nil
}

func volumeNotReady(volume string, err error) error {
	if _, ok := err.(*notReady); ok {
		return err
	}
	return &notReady{reason: "ContainerCreating", message: fmt.Sprintf("MountVolume.SetUp failed for volume %q: %v", volume, err)}
}

func (p planner) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, mode *int32) (volumeFiles, error) {
	var s corev1.Secret
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		if isNotFound(err) && optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return project(s.Data, items, mode)
}

func (p planner) configMapFiles(ctx context.Context, ns string, src *corev1.ConfigMapProjection, mode *int32) (volumeFiles, error) {
	var cm corev1.ConfigMap
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: src.Name}, &cm); err != nil {
		if isNotFound(err) && src.Optional != nil && *src.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("configmap %q: %w", src.Name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return project(data, src.Items, mode)
}

// project is data as files: every key, or only items at their paths.
func project(data map[string][]byte, items []corev1.KeyToPath, mode *int32) (volumeFiles, error) {
	files := volumeFiles{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{data: v, mode: modeOf(nil, mode)}
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("no key %q", it.Key)
		}
		files[it.Path] = volumeFile{data: v, mode: modeOf(it.Mode, mode)}
	}
	return files, nil
}

func modeOf(item, def *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item)
	case def != nil:
		return os.FileMode(*def)
	}
	return os.FileMode(corev1.SecretVolumeSourceDefaultMode)
}

// write puts every file into dir, each replaced whole (written aside,
// then renamed), so a reader never sees half a file.
func (f volumeFiles) write(dir string) error {
	for name, file := range f {
		if err := writeWhole(filepath.Join(dir, name), file.data, file.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeWhole(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	// The umask would take bits away that the Pod asked for.
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tokenProjection is one projected service-account token of a Pod.
type tokenProjection struct {
	tokens client.Client
	pod    *corev1.Pod
	src    corev1.ServiceAccountTokenProjection
	file   string
	mode   os.FileMode
	// renewAt is when the kubelet asks for the next token: at 80% of the
	// current one's life.
	renewAt time.Time
}

// refresh requests a token for the Pod's ServiceAccount, bound to the
// Pod (it stops working once the Pod is gone), and writes it.
func (t *tokenProjection) refresh(ctx context.Context) error {
	seconds := int64(defaultTokenSeconds)
	if t.src.ExpirationSeconds != nil {
		seconds = *t.src.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: t.pod.Name, UID: t.pod.UID},
	}}
	if t.src.Audience != "" {
		req.Spec.Audiences = []string{t.src.Audience}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: t.pod.Namespace, Name: serviceAccountOf(t.pod)}}
	issued := time.Now()
	if err := t.tokens.SubResource("token").Create(ctx, sa, req); err != nil {
		return fmt.Errorf("request a token for serviceaccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	life := req.Status.ExpirationTimestamp.Sub(issued)
	t.renewAt = issued.Add(life * 8 / 10)
	return writeWhole(t.file, []byte(req.Status.Token), t.mode)
}

// keep renews the token until ctx ends.
func (t *tokenProjection) keep(ctx context.Context) {
	log := logf.Log.WithName("sandbox-kubelet").WithValues("pod", t.pod.Namespace+"/"+t.pod.Name)
	for {
		timer := time.NewTimer(time.Until(t.renewAt))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if err := t.refresh(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "renew the projected service-account token")
			t.renewAt = time.Now().Add(tokenRetry)
		}
	}
}

func serviceAccountOf(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}
