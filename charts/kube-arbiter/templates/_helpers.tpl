{{/* The app name: the chart's, or nameOverride. */}}
{{- define "kube-arbiter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object names: the release name when it contains the app name (the
usual `helm install kube-arbiter ...` gives kube-arbiter), else
RELEASE-NAME; fullnameOverride wins. */}}
{{- define "kube-arbiter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "kube-arbiter.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kube-arbiter.labels" -}}
app.kubernetes.io/name: {{ include "kube-arbiter.name" . }}
{{- end -}}

{{- define "kube-arbiter.schedulerName" -}}
{{- printf "%s-scheduler" (include "kube-arbiter.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kube-arbiter.schedulerLabels" -}}
app.kubernetes.io/name: {{ include "kube-arbiter.schedulerName" . }}
{{- end -}}

{{/* The Secrets of kube-arbiter's serving pair and of kube-scheduler's
client pair. */}}
{{- define "kube-arbiter.tlsSecret" -}}
{{- .Values.certificates.secretName | default (printf "%s-tls" (include "kube-arbiter.fullname" .)) -}}
{{- end -}}

{{- define "kube-arbiter.clientSecret" -}}
{{- .Values.certificates.schedulerClientSecretName | default (printf "%s-scheduler-client" (include "kube-arbiter.fullname" .)) -}}
{{- end -}}

{{/* The Service's name as kube-scheduler and kube-apiserver use it. */}}
{{- define "kube-arbiter.serviceHost" -}}
{{- printf "%s.%s.svc" (include "kube-arbiter.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* The server certificate's DNS names. */}}
{{- define "kube-arbiter.dnsNames" -}}
{{- $full := include "kube-arbiter.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list $full (printf "%s.%s" $full $ns) (printf "%s.%s.svc" $full $ns) (printf "%s.%s.svc.cluster.local" $full $ns) -}}
{{- concat $names .Values.certificates.extraDNSNames | toJson -}}
{{- end -}}

{{- define "kube-arbiter.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}
{{- end -}}

{{- define "kube-arbiter.enforcer" -}}
{{- if eq .Values.config.scheduling.role "enforcer" }}true{{ end -}}
{{- end -}}

{{- define "kube-arbiter.extenderURL" -}}
{{- .Values.extender.url | default (printf "https://%s:8443/scheduler" (include "kube-arbiter.serviceHost" .)) -}}
{{- end -}}

{{/*
certificates.mode generate: the CA, server and client pairs (PEM) in
.Values.generatedTLS, made once per rendering so that every template sees
the same ones. The CA comes from the Secret <fullname>-ca when it exists;
each pair from its Secret when that is signed by this CA, was made for the
same names and is not within renewDays of its expiry (annotations the chart
writes on the Secret); anything else is made anew (ECDSA P-256).
*/}}
{{- define "kube-arbiter.generateTLS" -}}
{{- if not (hasKey .Values "generatedTLS") -}}
{{- $full := include "kube-arbiter.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $gen := .Values.certificates.generate -}}
{{- $renewBy := now | dateModify (printf "+%dh" (mul $gen.renewDays 24 | int)) | unixEpoch | int64 -}}
{{- $ca := dict -}}
{{- $caSecret := lookup "v1" "Secret" $ns (printf "%s-ca" $full) -}}
{{- $caData := (get $caSecret "data") | default dict -}}
{{- if and (get $caData "tls.crt") (get $caData "tls.key") -}}
{{- $ca = buildCustomCert (get $caData "tls.crt") (get $caData "tls.key") -}}
{{- else -}}
{{- $ca = genCAWithKey (printf "%s-ca" $full) ($gen.caDays | int) (genPrivateKey "ecdsa") -}}
{{- end -}}
{{- $names := include "kube-arbiter.dnsNames" . -}}
{{- $ips := .Values.certificates.extraIPAddresses -}}
{{- $want := dict
  "server" (dict "secret" (include "kube-arbiter.tlsSecret" .) "cn" (include "kube-arbiter.serviceHost" .) "ips" $ips "dns" (fromJsonArray $names) "for" (sha256sum (printf "%s %s" $names (toJson $ips))))
  "client" (dict "secret" (include "kube-arbiter.clientSecret" .) "cn" (first .Values.schedulerClientNames) "ips" list "dns" list "for" (sha256sum (first .Values.schedulerClientNames)))
-}}
{{- $out := dict "caCert" $ca.Cert "caKey" $ca.Key -}}
{{- range $which, $w := $want -}}
{{- $old := lookup "v1" "Secret" $ns $w.secret -}}
{{- $data := (get $old "data") | default dict -}}
{{- $ann := (get (get $old "metadata" | default dict) "annotations") | default dict -}}
{{- $notAfter := (get $ann "kube-arbiter.io/not-after") | default "" -}}
{{- $keep := and (get $data "tls.crt") (get $data "tls.key") (eq (b64dec ((get $data "ca.crt") | default "")) $ca.Cert) (eq (get $ann "kube-arbiter.io/made-for") $w.for) $notAfter (gt (toDate "2006-01-02T15:04:05Z07:00" $notAfter | unixEpoch | int64) $renewBy) -}}
{{- if $keep -}}
{{- $_ := set $out $which (dict "cert" (b64dec (get $data "tls.crt")) "key" (b64dec (get $data "tls.key")) "notAfter" $notAfter "for" $w.for) -}}
{{- else -}}
{{- $pair := genSignedCertWithKey $w.cn $w.ips $w.dns ($gen.days | int) $ca (genPrivateKey "ecdsa") -}}
{{- $expires := now | dateModify (printf "+%dh" (mul $gen.days 24 | int)) | date "2006-01-02T15:04:05Z07:00" -}}
{{- $_ := set $out $which (dict "cert" $pair.Cert "key" $pair.Key "notAfter" $expires "for" $w.for) -}}
{{- end -}}
{{- end -}}
{{- $_ := set .Values "generatedTLS" $out -}}
{{- end -}}
{{- end -}}

{{/* The webhooks' caBundle and kube-scheduler's caData: base64 of the CA
certificate, "" with cert-manager (its CA injector fills the webhooks). */}}
{{- define "kube-arbiter.caBundle" -}}
{{- $mode := .Values.certificates.mode -}}
{{- if eq $mode "generate" -}}
{{- include "kube-arbiter.generateTLS" . -}}
{{- b64enc .Values.generatedTLS.caCert -}}
{{- else if eq $mode "existingSecret" -}}
{{- if .Values.certificates.caBundle -}}
{{- .Values.certificates.caBundle -}}
{{- else -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "kube-arbiter.tlsSecret" .) -}}
{{- (get ((get $secret "data") | default dict) "ca.crt") | default "REPLACE_WITH_CA_BUNDLE" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A webhook's clientConfig; the argument is (list root path). */}}
{{- define "kube-arbiter.webhookClientConfig" -}}
{{- $root := index . 0 -}}
{{- $path := index . 1 -}}
clientConfig:
{{- if $root.Values.webhook.url }}
  url: {{ printf "%s%s" (trimSuffix "/" $root.Values.webhook.url) $path }}
{{- else }}
  service:
    name: {{ include "kube-arbiter.fullname" $root }}
    namespace: {{ $root.Release.Namespace }}
    path: {{ $path }}
    port: 8443
{{- end }}
{{- if ne $root.Values.certificates.mode "cert-manager" }}
  caBundle: {{ include "kube-arbiter.caBundle" $root }}
{{- end }}
{{- end -}}

{{/* The namespaces the pod webhook leaves alone: kube-system and the
release's own, so kube-arbiter can always start. */}}
{{- define "kube-arbiter.exemptNamespaces" -}}
{{- list "kube-system" .Release.Namespace | uniq | toJson -}}
{{- end -}}

{{- define "kube-arbiter.certManagerAnnotation" -}}
{{- if eq .Values.certificates.mode "cert-manager" -}}
annotations:
  # cert-manager's CA injector copies ca.crt of this Certificate's Secret
  # into every webhook's clientConfig.caBundle, and again on renewal.
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "kube-arbiter.tlsSecret" . }}
{{- end -}}
{{- end -}}
