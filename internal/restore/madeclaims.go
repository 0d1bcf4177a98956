package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupsv1alpha1 "github.com/etcd-backup-driver/etcd-backup-driver/api/backups/v1alpha1"
	etcdv1alpha2 "github.com/etcd-backup-driver/etcd-backup-driver/api/etcdoperator/v1alpha2"
)

// This file holds the staging claims' bookkeeping and their settling at
// the end of a restore: handed to the cluster that boots from them, or
// deleted with the staging Job.

// madeClaims remembers the staging claims this process created itself (the
// API server answered 201, not AlreadyExists), with the UID it gave them:
// such a claim is known to be this restore's without a live read, while
// its Job runs, when the staging is judged, and at the hand-back, which
// patches it by that UID. A restart forgets them and every claim is read
// again, so a crash between the Job's create and the claim's is still
// found (the claim is then made).
type madeClaims struct{ m sync.Map }

func (c *madeClaims) add(job, claim types.UID) { c.m.Store(job, claim) }

func (c *madeClaims) has(job types.UID) bool {
	_, ok := c.claimUID(job)
	return ok
}

// claimUID is the UID of the claim this process made for job.
func (c *madeClaims) claimUID(job types.UID) (types.UID, bool) {
	v, ok := c.m.Load(job)
	if !ok {
		return "", false
	}
	return v.(types.UID), true
}

func (c *madeClaims) forget(job types.UID) { c.m.Delete(job) }

// uidOf is the UID of what this process made for job: the same record
// serves the staging Jobs and the re-created clusters (Reconciler.madeJob,
// Reconciler.madeCluster).
func (c *madeClaims) uidOf(job types.UID) types.UID {
	uid, _ := c.claimUID(job)
	return uid
}

// settles: the restore may have made a staging claim (it took its claim
// with the revision to raise, or its Job is there).
func settles(o *observation) bool {
	return o.staging != nil || (o.opts.BumpsRevision() && o.job.Status.StartedAt != nil)
}

// settleStaging hands the staging claim to the cluster that boots from it
// (so it lives exactly as long as that cluster) or deletes it, and deletes
// the staging Job with its Pods unless the claim lives on with a finished
// Job: a finished Pod still names the claim, and PVC protection would keep
// a deleted claim Terminating for the Job's TTL (a day). The report the
// Job left is in the RestoreJob's status by then. A finished Job whose
// claim seeds the cluster stays for its Pods' logs until its TTL
// (stagingjob.TTLAfterFinished).
func (r *Reconciler) settleStaging(ctx context.Context, o *observation) error {
	done, err := r.handMadeClaim(ctx, o)
	if err != nil {
		return err
	}
	if !done {
		if err := r.settleReadClaim(ctx, o); err != nil {
			return err
		}
	}
	j := o.staging
	if j == nil || !j.DeletionTimestamp.IsZero() || (usesStaging(o) && stagingDone(o)) {
		return nil
	}
	err = r.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete staging Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// settleReadClaim settles the staging claim after reading it: handed to
// the cluster that boots from it, deleted when this restore's and unused,
// left alone when it is not this restore's.
func (r *Reconciler) settleReadClaim(ctx context.Context, o *observation) error {
	_, name := stagingNames(o)
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.LiveReader.Get(ctx, client.ObjectKey{Namespace: o.job.Namespace, Name: name}, pvc)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read staging PersistentVolumeClaim %s/%s: %w", o.job.Namespace, name, err)
	case pvc.Labels[backupsv1alpha1.StagingLabel] != string(o.job.UID):
		// Not ours: left alone.
	case usesStaging(o):
		return r.ownClaimByCluster(ctx, o, pvc)
	default:
		if err := r.Client.Delete(ctx, pvc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete staging PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	return nil
}

// handMadeClaim settles a claim this process made without reading it
// first: it hands it to the cluster that boots from it (a strategic merge
// patch adding the cluster's owner reference, merged by UID, so repeating
// it is harmless) or deletes it, either way on exactly the claim made,
// named by its UID. A claim by that name with another UID refuses both,
// and is then read and judged. done is false when the claim is not one
// this process made, or its Job still runs.
func (r *Reconciler) handMadeClaim(ctx context.Context, o *observation) (bool, error) {
	uid, made := r.made.claimUID(o.job.UID)
	if !made || !stagingDone(o) {
		return false, nil
	}
	_, name := stagingNames(o)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: o.job.Namespace, Name: name}}
	var err error
	if usesStaging(o) {
		ref := metav1.OwnerReference{APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: o.cluster.Name, UID: o.cluster.UID}
		body, merr := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid, "ownerReferences": []metav1.OwnerReference{ref}}})
		if merr != nil {
			return false, merr
		}
		err = r.Client.Patch(ctx, pvc, client.RawPatch(types.StrategicMergePatchType, body))
	} else {
		err = r.Client.Delete(ctx, pvc, client.Preconditions{UID: &uid})
	}
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsInvalid(err), apierrors.IsConflict(err):
		// Not the claim made (its UID differs): judged after a read.
		r.made.forget(o.job.UID)
		return false, nil
	}
	return false, fmt.Errorf("settle staging PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
}

func (r *Reconciler) ownClaimByCluster(ctx context.Context, o *observation, pvc *corev1.PersistentVolumeClaim) error {
	for _, ref := range pvc.OwnerReferences {
		if ref.UID == o.cluster.UID {
			return nil
		}
	}
	patch := client.MergeFromWithOptions(pvc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pvc.OwnerReferences = append(pvc.OwnerReferences, metav1.OwnerReference{
		APIVersion: etcdv1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: o.cluster.Name, UID: o.cluster.UID,
	})
	if err := r.Client.Patch(ctx, pvc, patch); err != nil {
		return fmt.Errorf("hand staging PersistentVolumeClaim %s/%s to EtcdCluster %s: %w", pvc.Namespace, pvc.Name, o.cluster.Name, err)
	}
	return nil
}
