{{/* kube-arbiter's settings file (--config), as config.yaml of the ConfigMap. */}}
{{- define "kube-arbiter.configFile" -}}
{{- $c := .Values.config -}}
server:
  # kube-scheduler sends node names only (nodeCacheCapable: true), but a
  # full 5,000-node NodeList is tens of MB if that is ever turned off.
  schedulerBodyLimitBytes: {{ $c.server.schedulerBodyLimitBytes | int64 }}
  admissionBodyLimitBytes: {{ $c.server.admissionBodyLimitBytes | int64 }}
  requestTimeoutSeconds: {{ $c.server.requestTimeoutSeconds | int64 }}
  # Below the Deployment's terminationGracePeriodSeconds ({{ .Values.terminationGracePeriodSeconds | int64 }}).
  shutdownGraceSeconds: {{ $c.server.shutdownGraceSeconds | int64 }}
scheduling:
  # Who else keeps inter-pod (anti-)affinity and topology spread:
  # nextToInTreePlugins with scheduler-config.yaml (kube-scheduler's own
  # plugins filter too; kube-arbiter never waits for a pod in flight and
  # only ever answers more permissively because of one), enforcer with
  # scheduler-config-enforcer.yaml (apply configmap-enforcer.yaml
  # instead). docs/burst-safety.md; scripts/validate-manifests.sh checks
  # the pair.
  role: {{ $c.scheduling.role }}
{{- with $c.scheduling.extra }}
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.live }}
live:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.preemption }}
preemption:
  {{- toYaml . | nindent 2 }}
{{- end }}
scaleIn:
  # Deletion costs on the pods of workloads annotated
  # kube-arbiter.io/scale-in (docs/scale-in-controller.md); one replica
  # writes, the holder of this Lease.
  manageDeletionCost: {{ $c.scaleIn.manageDeletionCost }}
  intervalMillis: {{ $c.scaleIn.intervalMillis | int64 }}
  patchesPerSecond: {{ $c.scaleIn.patchesPerSecond | int64 }}
  leaseDurationSeconds: {{ $c.scaleIn.leaseDurationSeconds | int64 }}
  leaseNamespace: {{ .Release.Namespace }}
  leaseName: {{ $c.scaleIn.leaseName }}
{{- end -}}
