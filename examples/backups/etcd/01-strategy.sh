#!/usr/bin/env bash
# Admin, once per platform: the Etcd strategy says where snapshots go, and
# its StrategyPolicy (same name; the driver's own kind, as Cozystack's
# strategy serves nothing more than the destination) says how: deletion
# policy, plain http, brokered keys. Every string under the strategy's
# spec.template is a Go template rendered per BackupJob with .Application
# (the apps.cozystack.io/Etcd object) and .Parameters.
#
# With S3_CREDENTIAL_BROKER set (brokered keys, docs/security.md) the
# platform's admin key goes into a Secret in the driver's namespace, never a
# tenant's, and the StrategyPolicy's credentialBroker names it: the driver
# issues each tenant namespace its own key, limited to that namespace's
# prefix.
source "$(dirname "$0")/00-helpers.sh"
: "${S3_ENDPOINT:?set S3_ENDPOINT (the sandbox exports it)}"
# The driver refuses plain-http endpoints unless the StrategyPolicy opts in.
# The sandbox's S3 speaks https with a CA of its own, which the sandbox
# handed the driver (--s3-ca-file; the chart's s3CA on a real platform) and
# exported as S3_CA_FILE; only `sandbox run --plain-http` speaks http.
ALLOW_HTTP=false
[[ $S3_ENDPOINT == http://* ]] && ALLOW_HTTP=true

BUCKET='{{ .Parameters.bucket }}'
BROKER=
if brokered; then
  : "${S3_ACCESS_KEY_ID:?set S3_ACCESS_KEY_ID}" "${S3_SECRET_ACCESS_KEY:?set S3_SECRET_ACCESS_KEY}"
  step "admin: the platform's S3 admin key in Secret $DRIVER_NAMESPACE/$ADMIN_SECRET (the driver's namespace)"
  kubectl -n "$DRIVER_NAMESPACE" create secret generic "$ADMIN_SECRET" \
    --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY_ID" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_ACCESS_KEY" \
    --dry-run=client -o yaml | kubectl apply -f -
  # One tenant key covers one bucket: the bucket is literal in this mode.
  BUCKET=$S3_BUCKET
  BROKER="credentialBroker: {provider: $S3_CREDENTIAL_BROKER, adminSecretRef: {name: $ADMIN_SECRET}}"
fi

# The policy before the strategy: a strategy without one is https only.
step "admin: StrategyPolicy $CLASS: Retain, http $ALLOW_HTTP${BROKER:+, brokered keys}"
kubectl apply -f - <<YAML
apiVersion: etcd-backup-driver.cozystack.io/v1alpha1
kind: StrategyPolicy
metadata:
  name: $CLASS
spec:
  deletionPolicy: Retain
  allowHTTPEndpoint: $ALLOW_HTTP
  $BROKER
YAML

step "admin: Etcd strategy $CLASS -> s3://$S3_BUCKET/<namespace>/<app>/ at $S3_ENDPOINT"
kubectl apply -f - <<YAML
apiVersion: strategy.backups.cozystack.io/v1alpha1
kind: Etcd
metadata:
  name: $CLASS
spec:
  template:
    destination:
      s3:
        bucket: "$BUCKET"
        endpoint: $S3_ENDPOINT
        key: "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/"
        region: us-east-1
        forcePathStyle: true
        credentialsSecretRef:
          name: etcd-backup-s3   # brokered: ignored, the driver names its own Secret
YAML
