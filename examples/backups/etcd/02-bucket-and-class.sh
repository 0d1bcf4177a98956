#!/usr/bin/env bash
# Admin: the bucket, the tenant's credentials Secret, and the BackupClass that
# binds apps.cozystack.io/Etcd to the strategy.
#
# Sandbox: the embedded S3 server already has the bucket and accepts the keys
# it exported. Real Cozystack: the bucket comes from a COSI BucketClaim and the
# platform projects its credentials into each tenant namespace; create the
# Secret yourself only when you bring your own S3. Brokered keys: no Secret
# is copied into the namespace; the driver writes $BROKER_SECRET there at the
# first backup.
source "$(dirname "$0")/00-helpers.sh"

if brokered; then
  step "admin: namespace $TENANT_NS (no S3 Secret: the driver brokers its key into $BROKER_SECRET)"
  kubectl create namespace "$TENANT_NS" --dry-run=client -o yaml | kubectl apply -f -
else
  : "${S3_ACCESS_KEY_ID:?set S3_ACCESS_KEY_ID}" "${S3_SECRET_ACCESS_KEY:?set S3_SECRET_ACCESS_KEY}"
  step "admin: namespace $TENANT_NS and its S3 credentials Secret etcd-backup-s3"
  kubectl create namespace "$TENANT_NS" --dry-run=client -o yaml | kubectl apply -f -
  kubectl -n "$TENANT_NS" create secret generic etcd-backup-s3 \
    --from-literal=AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY_ID" \
    --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET_ACCESS_KEY" \
    --dry-run=client -o yaml | kubectl apply -f -
fi

step "admin: BackupClass $CLASS (bucket $S3_BUCKET)"
kubectl apply -f - <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: BackupClass
metadata:
  name: $CLASS
spec:
  strategies:
    - application:
        kind: Etcd
      strategyRef:
        apiGroup: strategy.backups.cozystack.io
        kind: Etcd
        name: $CLASS
      parameters:
        bucket: $S3_BUCKET
YAML
