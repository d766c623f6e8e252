{{/* The objects' name: the release's when it names the chart. */}}
{{- define "rdmatrace.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels pods are selected by. */}}
{{- define "rdmatrace.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
{{- if ne (include "rdmatrace.fullname" .) .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- end -}}

{{/* Every object's labels: the selector's, and who manages it. */}}
{{- define "rdmatrace.labels" -}}
{{ include "rdmatrace.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "rdmatrace.tlsSecret" -}}
{{- default (printf "%s-loopback-tls" (include "rdmatrace.fullname" .)) .Values.tls.secretName -}}
{{- end -}}
