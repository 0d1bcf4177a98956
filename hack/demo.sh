#!/usr/bin/env bash
# make demo: start the sandbox (Cozystack's CRDs as pinned, S3 over https
# with a CA of its own), run the steps of examples/backups/etcd/run-all.sh
# against it with a Kamaji TenantControlPlane (kubernetes-demo, a real
# kube-apiserver on the tenant etcd) living in the etcd being restored, then
# a pruning Plan and a content-drop hold (06-plan-retention-and-hold.sh)
# and an accidental delete undone to the second (07-point-in-time.sh),
# print a one-screen summary with timings, and stop the sandbox whatever
# happens (Ctrl-C included).
# SANDBOX_CMD runs another build of cmd/sandbox than bin/sandbox.
# BROKERED=1 (what make demo sets unless BROKERED=0) runs it on a real MinIO
# server (bin/minio) with brokered keys: the platform key stays in the
# driver's namespace, the tenant gets a key of its own, and the summary
# shows what that key reaches.
# IMAGE=1 (make demo IMAGE=1) is container mode: the driver and the
# restore's staging Pod run from the image `make image` built, with podman.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
ENV_FILE=$WORK/env
export TIMINGS=$WORK/timings
: > "$TIMINGS"
started=$(date +%s.%N)

S3_SERVER=embedded
if [ "${BROKERED:-0}" != 0 ]; then S3_SERVER=minio; fi
MODE=()
if [ -n "${IMAGE:-}" ] && [ "${IMAGE:-}" != 0 ]; then MODE=(--image); fi
"${SANDBOX_CMD:-$ROOT/bin/sandbox}" run --s3 "$S3_SERVER" "${MODE[@]}" --env-file "$ENV_FILE" > "$WORK/sandbox.log" 2>&1 &
SB_PID=$!
stop() {
  if kill -0 "$SB_PID" 2>/dev/null; then
    kill -INT "$SB_PID"
    wait "$SB_PID" || true
  fi
  rm -rf "$WORK"
}
trap stop EXIT
trap 'exit 130' INT TERM

echo "demo: starting the sandbox (kube-apiserver with Cozystack's CRDs, driver${MODE:+ from its image}, S3 ($S3_SERVER, https), etcd-operator, helm-controller and Kamaji stand-ins)..."
for _ in $(seq 1 120); do
  [ -s "$ENV_FILE" ] && break
  kill -0 "$SB_PID" 2>/dev/null || { cat "$WORK/sandbox.log"; echo "demo: the sandbox did not start" >&2; exit 1; }
  sleep 0.5
done
[ -s "$ENV_FILE" ] || { echo "demo: the sandbox did not start within 60s" >&2; exit 1; }
# shellcheck disable=SC1090
source "$ENV_FILE"

export KEYS=${KEYS:-20000} VALUE_SIZE=${VALUE_SIZE:-1024}
NS=${TENANT_NS:-tenant-demo}
TCP=kubernetes-demo
EX=$ROOT/examples/backups/etcd
for s in 01-strategy.sh 02-bucket-and-class.sh 03-source-app.sh; do bash "$EX/$s"; done

# A Kamaji control plane storing in the tenant's etcd, on the DataStore the
# chart rendered (named after the namespace): the restore rewinds its
# Kubernetes too. The sandbox's Kamaji stand-in runs its kube-apiserver.
printf '\n\033[1m==> kamaji: TenantControlPlane %s on DataStore %s\033[0m\n' "$TCP" "$NS"
kubectl apply -f - <<YAML
apiVersion: kamaji.clastix.io/v1alpha1
kind: TenantControlPlane
metadata:
  name: $TCP
  namespace: $NS
spec:
  dataStore: $NS
  controlPlane:
    service:
      serviceType: ClusterIP
  networkProfile: {}
  kubernetes:
    version: v1.37.2
    kubelet: {}
YAML
kubectl -n "$NS" wait "tenantcontrolplane/$TCP" --timeout=3m \
  --for=jsonpath='{.status.kubernetesResources.version.status}'=Ready >/dev/null
tcp_state() {
  printf '    TenantControlPlane %s: %s; control-plane Pod: %s\n' "$TCP" \
    "$(kubectl -n "$NS" get tenantcontrolplane "$TCP" -o jsonpath='{.status.kubernetesResources.version.status}')" \
    "$(kubectl -n "$NS" get pods -l kamaji.clastix.io/name=$TCP,kamaji.clastix.io/component=deployment -o jsonpath='{range .items[*]}{.metadata.name} {end}')"
}
tcp_state
printf '    DataStore %s used by: %s\n' "$NS" "$(kubectl get datastore "$NS" -o jsonpath='{.status.usedBy}')"

bash "$EX/04-backupjob.sh"

# What the Backup holds (its manifest, read by the driver's inspection
# Job from the stored bytes), and a rehearsal of it: a dry-run restore that
# boots the snapshot in a throwaway etcd and says what a real restore would
# change, touching nothing live. The plugin is bin/kubectl-etcd_backup.
export PATH="$ROOT/bin:$PATH"
# shellcheck source=../examples/backups/etcd/00-helpers.sh
source "$EX/00-helpers.sh" # timed
printf '\n\033[1m==> what the Backup holds (kubectl etcd-backup show etcd-manual)\033[0m\n'
timed inspect kubectl -n "$NS" wait backup/etcd-manual --timeout=3m --for=condition=Inspected >/dev/null
kubectl etcd-backup show etcd-manual -n "$NS" | sed 's/^/    /'
printf '\n\033[1m==> a rehearsal (kubectl etcd-backup restore etcd --from etcd-manual --dry-run)\033[0m\n'
timed rehearsal kubectl etcd-backup restore etcd -n "$NS" --from etcd-manual --dry-run --name etcd-rehearsal | sed 's/^/    /'

bash "$EX/05-restore-in-place.sh"

t() { awk -v k="$1" '$1 == k { print $2 }' "$TIMINGS"; }
s3="$S3_ENDPOINT, its own CA (--s3-ca-file)"
printf '\n\033[1m==> what the restore did to the control plane\033[0m\n'
echo "    tenant etcd revision: $(t etcd-revision-before) right before the restore, $(t etcd-revision-after) after"
echo "    RestoreJob etcd-restore conditions (ControlPlanesFenced, ControlPlanesRestarted, RevisionRaised when the driver handles control planes):"
kubectl -n "$NS" get restorejob etcd-restore \
  -o jsonpath='{range .status.conditions[*]}      {.type}={.status} ({.reason}): {.message}{"\n"}{end}'
tcp_state

# A pruning Plan, and the content-drop hold that keeps its last good Backup.
bash "$EX/06-plan-retention-and-hold.sh"

# Point-in-time: capture on, objects created, the time noted, deleted,
# restored to the noted second.
bash "$EX/07-point-in-time.sh"

credentials=
if [ -n "${S3_CREDENTIAL_BROKER:-}" ]; then
  BROKER_SECRET=etcd-backup-broker-${CLASS:-etcd-demo}
  printf '\n\033[1m==> brokered key: what the Secret in %s reaches (asked of MinIO)\033[0m\n' "$NS"
  "$SANDBOX_BIN" keyscope --namespace "$NS" --secret "$BROKER_SECRET"
  tenant_key=$(kubectl -n "$NS" get secret "$BROKER_SECRET" -o jsonpath='{.data.AWS_ACCESS_KEY_ID}' | base64 -d)
  credentials="
  S3 credentials              Secret $BROKER_SECRET, written by the driver: key $tenant_key
                              lists $NS/, cannot list other prefixes or the bucket,
                              cannot delete its own snapshot; no Secret in $NS holds
                              the platform key $S3_ACCESS_KEY_ID (kept in $DRIVER_NAMESPACE)"
fi

driver="in the sandbox's process"
if [ -n "${DRIVER_IMAGE:-}" ]; then
  staged=$(kubectl -n "$NS" get pods -l etcd-backup-driver.cozystack.io/staging-for \
    -o jsonpath='{range .items[*]}{range .status.containerStatuses[*]}{.imageID}{" "}{end}{end}')
  driver="container of $DRIVER_IMAGE
                              (user 65532, read-only root, the chart's arguments);
                              staging Pod ran image ${staged:-?}"
fi

bytes=$(kubectl -n "${TENANT_NS:-tenant-demo}" get backup etcd-manual -o jsonpath='{.status.artifact.sizeBytes}')
uri=$(kubectl -n "${TENANT_NS:-tenant-demo}" get backup etcd-manual -o jsonpath='{.status.artifact.uri}')
total=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f", e - s }')
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
rate=$(awk -v m="$mb" -v t="$(t backup)" 'BEGIN { printf "%.1f", m / t }')
cat <<TXT

================================ demo summary ================================
  sandbox start-up            ${SANDBOX_STARTUP_SECONDS}s
  platform                    Cozystack's CRDs (config/crd/upstream/cozystack) and the
                              driver's own; S3 at $s3
  driver                      $driver
  etcd cluster (3 members)    $(t cluster-start)s   HelmRelease -> EtcdCluster -> members ready
  sentinel data               $KEYS keys x $VALUE_SIZE B written in $(t write-sentinels)s
  backup                      $(t backup)s   BackupJob -> EtcdSnapshot -> S3 -> Backup
                              ${mb} MB at $uri
                              (${rate} MB/s end to end)
  manifest                    $(t inspect)s   inspection Job: size, sha256, trailer, bbolt; counts
                              per Kubernetes keyspace (kubectl etcd-backup show)
  rehearsal                   $(t rehearsal)s   dry run: staged, booted in a throwaway etcd, read
                              back, compared with the live cluster; nothing touched
  disaster                    sentinels overwritten with generation v2
  in-place restore            $(t restore)s   safety Backup, suspend, stage the snapshot on a
                              claim (checked, revision raised), purge,
                              re-create from the staged claim, resume
  tenant etcd revision        $(t etcd-revision-before) before, $(t etcd-revision-after) after   (raised only if after > before)
  control plane               TenantControlPlane $TCP on the restored etcd$credentials
  verify                      $(t verify)s   all $KEYS keys back at generation v1
  pruning Plan                keep-last 1: Backup $(t pruned-backup) pruned $(t prune)s
                              after the next run's Backup was inspected
  content-drop hold           Backup $(t dropped-backup) lost the ConfigMaps: ContentDrop;
                              $(t held-backup), the last good one, held from retention
                              until a person released it, then pruned
  restore to a point          $(t point-restore)s   objects deleted after $(t point-noted) back: Backup
                              $(t point-base) plus the captured changes up to that second
  total                       ${total}s
  RESULT                      SUCCESS: the backed-up data is back, retention pruned,
                              the hold kept the last good Backup, and the deleted
                              objects came back to the second
==============================================================================
TXT
