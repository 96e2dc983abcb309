{{/* The CA (base64) kube-scheduler trusts, as far as it is known without
making one: certificates.caBundle, the chart's Secrets if Helm can read
them, else the placeholder. */}}
{{- define "kube-arbiter.knownCA" -}}
{{- $ns := .Release.Namespace -}}
{{- $mode := .Values.certificates.mode -}}
{{- if and (eq $mode "generate") (hasKey .Values "generatedTLS") -}}
{{- b64enc .Values.generatedTLS.caCert -}}
{{- else if and (eq $mode "existingSecret") .Values.certificates.caBundle -}}
{{- .Values.certificates.caBundle -}}
{{- else -}}
{{- $secret := lookup "v1" "Secret" $ns (include "kube-arbiter.tlsSecret" .) -}}
{{- (get ((get $secret "data") | default dict) "ca.crt") | default "REPLACE_WITH_CA_BUNDLE" -}}
{{- end -}}
{{- end -}}

{{/* kube-scheduler's client certificate (base64), as far as it is known. */}}
{{- define "kube-arbiter.knownClientCert" -}}
{{- if and (eq .Values.certificates.mode "generate") (hasKey .Values "generatedTLS") -}}
{{- b64enc .Values.generatedTLS.client.cert -}}
{{- else -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "kube-arbiter.clientSecret" .) -}}
{{- (get ((get $secret "data") | default dict) "tls.crt") | default "REPLACE_WITH_SCHEDULER_CLIENT_CERT" -}}
{{- end -}}
{{- end -}}

{{/*
kube-arbiter's entry in kube-scheduler's `extenders:` list (a list item).
For the chart's own kube-scheduler (secondScheduler) it reads the client
pair and the CA from the mounted Secret; for any other it carries them as
data.
*/}}
{{- define "kube-arbiter.extender" -}}
{{- $enforcer := include "kube-arbiter.enforcer" . -}}
{{- $second := .Values.secondScheduler.enabled -}}
{{- if not $second -}}
# kube-scheduler usually runs with hostNetwork; it resolves this name only
# if its pod uses dnsPolicy ClusterFirstWithHostNet. Otherwise point it at
# the Service's ClusterIP (and add that IP to the certificate with
# `kube-arbiter certs --ip`), or run kube-arbiter as a sidecar on
# https://127.0.0.1:8443/scheduler.
{{ end -}}
- urlPrefix: {{ include "kube-arbiter.extenderURL" . }}
  filterVerb: filter
  prioritizeVerb: prioritize
  preemptVerb: preempt
{{- if $enforcer }}
  bindVerb: bind
{{- else if $second }}
  # No bindVerb: scheduling.role enforcer makes kube-arbiter bind (and the
  # chart then serves /scheduler/bind).
  #
  # Scores 0..10 are scaled by kube-scheduler to its 0..100 range and
  # multiplied by this weight before being added to the plugins' scores.
{{- else }}
  # bindVerb: bind
  # Uncomment to let kube-arbiter create the Binding (needs the
  # pods/binding rule in rbac.yaml, and removing --disable-bind-verb from
  # deployment.yaml: without bindVerb kube-arbiter does not even mount
  # its bind route; the chart does both with scheduling.role enforcer).
  # The bound pod then counts in
  # kube-arbiter's next decision at once instead of after the watch
  # catches up, so a burst of pods cannot break spread or anti-affinity.
  # Only one extender may bind, and binding then depends on kube-arbiter
  # being up (ignorable does not cover a failed bind).
  #
  # Scores 0..10 are scaled by kube-scheduler to its 0..100 range and
  # multiplied by this weight before being added to the plugins' scores.
{{- end }}
  weight: 5
  enableHTTPS: true
  tlsConfig:
    insecure: false
    # The name in kube-arbiter's server certificate.
    serverName: {{ include "kube-arbiter.serviceHost" . }}
{{- if $second }}
    # The Secret {{ include "kube-arbiter.clientSecret" . }}, mounted: the CA that signed
    # kube-arbiter's certificate, and kube-scheduler's client pair (mTLS;
    # kube-arbiter refuses every /scheduler/* call without it). kube-scheduler
    # reads them at start.
    caFile: {{ .Values.secondScheduler.clientCertDir }}/ca.crt
    certFile: {{ .Values.secondScheduler.clientCertDir }}/tls.crt
    keyFile: {{ .Values.secondScheduler.clientCertDir }}/tls.key
{{- else if $enforcer }}
    # Base64 of ca.crt from `kube-arbiter certs --out DIR`.
    caData: {{ include "kube-arbiter.knownCA" . }}
    # kube-scheduler's client certificate (mTLS): without it kube-arbiter
    # refuses filter, prioritize, preempt and bind. certData/keyData are
    # base64 of DIR/scheduler-client.crt and DIR/scheduler-client.key from
    # `kube-arbiter certs`, or tls.crt/tls.key of the Secret
    # {{ include "kube-arbiter.clientSecret" . }} (cert-manager or the chart);
    # certFile/keyFile work too. scheduler-config.yaml says more.
    certData: {{ include "kube-arbiter.knownClientCert" . }}
    keyData: REPLACE_WITH_SCHEDULER_CLIENT_KEY
{{- else }}
    # Base64 of ca.crt from `kube-arbiter certs --out DIR`; the same value
    # as the webhooks' caBundle. Replace the placeholder before use.
    caData: {{ include "kube-arbiter.knownCA" . }}
    # kube-scheduler's client certificate: kube-arbiter refuses every
    # /scheduler/* call without it (mTLS; docs/security.md). certData is
    # base64 of DIR/scheduler-client.crt (`certs` prints it), keyData
    # base64 of DIR/scheduler-client.key (base64 -w0; never printed).
    # With cert-manager or the chart's certificates: tls.crt and tls.key of
    # the Secret {{ include "kube-arbiter.clientSecret" . }}, whose .data values are
    # already this base64. Or copy the PEM files
    # onto the control-plane node and use certFile/keyFile instead.
    # kube-scheduler reads the pair at start: restart it after renewal.
    # This file then holds a private key: mode 0600, kube-scheduler only.
    certData: {{ include "kube-arbiter.knownClientCert" . }}
    keyData: REPLACE_WITH_SCHEDULER_CLIENT_KEY
{{- end }}
{{- if $enforcer }}
  nodeCacheCapable: true
  # The rules above are enforced by nobody else: a pod must not be placed
  # while kube-arbiter is down.
  ignorable: false
  httpTimeout: 5s
{{- else }}
  # Send node names only; kube-arbiter has its own indexed view of the
  # nodes, so requests stay small (no 5,000-node NodeList per pod).
  nodeCacheCapable: true
  # If kube-arbiter is unreachable or errs, kube-scheduler schedules
  # without it instead of leaving every pod Pending. kube-arbiter's own
  # pods must be schedulable before it runs, and a broken extender must
  # not stop the cluster; placement is then just less careful until the
  # extender is back (watch the extender error metrics).
  ignorable: true
  # Well under kube-scheduler's per-pod budget; kube-arbiter answers from
  # memory in milliseconds.
  httpTimeout: 5s
{{- end }}
{{- end -}}

{{/* kube-scheduler's whole configuration: for the default scheduler
(scheduler-config.yaml, scheduler-config-enforcer.yaml) or the chart's own
kube-scheduler (secondScheduler). */}}
{{- define "kube-arbiter.schedulerConfiguration" -}}
{{- $enforcer := include "kube-arbiter.enforcer" . -}}
{{- $second := .Values.secondScheduler.enabled -}}
{{- if $second -}}
# The chart's own kube-scheduler (secondScheduler): it schedules the pods
# with spec.schedulerName {{ .Values.secondScheduler.schedulerName }}, with kube-arbiter as its extender
# (scheduling.role {{ .Values.config.scheduling.role }}).
{{- else if $enforcer -}}
# kube-scheduler configuration that makes kube-arbiter THE enforcer of node
# affinity, inter-pod (anti-)affinity and topology spread: the in-tree
# NodeAffinity, InterPodAffinity and PodTopologySpread plugins are taken out
# of PreFilter and Filter, so only kube-arbiter's `filter` decides those
# rules (and explains its rejections in the pod's events). Their in-tree
# scores stay on as a tie-breaker next to kube-arbiter's `prioritize`.
# Pass it to kube-scheduler with --config; it is a component config read
# from disk, not an API object: do not `kubectl apply` it.
#
# Read README.md "Bursts" first. In this mode kube-arbiter must be up for
# these rules to hold at all, so the extender is NOT ignorable, and
# kube-arbiter should bind (bindVerb) so it learns each placement at once.
# Run kube-arbiter with configmap-enforcer.yaml (scheduling.role: enforcer):
# it then waits briefly for pods kube-scheduler placed and has not bound
# yet (live.inFlightWaitMillis): run ONE replica per kube-scheduler
# (a sidecar, or the Service's sessionAffinity: ClientIP), since each
# replica only knows the calls it answered.
#
# With this file, remove `--disable-bind-verb` from deployment.yaml's args
# (the chart does with scheduling.role enforcer): kube-scheduler calls bind
# here, and kube-arbiter mounts that route only without the flag.
{{- else -}}
# kube-scheduler configuration that registers kube-arbiter as an extender
# (pass it to kube-scheduler with --config). This is a component config read
# by kube-scheduler from disk, not an API object: do not `kubectl apply` it.
# Merge the `extenders:` entry into your existing configuration if you have
# one. kube-scheduler decodes it strictly: unknown keys are an error.
# kube-scheduler 1.25 and newer read v1. For 1.23 and 1.24 change this one
# line to `apiVersion: kubescheduler.config.k8s.io/v1beta3` (v1beta3 was
# removed in 1.29); everything below means the same there.
{{- end }}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
{{- if $second }}
{{- with .Values.secondScheduler.kubeconfig }}
clientConnection:
  kubeconfig: {{ . }}
{{- end }}
# Its own Lease: the default scheduler holds kube-system/kube-scheduler.
leaderElection:
  leaderElect: true
  resourceName: {{ include "kube-arbiter.schedulerName" . }}
  resourceNamespace: {{ .Release.Namespace }}
{{- else }}
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
leaderElection:
  leaderElect: true
{{- end }}
profiles:
  - schedulerName: {{ if $second }}{{ .Values.secondScheduler.schedulerName }}{{ else }}default-scheduler{{ end }}
{{- if $enforcer }}
    plugins:
      preFilter:
        disabled:
          - name: NodeAffinity
          - name: InterPodAffinity
          - name: PodTopologySpread
      filter:
        disabled:
          - name: NodeAffinity
          - name: InterPodAffinity
          - name: PodTopologySpread
{{- end }}
extenders:
  {{- include "kube-arbiter.extender" . | nindent 2 }}
{{- end -}}
