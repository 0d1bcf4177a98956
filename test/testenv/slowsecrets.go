package testenv

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SlowSecretCreates wraps a client so that every Secret create waits
// Delay first, as on a loaded API server: it widens the window between an
// S3 key's issue and the Secret that holds it (manager.Options.WrapClient,
// or a credbroker.Broker's Client).
type SlowSecretCreates struct {
	client.Client
	// Delay is how long each Secret create waits.
	Delay time.Duration
}

// Create waits Delay before creating a Secret.
func (s SlowSecretCreates) Create(ctx context.Context, o client.Object, opts ...client.CreateOption) error {
	if _, ok := o.(*corev1.Secret); ok {
		time.Sleep(s.Delay)
	}
	return s.Client.Create(ctx, o, opts...)
}
