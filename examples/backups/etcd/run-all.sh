#!/usr/bin/env bash
# The whole scenario: admin prepares, tenant backs up, disaster, tenant
# restores in place, data verified. Runs unchanged against `make sandbox`
# (source the env it prints) or a real cluster (set S3_* and KUBECONFIG).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export TIMINGS=${TIMINGS:-$(mktemp)}
for s in 01-strategy.sh 02-bucket-and-class.sh 03-source-app.sh 04-backupjob.sh 05-restore-in-place.sh; do
  bash "$HERE/$s"
done
printf '\n\033[32mrun-all: backup and in-place restore verified\033[0m (timings in %s)\n' "$TIMINGS"
