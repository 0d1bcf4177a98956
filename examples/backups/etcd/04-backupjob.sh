#!/usr/bin/env bash
# Tenant: one backup now. The driver creates one EtcdSnapshot, the operator
# streams it to S3, the driver records a Backup with the object's URI, size
# and sha256.
source "$(dirname "$0")/00-helpers.sh"
JOB=${JOB:-etcd-manual}

step "tenant: BackupJob $JOB"
kubectl apply -f - <<YAML
apiVersion: backups.cozystack.io/v1alpha1
kind: BackupJob
metadata:
  name: $JOB
  namespace: $TENANT_NS
spec:
  applicationRef:
    kind: Etcd
    name: etcd
  backupClassName: $CLASS
YAML
timed backup wait_phase backupjob "$JOB"
BACKUP=$(kubectl -n "$TENANT_NS" get backupjob "$JOB" -o jsonpath='{.status.backupRef.name}')
info "Backup $BACKUP:"
kubectl -n "$TENANT_NS" get backup "$BACKUP" -o jsonpath='{range .status.artifact}      uri={.uri}{"\n"}      size={.sizeBytes}{"\n"}      checksum={.checksum}{"\n"}{end}'
if brokered; then
  info "the snapshot ran with the driver's Secret $BROKER_SECRET (key $(kubectl -n "$TENANT_NS" get secret "$BROKER_SECRET" -o jsonpath='{.data.AWS_ACCESS_KEY_ID}' | base64 -d), scope $(kubectl -n "$TENANT_NS" get secret "$BROKER_SECRET" -o jsonpath='{.metadata.annotations.etcd-backup-driver\.cozystack\.io/key-scope}'))"
fi
