package manager

import (
	"net/http"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	driverv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/driver/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker"
	brokerminio "github.com/etcd-backup-driver/etcd-backup-driver/internal/credbroker/minio"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/endpointpolicy"
)

// newBroker builds the credential broker: admin Secrets in the driver's
// namespace, admin API calls through the endpoint policy, and a grace for
// replaced keys of twice the longer of the backup and restore deadlines
// (at least an hour), so no snapshot or restore that read the old key
// outlives it.
func newBroker(mgr ctrl.Manager, o Options, policy endpointpolicy.Policy) *credbroker.Broker {
	hc := &http.Client{Transport: policy.Transport(), Timeout: 30 * time.Second}
	grace := 2 * max(o.BackupDeadline, o.RestoreDeadline)
	if grace < time.Hour {
		grace = time.Hour
	}
	return &credbroker.Broker{
		Client:    o.client(mgr),
		Reader:    mgr.GetAPIReader(),
		Namespace: o.Namespace,
		Clock:     clock.RealClock{},
		Grace:     grace,
		Providers: map[driverv1alpha1.CredentialBrokerProvider]credbroker.NewProvider{
			driverv1alpha1.CredentialBrokerMinIO: brokerminio.Connect(hc),
		},
	}
}

func setupCredentialBroker(mgr ctrl.Manager, o Options, d deps) error {
	r := &credbroker.Reconciler{Client: o.client(mgr), Broker: d.broker, Recorder: d.events}
	return r.SetupWithManager(mgr)
}
