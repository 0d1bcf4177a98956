package kamajistandin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	kamajiv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/kamaji/v1alpha1"
)

// webhookName is the ValidatingWebhookConfiguration (and its one webhook)
// the stand-in installs in every tenant apiserver.
const webhookName = "write-permissions.kamaji-stand-in.sandbox"

// writeFence is the admission webhook that enforces a TenantControlPlane's
// spec.writePermissions inside the tenant cluster, the part Kamaji's soot
// webhook plays. The flags are held here, set by the reconciler before it
// reports WriteLimited, so that status is a promise the webhook keeps.
type writeFence struct {
	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	deny map[types.NamespacedName]kamajiv1alpha1.WritePermissions
}

func newWriteFence(ca *authority) (*writeFence, error) {
	certPEM, keyPEM, err := ca.serving("write-permissions-webhook")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("write-permissions webhook: %w", err)
	}
	f := &writeFence{ln: ln, deny: map[types.NamespacedName]kamajiv1alpha1.WritePermissions{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.review), ReadHeaderTimeout: 5 * time.Second}
	return f, nil
}

// Start serves until ctx ends (a manager Runnable).
func (f *writeFence) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.srv.Shutdown(sctx)
	}()
	if err := f.srv.Serve(f.ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

func (f *writeFence) set(key types.NamespacedName, w kamajiv1alpha1.WritePermissions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deny[key] = w
}

func (f *writeFence) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.deny, key)
}

// path is the URL path of key's webhook: /<namespace>/<name>.
func path(key types.NamespacedName) string { return "/" + key.Namespace + "/" + key.Name }

// review answers an AdmissionReview: denied when the operation is blocked.
func (f *writeFence) review(w http.ResponseWriter, r *http.Request) {
	var ar admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	ns, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	f.mu.Lock()
	perms := f.deny[types.NamespacedName{Namespace: ns, Name: name}]
	f.mu.Unlock()
	blocked := false
	switch ar.Request.Operation {
	case admissionv1.Create:
		blocked = perms.BlockCreate
	case admissionv1.Update:
		blocked = perms.BlockUpdate
	case admissionv1.Delete:
		blocked = perms.BlockDelete
	}
	resp := &admissionv1.AdmissionResponse{UID: ar.Request.UID, Allowed: !blocked}
	if blocked {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("the TenantControlPlane %s/%s is write-limited: %s is blocked", ns, name, strings.ToLower(string(ar.Request.Operation))),
		}
	}
	ar.Response, ar.Request = resp, nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&ar)
}

// install creates or updates key's ValidatingWebhookConfiguration in the
// tenant apiserver. Every create, update and delete of every resource goes
// through it, except the apiserver's own (system:apiserver, so that it
// boots and keeps its leases while fenced); the apiserver never sends
// webhook configurations to webhooks, so the stand-in can always fix this
// one.
func (f *writeFence) install(ctx context.Context, cs kubernetes.Interface, caPEM []byte, key types.NamespacedName) error {
	url := "https://" + f.ln.Addr().String() + path(key)
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	all := admissionregistrationv1.AllScopes
	timeout := int32(5)
	want := admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    webhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: &all},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "not-the-apiserver-itself",
				Expression: "request.userInfo.username != 'system:apiserver'",
			}},
		}},
	}
	api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	got, err := api.Get(ctx, webhookName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, &want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	got.Webhooks = want.Webhooks
	_, err = api.Update(ctx, got, metav1.UpdateOptions{})
	return err
}
