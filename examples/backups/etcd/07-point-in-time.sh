#!/usr/bin/env bash
# An accidental delete undone to the second (docs/point-in-time.md). The
# admin lets the strategy capture (StrategyPolicy spec.pointInTime); the
# tenant turns it on for a Plan (annotation
# etcd-backup-driver.cozystack.io/point-in-time: "true"). Once the Plan has
# a good, inspected Backup, the driver runs a capture Pod in the tenant's
# namespace that writes every change of the etcd after that Backup to S3.
# Objects are created, the time is noted, they are deleted; a RestoreJob
# with spec.options.pointInTime at the noted time restores the Backup plus
# the changes up to that second, through the same safe path as every
# restore, and the objects are back.
source "$(dirname "$0")/00-helpers.sh"
PLAN=${PLAN:-etcd-continuous}
RESTORE=${RESTORE:-etcd-restore-to-point}
OBJECTS=${OBJECTS:-50}
PREFIX=/registry/configmaps/orders

step "admin: StrategyPolicy $CLASS lets tenants capture (a segment every second)"
kubectl patch strategypolicy "$CLASS" --type merge \
  -p '{"spec":{"pointInTime":{"enabled":true,"segmentSeconds":1}}}' >/dev/null

step "tenant: Plan $PLAN with point-in-time capture on, and a Backup of it"
kubectl apply -f - >/dev/null <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: Plan
metadata:
  name: $PLAN
  namespace: $TENANT_NS
  annotations:
    etcd-backup-driver.cozystack.io/point-in-time: "true"
    etcd-backup-driver.cozystack.io/suspend: "true"
spec:
  applicationRef:
    kind: Etcd
    name: etcd
  backupClassName: $CLASS
  schedule:
    cron: "0 3 * * *"
---
apiVersion: backups.cozystack.io/v1alpha1
kind: BackupJob
metadata:
  name: $PLAN-base
  namespace: $TENANT_NS
spec:
  planRef:
    name: $PLAN
  applicationRef:
    kind: Etcd
    name: etcd
  backupClassName: $CLASS
YAML
wait_phase backupjob "$PLAN-base"
BASE=$(kubectl -n "$TENANT_NS" get backupjob "$PLAN-base" -o jsonpath='{.status.backupRef.name}')
wait_for "Backup $BASE to be inspected (the capture follows an inspected Backup)" \
  -n "$TENANT_NS" "backup/$BASE" --for=condition=Inspected
wait_for "the capture to report (CaptureProgress Capturing)" -n "$TENANT_NS" captureprogress --all --for=condition=Capturing
REC=$(kubectl -n "$TENANT_NS" get captureprogress -o jsonpath='{.items[0].metadata.name}')
info "capture Pod: $(kubectl -n "$TENANT_NS" get pods -l etcd-backup-driver.cozystack.io/capture="$REC" \
  -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}, restarts {.status.containerStatuses[0].restartCount}{end}')"

# window_past T: wait until the window reaches past T (epoch seconds).
window_past() {
  local to
  for _ in $(seq 1 240); do
    to=$(kubectl -n "$TENANT_NS" get captureprogress "$REC" -o jsonpath='{.status.window.to}')
    if [ -n "$to" ] && [ "$(date -d "$to" +%s.%N)" \> "$1" ]; then return 0; fi
    sleep 0.5
  done
  fail "the window did not pass $(date -u -d "@$1" +%FT%TZ) in 2 minutes"
}

step "tenant: $OBJECTS ConfigMaps of namespace orders in the tenant's etcd"
etcd_kv write --prefix "$PREFIX" --count "$OBJECTS" --size 64
sleep 1
NOTED=$(date -u +%FT%TZ)
info "noted: $NOTED"
sleep 1

step "disaster: the ConfigMaps of namespace orders are deleted"
etcd_kv delete --prefix "$PREFIX"
GONE=$(date +%s.%N)
window_past "$GONE"
info "window: $(kubectl -n "$TENANT_NS" get captureprogress "$REC" -o jsonpath='{.status.window.from} to {.status.window.to}')"

step "tenant: RestoreJob $RESTORE to $NOTED (spec.options.pointInTime)"
kubectl apply -f - >/dev/null <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: RestoreJob
metadata:
  name: $RESTORE
  namespace: $TENANT_NS
spec:
  backupRef:
    name: $BASE
  options:
    pointInTime: "$NOTED"
YAML
timed point-restore wait_phase restorejob "$RESTORE"
wait_cluster_ready

step "verify: the $OBJECTS ConfigMaps of orders are back"
etcd_kv check --prefix "$PREFIX" --count "$OBJECTS" --size 64
{
  echo "point-noted $NOTED"
  echo "point-base $BASE"
} >> "$TIMINGS"
