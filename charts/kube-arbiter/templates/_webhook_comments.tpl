{{/* How the webhook configurations get their caBundle, by certificates.mode. */}}
{{- define "kube-arbiter.caBundleComment" -}}
{{- $mode := .Values.certificates.mode -}}
{{- if eq $mode "cert-manager" -}}
# With cert-manager (certificates.mode cert-manager): no caBundle to paste;
# cert-manager's CA injector fills it in from the Certificate named in the
# annotation. In manifests/ this is cert-manager/{{ .Template.Name | base }}: apply
# it instead of {{ .Template.Name | base }}, not both (it is the same object).
# tests/manifests.rs keeps the two files identical apart from the caBundle
# and the annotation.
{{- else if eq $mode "generate" -}}
# caBundle: the chart's CA (certificates.mode generate; the Secret
# {{ include "kube-arbiter.fullname" . }}-ca).
{{- else if eq (include "kube-arbiter.caBundle" .) "REPLACE_WITH_CA_BUNDLE" -}}
# caBundle: replace the placeholder with the base64 CA bundle that
# `kube-arbiter certs --out DIR` prints (base64 of DIR/ca.crt), e.g.
#   sed "s|REPLACE_WITH_CA_BUNDLE|$(base64 -w0 DIR/ca.crt)|" {{ .Template.Name | base }} | kubectl apply -f -
# (chart value certificates.caBundle).
{{- else -}}
# caBundle: the CA of the Secret {{ include "kube-arbiter.tlsSecret" . }} (certificates.caBundle, or
# its ca.crt).
{{- end -}}
{{- end -}}
