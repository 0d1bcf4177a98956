#!/usr/bin/env bash
# Tenant: the Etcd application (on Cozystack the platform creates both objects
# when the tenant orders an etcd), then sentinel data in it.
source "$(dirname "$0")/00-helpers.sh"
REPLICAS=${REPLICAS:-3}

step "tenant: Etcd application etcd ($REPLICAS replicas) through a HelmRelease of charts/etcd"
kubectl apply -f - <<YAML
apiVersion: apps.cozystack.io/v1alpha1
kind: Etcd
metadata:
  name: etcd
  namespace: $TENANT_NS
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: etcd
  namespace: $TENANT_NS
spec:
  interval: 5m
  chart:
    spec:
      chart: etcd
      sourceRef:
        kind: HelmRepository
        name: cozystack-apps
        namespace: cozy-public
  values:
    replicas: $REPLICAS
YAML
wait_for "HelmRelease etcd to be Ready" -n "$TENANT_NS" helmrelease/etcd --for=condition=Ready
timed cluster-start wait_cluster_ready
kubectl -n "$TENANT_NS" get etcdcluster etcd

step "tenant: write $KEYS sentinel keys (generation v1)"
timed write-sentinels etcd_kv write --generation v1
etcd_kv get /sentinel/00000000
