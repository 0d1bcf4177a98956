#!/usr/bin/env bash
# Remove what the scenario created. Backups are deleted with the namespace;
# with deletionPolicy Retain their S3 objects stay.
source "$(dirname "$0")/00-helpers.sh"
step "cleanup: namespace $TENANT_NS, BackupClass and strategy $CLASS"
kubectl delete namespace "$TENANT_NS" --ignore-not-found --wait=false
kubectl delete backupclass "$CLASS" --ignore-not-found
kubectl delete etcds.strategy.backups.cozystack.io "$CLASS" --ignore-not-found
