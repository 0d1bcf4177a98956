#!/usr/bin/env bash
# Tenant: disaster strikes (the data is changed), then an in-place restore.
# The driver takes a safety Backup, saves the live EtcdCluster, suspends the
# HelmRelease (otherwise Flux would put the old cluster straight back),
# deletes the cluster, re-creates it with spec.bootstrap.restore pointing at
# the exact snapshot object, waits for every member, and resumes the release.
source "$(dirname "$0")/00-helpers.sh"
JOB=${JOB:-etcd-manual}
RESTORE=${RESTORE:-etcd-restore}
BACKUP=$(kubectl -n "$TENANT_NS" get backupjob "$JOB" -o jsonpath='{.status.backupRef.name}')
[ -n "$BACKUP" ] || fail "BackupJob $JOB has no Backup; run 04-backupjob.sh first"

step "disaster: overwrite the sentinels with generation v2"
etcd_kv write --generation v2
if etcd_kv check --generation v1 >/dev/null 2>&1; then fail "the data did not change"; fi
info "the live data no longer matches the backup"
if [ "${SANDBOX:-}" = 1 ]; then
  rev_before=$(etcd_kv revision)
  echo "etcd-revision-before $rev_before" >> "$TIMINGS"
fi

step "tenant: RestoreJob $RESTORE from Backup $BACKUP"
kubectl apply -f - <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: RestoreJob
metadata:
  name: $RESTORE
  namespace: $TENANT_NS
spec:
  backupRef:
    name: $BACKUP
YAML
timed restore wait_phase restorejob "$RESTORE"
kubectl -n "$TENANT_NS" get restorejob "$RESTORE" -o jsonpath='{range .status.conditions[*]}      {.type}={.status} ({.reason}){"\n"}{end}'
wait_cluster_ready
if [ "${SANDBOX:-}" = 1 ]; then
  rev_after=$(etcd_kv revision)
  echo "etcd-revision-after $rev_after" >> "$TIMINGS"
  info "tenant etcd revision: $rev_before before the restore, $rev_after after (a raised revision is above the one before)"
fi

step "verify: every sentinel is back at generation v1"
timed verify etcd_kv check --generation v1
suspended=$(kubectl -n "$TENANT_NS" get helmrelease etcd -o jsonpath='{.spec.suspend}')
[ "${suspended:-false}" = false ] || fail "HelmRelease etcd was left suspended"
info "HelmRelease etcd is resumed"
