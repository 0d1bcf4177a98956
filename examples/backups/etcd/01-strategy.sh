#!/usr/bin/env bash
# Admin, once per platform: the Etcd strategy says where snapshots go. Every
# string under spec.template is a Go template rendered per BackupJob with
# .Application (the apps.cozystack.io/Etcd object) and .Parameters.
source "$(dirname "$0")/00-helpers.sh"
: "${S3_ENDPOINT:?set S3_ENDPOINT (the sandbox exports it)}"
# The driver refuses plain-http endpoints unless the strategy opts in; the
# sandbox's S3 server speaks http on loopback, a real platform https.
ALLOW_HTTP=false
[[ $S3_ENDPOINT == http://* ]] && ALLOW_HTTP=true

step "admin: Etcd strategy $CLASS -> s3://$S3_BUCKET/<namespace>/<app>/ at $S3_ENDPOINT"
kubectl apply -f - <<YAML
apiVersion: strategy.backups.cozystack.io/v1alpha1
kind: Etcd
metadata:
  name: $CLASS
spec:
  deletionPolicy: Retain
  allowHTTPEndpoint: $ALLOW_HTTP
  template:
    destination:
      s3:
        bucket: "{{ .Parameters.bucket }}"
        endpoint: $S3_ENDPOINT
        key: "{{ .Application.metadata.namespace }}/{{ .Application.metadata.name }}/"
        region: us-east-1
        forcePathStyle: true
        credentialsSecretRef:
          name: etcd-backup-s3
YAML
