#!/usr/bin/env bash
# Tenant: a Plan that prunes, and the content-drop hold that stops it from
# pruning the last good Backup. Cozystack's Plan has only applicationRef,
# backupClassName and schedule; the driver's retention is an annotation
# (etcd-backup-driver.cozystack.io/retention-keep-last) and applies to
# every Backup whose BackupJob names the Plan, whoever created that
# BackupJob. Here the script plays Cozystack's Plan controller and creates
# the Plan's BackupJobs itself (spec.planRef); the suspend annotation keeps
# the driver's own scheduler, which the sandbox runs, out of the way.
#
# The driver inspects every Backup (its manifest: objects per Kubernetes
# keyspace, resource and namespace). When a Backup holds markedly less than
# the one before it (a StrategyPolicy's inspection thresholds: by default
# half of a resource and at least 5 objects), it is marked ContentDrop and
# the last good Backup is held (annotation
# backups.cozystack.io/held-for-content-drop): retention keeps it until a
# person releases the hold.
source "$(dirname "$0")/00-helpers.sh"
PLAN=${PLAN:-etcd-daily}
OBJECTS=${OBJECTS:-40}
HOLD=backups.cozystack.io/held-for-content-drop

step "tenant: Plan $PLAN keeps the newest Backup (retention-keep-last: 1)"
kubectl apply -f - <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: Plan
metadata:
  name: $PLAN
  namespace: $TENANT_NS
  annotations:
    etcd-backup-driver.cozystack.io/retention-keep-last: "1"
    etcd-backup-driver.cozystack.io/suspend: "true"
spec:
  applicationRef:
    kind: Etcd
    name: etcd
  backupClassName: $CLASS
  schedule:
    cron: "CRON_TZ=Europe/Berlin 0 3 * * *"
YAML

# plan_run NAME: the BackupJob of one run of the Plan, as Cozystack's Plan
# controller creates it; prints the Backup's name once it is inspected.
plan_run() {
  local job=$1 backup
  kubectl apply -f - >/dev/null <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: BackupJob
metadata:
  name: $job
  namespace: $TENANT_NS
spec:
  planRef:
    name: $PLAN
  applicationRef:
    kind: Etcd
    name: etcd
  backupClassName: $CLASS
YAML
  wait_phase backupjob "$job" >&2
  backup=$(kubectl -n "$TENANT_NS" get backupjob "$job" -o jsonpath='{.status.backupRef.name}')
  kubectl -n "$TENANT_NS" wait "backup/$backup" --timeout="$TIMEOUT" --for=condition=Inspected >/dev/null
  echo "$backup"
}

# The application's Kubernetes objects: a namespace "shop" with $OBJECTS
# ConfigMaps, written straight into the tenant's etcd under /registry as a
# kube-apiserver stores them (the manifest counts keys, not values).
step "tenant: a namespace shop with $OBJECTS ConfigMaps in the tenant's etcd"
etcd_kv put /registry/namespaces/shop shop >/dev/null
etcd_kv write --prefix /registry/configmaps/shop --count "$OBJECTS" --size 64

step "Cozystack's Plan controller: two runs of $PLAN; retention keeps one"
first=$(plan_run "$PLAN-1")
second=$(plan_run "$PLAN-2")
start=$(date +%s.%N)
kubectl -n "$TENANT_NS" wait "backup/$first" --timeout="$TIMEOUT" --for=delete >/dev/null
awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "prune %.1f\n", e - s }' >> "$TIMINGS"
info "Backup $first pruned (keep-last 1), Backup $second kept:"
kubectl etcd-backup list -n "$TENANT_NS" | sed 's/^/      /'

step "disaster: the $OBJECTS ConfigMaps of namespace shop are deleted"
etcd_kv delete --prefix /registry/configmaps/shop

step "Cozystack's Plan controller: the next run of $PLAN"
third=$(plan_run "$PLAN-3")
kubectl -n "$TENANT_NS" wait "backup/$third" --timeout="$TIMEOUT" --for=condition=ContentDrop >/dev/null
info "Backup $third: ContentDrop: $(kubectl -n "$TENANT_NS" get backup "$third" \
  -o jsonpath='{.status.conditions[?(@.type=="ContentDrop")].message}')"
kubectl -n "$TENANT_NS" wait "backup/$second" --timeout="$TIMEOUT" \
  --for=jsonpath="{.metadata.annotations.backups\.cozystack\.io/held-for-content-drop}=$third" >/dev/null
info "Backup $second, the last good one, is held ($HOLD=$third): keep-last 1 does not prune it"
info "what the two hold (kubectl etcd-backup diff $second $third):"
kubectl etcd-backup diff -n "$TENANT_NS" "$second" "$third" | sed 's/^/      /'
# Retention has run since the hold was placed: the held Backup is still there.
sleep 3
kubectl -n "$TENANT_NS" get backup "$second" >/dev/null || fail "the held Backup $second was pruned"

step "a person decides the drop was intended: kubectl annotate backup $second $HOLD-"
kubectl -n "$TENANT_NS" annotate backup "$second" "$HOLD-" >/dev/null
kubectl -n "$TENANT_NS" wait "backup/$second" --timeout="$TIMEOUT" --for=delete >/dev/null
info "Backup $second released and pruned; $third is the Plan's one Backup now"
kubectl etcd-backup list -n "$TENANT_NS" | sed 's/^/      /'
{
  echo "pruned-backup $first"
  echo "held-backup $second"
  echo "dropped-backup $third"
} >> "$TIMINGS"
