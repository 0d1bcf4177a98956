#!/usr/bin/env bash
# Shared settings and helpers; every numbered script sources this file.
#
# Settings (environment, with defaults):
#   TENANT_NS      tenant namespace of the Etcd application   (tenant-demo)
#   CLASS          BackupClass and strategy name               (etcd-demo)
#   S3_ENDPOINT    S3 URL with scheme      (the sandbox exports it, https; required)
#   S3_CA_FILE     the CA an https S3_ENDPOINT chains to, when private (the sandbox exports it)
#   S3_BUCKET      bucket for snapshots                        (etcd-backups)
#   S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY   keys put into the tenant Secret
#                  (brokered: the platform's admin key, kept in the driver's namespace)
#   S3_CREDENTIAL_BROKER  empty: one S3 Secret per tenant namespace; a provider
#                  (MinIO; `sandbox run --s3 minio` exports it): the driver
#                  issues each tenant namespace its own key (docs/security.md)
#   DRIVER_NAMESPACE  the driver's namespace, for the admin Secret (etcd-backup-driver)
#   KEYS, VALUE_SIZE  sentinel data: how many keys, bytes per value (2000, 1024)
#   TIMEOUT        longest wait of any step                    (10m)
#   SANDBOX=1      set by the sandbox: data is reached through `sandbox kv`;
#                  on a real cluster `kubectl exec` into a member Pod instead.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TENANT_NS=${TENANT_NS:-tenant-demo}
CLASS=${CLASS:-etcd-demo}
S3_BUCKET=${S3_BUCKET:-etcd-backups}
KEYS=${KEYS:-2000}
VALUE_SIZE=${VALUE_SIZE:-1024}
TIMEOUT=${TIMEOUT:-10m}
S3_CREDENTIAL_BROKER=${S3_CREDENTIAL_BROKER:-}
DRIVER_NAMESPACE=${DRIVER_NAMESPACE:-etcd-backup-driver}
# The brokered mode's admin Secret and the Secret the driver writes into
# each tenant namespace (etcd-backup-broker-<strategy>).
ADMIN_SECRET=etcd-backup-platform-s3
BROKER_SECRET=etcd-backup-broker-$CLASS
TIMINGS=${TIMINGS:-/dev/null}

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
info() { printf '    %s\n' "$*"; }
fail() { printf '\033[31mFAILED: %s\033[0m\n' "$*" >&2; exit 1; }

# timed NAME CMD...: run CMD, append "NAME seconds" to $TIMINGS.
timed() {
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  awk -v n="$name" -v s="$start" -v e="$end" 'BEGIN { printf "%s %.1f\n", n, e - s }' >> "$TIMINGS"
}

# brokered: is the strategy in brokered-key mode?
brokered() { [ -n "$S3_CREDENTIAL_BROKER" ]; }

# wait_for WHAT KUBECTL-WAIT-ARGS...: say what we wait for, then wait.
wait_for() {
  local what=$1; shift
  info "waiting (up to $TIMEOUT) for $what"
  kubectl wait --timeout="$TIMEOUT" "$@" >/dev/null
}

# wait_phase KIND NAME: wait until .status.phase is Succeeded or Failed;
# print the phase and message; fail unless Succeeded.
wait_phase() {
  local kind=$1 name=$2 phase
  info "waiting (up to $TIMEOUT) for $kind/$name to finish (kubectl -n $TENANT_NS get $kind $name -w)"
  kubectl -n "$TENANT_NS" wait "$kind/$name" --timeout="$TIMEOUT" \
    --for=jsonpath='{.status.phase}'=Succeeded >/dev/null 2>&1 || true
  phase=$(kubectl -n "$TENANT_NS" get "$kind" "$name" -o jsonpath='{.status.phase}')
  info "$kind/$name: ${phase:-<none>}: $(kubectl -n "$TENANT_NS" get "$kind" "$name" -o jsonpath='{.status.message}')"
  [ "$phase" = Succeeded ] || fail "$kind/$name ended $phase"
}

# wait_cluster_ready: Available and every replica ready.
wait_cluster_ready() {
  wait_for "EtcdCluster etcd to exist" -n "$TENANT_NS" etcdcluster/etcd --for=create
  wait_for "EtcdCluster etcd to be Available" -n "$TENANT_NS" etcdcluster/etcd --for=condition=Available
  local replicas
  replicas=$(kubectl -n "$TENANT_NS" get etcdcluster etcd -o jsonpath='{.spec.replicas}')
  wait_for "all $replicas members ready" -n "$TENANT_NS" etcdcluster/etcd --for=jsonpath='{.status.readyMembers}'="$replicas"
}

# etcd_kv VERB [ARGS]: write/check/get sentinel data in the tenant's etcd.
# Sandbox: members are loopback processes, reached by `sandbox kv`.
# Real cluster: the equivalent is, for example,
#   kubectl -n $TENANT_NS exec etcd-0 -c etcd -- etcdctl \
#     --cacert=/etc/etcd/pki/client/ca.crt --cert=... --key=... put /sentinel/00000001 v1
etcd_kv() {
  local verb=$1; shift
  if [ "${SANDBOX:-}" = 1 ]; then
    "$SANDBOX_BIN" kv "$verb" --namespace "$TENANT_NS" --count "$KEYS" --size "$VALUE_SIZE" "$@"
  else
    fail "etcd_kv needs the sandbox; on a real cluster run etcdctl in a member Pod (see the comment above)"
  fi
}

command -v kubectl >/dev/null || fail "kubectl is required"
[ -n "${KUBECONFIG:-}" ] || [ -f "$HOME/.kube/config" ] || fail "set KUBECONFIG (the sandbox prints it)"
