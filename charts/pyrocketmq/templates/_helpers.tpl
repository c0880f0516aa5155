{{/* Names and labels shared by the templates. */}}
{{- define "pyrocketmq.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pyrocketmq.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pyrocketmq.labels" -}}
{{ include "pyrocketmq.selectorLabels" . }}
app.kubernetes.io/component: operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "pyrocketmq.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pyrocketmq.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "pyrocketmq.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The namespaces a namespaced operator serves. */}}
{{- define "pyrocketmq.watchNamespaces" -}}
{{- if .Values.rbac.watchNamespaces -}}
{{- join "," .Values.rbac.watchNamespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The rules the operator needs, and no more. */}}
{{- define "pyrocketmq.rules" -}}
# Its own resources: watch them, patch kopf's annotations and finalizers, write their status.
- apiGroups: ["pyrocketmq.io"]
  resources: ["nameservers", "brokers", "topics", "consumergroups", "users"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["pyrocketmq.io"]
  resources: ["nameservers/status", "brokers/status", "topics/status", "consumergroups/status", "users/status"]
  verbs: ["get", "patch"]
# Owner references with blockOwnerDeletion (OwnerReferencesPermissionEnforcement).
- apiGroups: ["pyrocketmq.io"]
  resources: ["nameservers/finalizers", "brokers/finalizers", "users/finalizers"]
  verbs: ["update"]
# What the renderers produce: server-side apply (create + patch), prune (list + delete); broker
# StatefulSets are watched too, so the next group rolls as soon as one finishes.
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services", "configmaps", "serviceaccounts"]
  verbs: ["get", "list", "create", "patch", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "create", "patch", "delete"]
# spec.failover.masterService: each group's master Service points at the elected master through
# an EndpointSlice the operator writes (owned by the Service, removed with it).
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "create", "patch"]
# ConsumerGroup spec.autoscale: the replicas of the group's consumer workload, through its scale subresource.
- apiGroups: ["apps"]
  resources: ["deployments/scale", "statefulsets/scale", "replicasets/scale"]
  verbs: ["get", "patch"]
# Readiness and addresses of name server and broker pods; with failover each broker pod is
# labelled with its elected role (its group's master budget holds a drain until it hands over);
# a replica lost with its node (spec.nodeLoss) is deleted with its claims, and the StatefulSet
# starts it on a healthy node. A name server pod that starts is watched, to give it its users
# before it is Ready.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "delete", "patch"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["list", "delete"]
{{- if .Values.rbac.manageSecrets }}
# User resources and spec.tls.managed: passwords, CAs and certificates generated into Secrets the
# operator creates and renews (and reads, with the CA and admin accounts of spec.tls / spec.acl / spec.auth).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create", "update", "patch"]
{{- else if .Values.rbac.readSecrets }}
# spec.tls / spec.acl / spec.auth: the CA and the admin account the operator reaches TLS/ACL brokers with.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}
# Events about the resources.
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* Labels of the cluster.* resources (the operator labels what it renders from them itself). */}}
{{- define "pyrocketmq.clusterLabels" -}}
app.kubernetes.io/part-of: {{ .Values.cluster.name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* "true" when the Prometheus Operator objects are to be rendered (monitoring.enabled). */}}
{{- define "pyrocketmq.monitoring" -}}
{{- $m := toString .Values.monitoring.enabled -}}
{{- if eq $m "true" -}}
true
{{- else if and (eq $m "auto") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}
true
{{- else if not (has $m (list "true" "false" "auto")) -}}
{{- fail "monitoring.enabled must be auto, true or false" -}}
{{- end -}}
{{- end -}}

{{/* Labels of the monitoring objects. */}}
{{- define "pyrocketmq.monitoringLabels" -}}
{{ include "pyrocketmq.labels" . }}
{{- with .Values.monitoring.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Namespaces whose name server and broker pods are scraped. */}}
{{- define "pyrocketmq.podMonitorNamespaces" -}}
{{- if .Values.monitoring.namespaceSelector -}}
{{ toYaml .Values.monitoring.namespaceSelector }}
{{- else if eq .Values.rbac.scope "namespaced" -}}
matchNames:
{{- range splitList "," (include "pyrocketmq.watchNamespaces" .) }}
  - {{ . }}
{{- end }}
{{- else -}}
any: true
{{- end -}}
{{- end -}}
