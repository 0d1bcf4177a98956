package pointintime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	"github.com/etcd-backup-driver/etcd-backup-driver/internal/changelog"
	driverscheme "github.com/etcd-backup-driver/etcd-backup-driver/internal/scheme"
)

// A restore's base is chosen while nothing is pinned and the restore has
// not started, and from then on is the pinned one or none: a pin that is
// not the driver's, a point changed after the choice, the pinned Backup
// gone or replaced under its name, or the pin gone after the start all
// refuse; a newer base never moves it.
func TestResolveKeepsThePinnedBase(t *testing.T) {
	ctx := context.Background()
	night1, night2 := backup(t, "night-1", 0, 100), backup(t, "night-2", 24, 2000)
	night1.UID, night2.UID = "uid-1", "uid-2"
	const point = "2026-12-07T05:00:00Z"
	at := changelog.Target{Time: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)}
	rj := &backupsv1alpha1.RestoreJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "restore", UID: "rj-1"}}
	c := fake.NewClientBuilder().WithScheme(driverscheme.New()).WithObjects(&night1).Build()
	resolve := func(rj *backupsv1alpha1.RestoreJob, c client.Reader, point string, started bool) Resolution {
		t.Helper()
		res, err := Resolve(ctx, c, keys, rj, &night1, point, at, started)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := resolve(rj, c, point, false)
	if res.Refusal != nil || res.Pinned || res.Base.Name != "night-1" || res.Pin.Chain != changelog.ChainPrefix("team-a/etcd", 100) {
		t.Fatalf("first choice: %+v", res)
	}
	v, err := EncodePin(ctx, keys, rj, res.Pin)
	if err != nil {
		t.Fatal(err)
	}
	pinned := rj.DeepCopy()
	pinned.Annotations = map[string]string{PinAnnotation: v}
	// A newer base at or before the point appears.
	withNewer := fake.NewClientBuilder().WithScheme(driverscheme.New()).WithObjects(&night1, &night2).Build()
	if got := resolve(rj, withNewer, point, false); got.Base.Name != "night-2" {
		t.Fatalf("unpinned, the newer base is chosen: %+v", got)
	}
	if got := resolve(pinned, withNewer, point, true); got.Refusal != nil || !got.Pinned || got.Base.Name != "night-1" {
		t.Fatalf("pinned: %+v", got)
	}

	replaced := night1.DeepCopy()
	replaced.UID = "uid-other"
	forged := pinned.DeepCopy()
	forged.Annotations[PinAnnotation] = strings.Replace(v, `"night-1"`, `"night-2"`, 1)
	otherJob := pinned.DeepCopy()
	otherJob.UID = "rj-2"
	for name, got := range map[string]Resolution{
		"the pin edited":               resolve(forged, withNewer, point, true),
		"the pin copied to a new job":  resolve(otherJob, withNewer, point, false),
		"the point changed":            resolve(pinned, withNewer, "2026-12-07T06:00:00Z", true),
		"the base replaced":            resolve(pinned, fake.NewClientBuilder().WithScheme(driverscheme.New()).WithObjects(replaced).Build(), point, true),
		"the base gone":                resolve(pinned, fake.NewClientBuilder().WithScheme(driverscheme.New()).Build(), point, true),
		"the pin gone after the start": resolve(rj, withNewer, point, true),
	} {
		if !errors.Is(got.Refusal, ErrPinLost) || got.Base != nil {
			t.Errorf("%s: %+v, want ErrPinLost", name, got)
		} else {
			t.Logf("%s: %v", name, got.Refusal)
		}
	}
	early := changelog.Target{Time: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	if got, err := Resolve(ctx, withNewer, keys, rj, &night1, "2026-12-05T00:00:00Z", early, false); err != nil || !errors.Is(got.Refusal, ErrNoBase) {
		t.Fatalf("no base: %+v, %v", got, err)
	}
}
