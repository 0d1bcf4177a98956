#!/usr/bin/env bash
# Remove what the scenario created. Backups are deleted with the namespace;
# with deletionPolicy Retain their S3 objects stay. Brokered keys: deleting
# the strategy or its StrategyPolicy deletes its tenant keys and Secrets
# (both hold the broker's finalizer until then), then the admin Secret goes.
source "$(dirname "$0")/00-helpers.sh"
step "cleanup: namespace $TENANT_NS, BackupClass, strategy and StrategyPolicy $CLASS"
kubectl delete namespace "$TENANT_NS" --ignore-not-found --wait=false
kubectl delete backupclass "$CLASS" --ignore-not-found
kubectl delete etcds.strategy.backups.cozystack.io "$CLASS" --ignore-not-found
kubectl delete strategypolicies.etcd-backup-driver.cozystack.io "$CLASS" --ignore-not-found
if brokered; then
  # After the strategy and policy: their finalizer deletes the tenant keys
  # with the admin key.
  kubectl -n "$DRIVER_NAMESPACE" delete secret "$ADMIN_SECRET" --ignore-not-found
fi
