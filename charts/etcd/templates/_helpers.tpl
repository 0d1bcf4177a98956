{{/*
The cluster, its Secrets, the backup driver and the restore path all assume
the EtcdCluster is named "etcd"; the name is derived from the release name, so
the release name is pinned rather than silently ignored.
*/}}
{{- define "etcd.name" -}}etcd{{- end -}}

{{- define "etcd.labels" -}}
app.kubernetes.io/name: etcd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Fails the render on values the chart cannot honour. */}}
{{- define "etcd.validate" -}}
{{- if ne .Release.Name "etcd" -}}
{{- fail (printf "etcd chart: the release must be named \"etcd\", got %q. The EtcdCluster, its TLS Secrets, the Kamaji DataStore and the backup driver all address the cluster as \"etcd\" (one per namespace); install this chart with the release name etcd." .Release.Name) -}}
{{- end -}}
{{- $backup := .Values.backup | default dict -}}
{{- if $backup.enabled -}}
{{- fail (printf "etcd chart: backup.enabled=true is no longer supported: the backup.* values (enabled, schedule, destinationPath, endpointURL, s3AccessKey, s3SecretKey) and the EtcdBackupSchedule they produced were removed. Scheduled backups are now a BackupClass and a Plan driven by the Etcd strategy (strategy.backups.cozystack.io/v1alpha1). Convert these values with `ebdctl migrate-legacy-values -f values.yaml --namespace %s | kubectl apply -f -`, review the output, then delete the backup block from this release's values." .Release.Namespace) -}}
{{- end -}}
{{- end -}}

{{/*
Bytes in .Values.size (the schema admits only whole numbers with an optional
unit suffix, which keeps this parse exact).
*/}}
{{- define "etcd.sizeBytes" -}}
{{- $size := toString .Values.size -}}
{{- $num := regexFind "^[0-9]+" $size -}}
{{- $unit := trimPrefix $num $size -}}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "P" 1000000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624 -}}
{{- mul (atoi $num) (get $units $unit) -}}
{{- end -}}

{{/*
etcd's backend quota: 95% of the volume, rounded to the nearest byte, as
the platform's etcd chart sets it (the WAL and snapshot files share the
volume with the database). Integer arithmetic keeps it exact, split so that
the product cannot overflow: 95*(b/100) + round(95*(b%100)/100).
*/}}
{{- define "etcd.quotaBackendBytes" -}}
{{- $b := include "etcd.sizeBytes" . | atoi -}}
{{- add (mul (div $b 100) 95) (div (add (mul (mod $b 100) 95) 50) 100) -}}
{{- end -}}

{{/*
Default affinity: a soft spread of members across nodes. Soft, because a hard
rule leaves a member Pending with fewer nodes than replicas or with
node-pinned storage.
*/}}
{{- define "etcd.defaultAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            app.kubernetes.io/instance: {{ include "etcd.name" . }}
{{- end -}}

{{/* Every DNS name members and clients dial: the services and each member. */}}
{{- define "etcd.dnsNames" -}}
{{- $ns := .Release.Namespace -}}
{{- range $svc := list "etcd" "etcd-client" "etcd-headless" }}
- {{ $svc }}
- {{ $svc }}.{{ $ns }}
- {{ $svc }}.{{ $ns }}.svc
- {{ $svc }}.{{ $ns }}.svc.cluster.local
- "*.{{ $svc }}.{{ $ns }}.svc"
- "*.{{ $svc }}.{{ $ns }}.svc.cluster.local"
{{- end }}
{{- end -}}
