{{- define "ebd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ebd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ebd.labels" -}}
{{ include "ebd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The RBAC rules `make manifests` generates from the +kubebuilder:rbac markers
(config/rbac/role.yaml, copied to files/role.yaml by `make chart-sync`):
returns {"cluster": [...ClusterRole rules], "namespaced": [...Role rules]}
as YAML. Role rules are the leader-election permissions, bound only in the
release namespace.
*/}}
{{- define "ebd.generatedRules" -}}
{{- $cluster := list -}}
{{- $namespaced := list -}}
{{- range $doc := splitList "\n---\n" (.Files.Get "files/role.yaml") -}}
{{- $obj := fromYaml $doc -}}
{{- if eq (get $obj "kind") "ClusterRole" -}}
{{- $cluster = concat $cluster ($obj.rules | default list) -}}
{{- else if eq (get $obj "kind") "Role" -}}
{{- $namespaced = concat $namespaced ($obj.rules | default list) -}}
{{- end -}}
{{- end -}}
{{- dict "cluster" $cluster "namespaced" $namespaced | toYaml -}}
{{- end -}}

{{/* Seconds in a duration like 26h, 90m or 3600s (h, m and s units only). */}}
{{- define "ebd.durationSeconds" -}}
{{- $d := toString . -}}
{{- if not (regexMatch "^[0-9]+[hms]$" $d) -}}
{{- fail (printf "etcd-backup-driver chart: duration %q must be a whole number with unit h, m or s (for example 26h)" $d) -}}
{{- end -}}
{{- $n := regexFind "^[0-9]+" $d | atoi -}}
{{- $unit := trimPrefix (toString $n) $d -}}
{{- mul $n (get (dict "h" 3600 "m" 60 "s" 1) $unit) -}}
{{- end -}}

{{- define "ebd.leaderElectionNamespace" -}}
{{- .Values.leaderElection.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* The label of a tenant object's shard (internal/shard.Label). */}}
{{- define "ebd.shardLabel" -}}
sharding.etcd-backup-driver.io/shard
{{- end -}}

{{/*
The manager's image: repository:tag, the tag defaulting to the chart's
appVersion, and @digest when image.digest pins it (a released chart does).
*/}}
{{- define "ebd.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- with .Values.image.digest }}{{ $ref = printf "%s@%s" $ref . }}{{ end -}}
{{- $ref -}}
{{- end -}}
