package restoreoptions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
)

// What a RestoreJob does is what it started as; before it started, what
// its options ask.
func TestKindIsSettledWhenTheJobStarts(t *testing.T) {
	dry := &runtime.RawExtension{Raw: []byte(`{"dryRun":true}`)}
	plain := &runtime.RawExtension{Raw: []byte(`{"verify":"Size"}`)}
	malformed := &runtime.RawExtension{Raw: []byte(`{"dryRun":true,"bogus":1}`)}
	ready := func(reason backupsv1alpha1.RestoreReason) []metav1.Condition {
		return []metav1.Condition{{Type: backupsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(reason)}}
	}
	cond := func(t string) []metav1.Condition {
		return []metav1.Condition{{Type: t, Status: metav1.ConditionTrue, Reason: "X"}}
	}
	cases := []struct {
		name        string
		options     *runtime.RawExtension
		finalizers  []string
		conditions  []metav1.Condition
		records     bool
		want        Kind
		wantIgnored bool
	}{
		{"new restore", nil, nil, nil, false, Restore, false},
		{"new dry run", dry, nil, nil, false, DryRun, false},
		{"malformed options are a restore's to refuse", malformed, nil, nil, false, Restore, false},
		{"new restore waiting for its Backup", dry, nil, ready(backupsv1alpha1.ReasonBackupNotFound), false, DryRun, false},
		{"restore with its finalizer, dryRun set", dry, []string{backupsv1alpha1.RestoreFinalizer}, nil, false, Restore, true},
		{"restore claimed, dryRun set", dry, nil, cond(backupsv1alpha1.RestoreConditionClaimed), false, Restore, true},
		{"restore concluded, dryRun set", dry, nil, cond(backupsv1alpha1.RestoreConditionOutcome), false, Restore, true},
		{"restore known by the driver's records, dryRun set", dry, nil, nil, true, Restore, true},
		{"restore started, options unchanged", plain, []string{backupsv1alpha1.RestoreFinalizer}, nil, false, Restore, false},
		{"dry run rehearsing, dryRun dropped", plain, nil, ready(backupsv1alpha1.ReasonRehearsing), false, DryRun, true},
		{"dry run ended, dryRun dropped", nil, nil, ready(backupsv1alpha1.ReasonRehearsed), false, DryRun, true},
		{"dry run rehearsing, options unchanged", dry, nil, ready(backupsv1alpha1.ReasonRehearsing), false, DryRun, false},
		{"another finalizer is not the restore's", dry, []string{backupsv1alpha1.CleanupFinalizer}, nil, false, DryRun, false},
	}
	for _, tc := range cases {
		rj := &backupsv1alpha1.RestoreJob{
			ObjectMeta: metav1.ObjectMeta{Finalizers: tc.finalizers},
			Spec:       backupsv1alpha1.RestoreJobSpec{Options: tc.options},
			Status:     backupsv1alpha1.RestoreJobStatus{Conditions: tc.conditions},
		}
		got, ignored := KindOf(rj, tc.records)
		if got != tc.want || ignored != tc.wantIgnored {
			t.Errorf("%s: KindOf = %s (ignored %t), want %s (ignored %t)", tc.name, got, ignored, tc.want, tc.wantIgnored)
		}
		if IsDryRun(rj) != (tc.want == DryRun && !tc.records) && !tc.records {
			t.Errorf("%s: IsDryRun disagrees with KindOf", tc.name)
		}
	}
}

func TestParseRefusesWhatItDoesNotKnow(t *testing.T) {
	for raw, ok := range map[string]bool{
		`{}`: true, `{"dryRun":true}`: true, `{"verify":"Size","restoreTimeoutSeconds":60}`: true,
		`{"dryrun":true}`: false, `{"DryRun":true}`: false, `{"dryRun":"yes"}`: false, `{"verify":"Some"}`: false,
		`{"restoreTimeoutSeconds":-1}`: false, `{"restoreTimeoutSeconds":86401}`: false, `[1]`: false,
	} {
		if _, err := Parse(&runtime.RawExtension{Raw: []byte(raw)}); (err == nil) != ok {
			t.Errorf("%s: err %v, want ok=%t", raw, err, ok)
		}
	}
	o, err := Parse(nil)
	if err != nil || o.Verify != VerifyFull || !o.RollsBack() || !o.BumpsRevision() || !o.Fences() || !o.TakesSafetySnapshot() || o.DryRun {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	// Every field of Options is named in names, exactly.
	all := &runtime.RawExtension{Raw: []byte(`{"restoreTimeoutSeconds":1,"safetySnapshot":true,"verify":"Full","rollback":true,"bumpRevision":true,"fenceControlPlanes":true,"dryRun":false,"pointInTime":"7"}`)}
	if _, err := Parse(all); err != nil {
		t.Errorf("every option at once: %v", err)
	}
	if got, _ := Parse(DryRunOptions()); !got.DryRun {
		t.Error("DryRunOptions is no dry run")
	}
}
