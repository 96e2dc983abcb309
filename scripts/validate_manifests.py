"""Validate Kubernetes manifests offline; run by validate-manifests.sh.

Every YAML document (or item of a `kind: List`) is checked against the OpenAPI schemas bundled in
kubernetes-validate (strict: unknown fields are errors). Unlike the
`kubernetes-validate` command, a document whose kind has no bundled schema is
a failure (a typo in apiVersion or kind must not pass silently), except:
- KubeSchedulerConfiguration: kube-scheduler's file format, not an API
  object; check_scheduler_config() checks it (v1, and v1beta3 for
  kube-scheduler 1.23 and 1.24).
- cert-manager.io/v1 Issuer and Certificate: custom resources, checked
  against the JSON schemas in scripts/schemas/ (written from cert-manager's
  published CRDs) and by check_cert_manager() for the rules cert-manager's
  own webhook adds.
Duplicate mapping keys, which YAML loaders silently collapse, are errors too.
The security settings of docs/security.md are checked as well, per document and
across the files of one run: see "Security checks" below.

kube-arbiter's `scheduling.role` must describe the kube-scheduler profile
it runs with (check_role_pairs()): a KubeSchedulerConfiguration in
`DIR/scheduler-config<S>.yaml` pairs with the kube-arbiter ConfigMap in
`DIR/configmap<S>.yaml` when both are checked (scheduler-config.yaml with
configmap.yaml, scheduler-config-enforcer.yaml with configmap-enforcer.yaml),
and with the kube-arbiter ConfigMap in its own file (a chart rendering).
A KubeSchedulerConfiguration held in a ConfigMap's data (the chart's second
scheduler) is checked like one in a file of its own.

Usage: python validate_manifests.py K8S_VERSION [--complete] [--no-network-policy] FILE...
  --complete: FILE... is the whole deployment; each security-relevant kind
  (Deployment, scheduler config, ClusterRole, NetworkPolicy) must be there.
  --no-network-policy: with --complete, the deployment leaves the
  NetworkPolicy out on purpose (the chart's networkPolicy.enabled false).
Prints one line per document; exits 1 if any document fails.
"""

import json
import os
import re
import sys

import jsonschema
import kubernetes_validate
import yaml

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas")


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys in a mapping."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping
)

# kube-scheduler's v1 Extender type (k8s.io/kube-scheduler/config/v1): field
# name -> accepted Python type(s). kube-scheduler decodes its config
# strictly, so unknown fields are errors here too.
EXTENDER_FIELDS = {
    "urlPrefix": str,
    "filterVerb": str,
    "preemptVerb": str,
    "prioritizeVerb": str,
    "weight": int,
    "bindVerb": str,
    "enableHTTPS": bool,
    "tlsConfig": dict,
    "httpTimeout": str,
    "nodeCacheCapable": bool,
    "managedResources": list,
    "ignorable": bool,
}
TLS_FIELDS = {
    "insecure": bool,
    "serverName": str,
    "certFile": str,
    "keyFile": str,
    "caFile": str,
    "certData": str,
    "keyData": str,
    "caData": str,
}
SCHEDULER_TOP_LEVEL = {
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
}
# kube-scheduler's extension points (v1 Plugins) and in-tree plugin names
# (pkg/scheduler/framework/plugins/names, current and still-accepted older
# ones). A misspelt name makes kube-scheduler refuse to start.
EXTENSION_POINTS = {
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
}
IN_TREE_PLUGINS = {
    "PrioritySort",
    "DefaultBinder",
    "DefaultPreemption",
    "DynamicResources",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "SchedulingGates",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
}
PROFILE_FIELDS = {
    "schedulerName": str,
    "percentageOfNodesToScore": int,
    "plugins": dict,
    "pluginConfig": list,
}
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def _check_fields(obj, fields, path, errors):
    if not isinstance(obj, dict):
        errors.append(f"{path}: must be a mapping")
        return
    for key, value in obj.items():
        if key not in fields:
            errors.append(f"{path}.{key}: unknown field")
        elif type(value) is bool and fields[key] is int:
            errors.append(f"{path}.{key}: must be an integer, not a boolean")
        elif not isinstance(value, fields[key]):
            errors.append(f"{path}.{key}: must be {fields[key].__name__}")


# kube-scheduler 1.25+ reads v1; 1.23 and 1.24 read v1beta3 (removed in
# 1.29). The fields checked here are the same in both versions.
SCHEDULER_API_VERSIONS = (
    "kubescheduler.config.k8s.io/v1",
    "kubescheduler.config.k8s.io/v1beta3",
)


def check_plugins(plugins, path, errors):
    """profiles[].plugins: known extension points, each an enabled and/or
    disabled list of {name, weight} naming in-tree plugins ("*" disables
    all of a point)."""
    for point, sets in plugins.items():
        where = f"{path}.{point}"
        if point not in EXTENSION_POINTS:
            errors.append(f"{where}: unknown extension point")
            continue
        if not isinstance(sets, dict):
            errors.append(f"{where}: must be a mapping with enabled/disabled")
            continue
        for kind, entries in sets.items():
            if kind not in ("enabled", "disabled"):
                errors.append(f"{where}.{kind}: unknown field")
                continue
            if not isinstance(entries, list):
                errors.append(f"{where}.{kind}: must be a list")
                continue
            for i, entry in enumerate(entries):
                at = f"{where}.{kind}[{i}]"
                _check_fields(entry, {"name": str, "weight": int}, at, errors)
                name = entry.get("name") if isinstance(entry, dict) else None
                allowed = IN_TREE_PLUGINS | ({"*"} if kind == "disabled" else set())
                if name not in allowed:
                    errors.append(f"{at}.name: {name!r} is not an in-tree plugin")
                if "weight" in entry and point not in ("score", "multiPoint"):
                    errors.append(f"{at}.weight: only score plugins have a weight")


def check_scheduler_config(doc):
    """The checks kube-scheduler makes on load, for the parts we ship."""
    errors = []
    if doc.get("apiVersion") not in SCHEDULER_API_VERSIONS:
        errors.append("apiVersion: must be one of " + ", ".join(SCHEDULER_API_VERSIONS))
    for key in doc:
        if key not in SCHEDULER_TOP_LEVEL:
            errors.append(f"{key}: unknown field")
    profiles = doc.get("profiles", [])
    if not isinstance(profiles, list) or not all(
        isinstance(p, dict) and isinstance(p.get("schedulerName"), str)
        for p in profiles
    ):
        errors.append("profiles: must be a list of mappings with a schedulerName")
    else:
        for i, profile in enumerate(profiles):
            path = f"profiles[{i}]"
            _check_fields(profile, PROFILE_FIELDS, path, errors)
            if isinstance(profile.get("plugins"), dict):
                check_plugins(profile["plugins"], f"{path}.plugins", errors)
    extenders = doc.get("extenders")
    if not isinstance(extenders, list) or not extenders:
        errors.append("extenders: must be a non-empty list")
        return errors
    binders = 0
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        _check_fields(ext, EXTENDER_FIELDS, path, errors)
        if not isinstance(ext, dict):
            continue
        url = ext.get("urlPrefix")
        if not isinstance(url, str) or not url:
            errors.append(f"{path}.urlPrefix: required")
        elif ext.get("enableHTTPS") and not url.startswith("https://"):
            errors.append(f"{path}.urlPrefix: enableHTTPS is set but the URL is not https://")
        if ext.get("prioritizeVerb") and not (
            isinstance(ext.get("weight"), int) and ext["weight"] > 0
        ):
            errors.append(f"{path}.weight: must have a positive weight applied to it")
        if ext.get("bindVerb"):
            binders += 1
        timeout = ext.get("httpTimeout")
        if isinstance(timeout, str) and not DURATION.match(timeout):
            errors.append(f"{path}.httpTimeout: {timeout!r} is not a duration like 5s")
        if "tlsConfig" in ext:
            _check_fields(ext["tlsConfig"], TLS_FIELDS, f"{path}.tlsConfig", errors)
        errors += check_extender_client_pair(ext.get("tlsConfig"), f"{path}.tlsConfig")
    if binders > 1:
        errors.append("extenders: only one extender can implement bind")
    return errors


# The in-tree plugins whose filters count the pods kube-scheduler assumed:
# kube-arbiter's role says whether they run (docs/burst-safety.md).
POD_RULE_PLUGINS = ("InterPodAffinity", "PodTopologySpread")
ROLE_NEXT_TO = "nextToInTreePlugins"
ROLE_ENFORCER = "enforcer"


def filtering_plugins_off(profile):
    """Which of POD_RULE_PLUGINS the profile takes out of Filter (by name or
    "*", in filter or multiPoint, and not enabled again there)."""
    plugins = profile.get("plugins") if isinstance(profile.get("plugins"), dict) else {}
    disabled, enabled = set(), set()
    for point in ("filter", "multiPoint"):
        sets = plugins.get(point) if isinstance(plugins.get(point), dict) else {}
        for kind, names in (("disabled", disabled), ("enabled", enabled)):
            for entry in sets.get(kind) or []:
                if isinstance(entry, dict):
                    names.add(entry.get("name"))
    return {
        p for p in POD_RULE_PLUGINS if (p in disabled or "*" in disabled) and p not in enabled
    }


def arbiter_role(doc):
    """scheduling.role of a kube-arbiter ConfigMap (its config.yaml), the
    default when unset; None when the document is not one."""
    data = doc.get("data") if doc.get("kind") == "ConfigMap" else None
    if not isinstance(data, dict) or "config.yaml" not in data:
        return None
    if (doc.get("metadata") or {}).get("name") != "kube-arbiter-config":
        return None
    try:
        config = yaml.load(data["config.yaml"], Loader=StrictLoader) or {}
    except yaml.YAMLError:
        return None
    scheduling = config.get("scheduling") if isinstance(config, dict) else None
    role = scheduling.get("role") if isinstance(scheduling, dict) else None
    return role or ROLE_NEXT_TO


def check_role(role, doc, configmap):
    """What is wrong with running kube-arbiter in `role` (from the ConfigMap
    file `configmap`) next to the KubeSchedulerConfiguration `doc`."""
    profiles = [p for p in doc.get("profiles") or [] if isinstance(p, dict)] or [{}]
    off = [(p.get("schedulerName", "?"), filtering_plugins_off(p)) for p in profiles]
    if role == ROLE_NEXT_TO:
        return [
            f"profile {name}: {', '.join(sorted(names))} taken out of Filter, but {configmap} sets "
            f"scheduling.role {ROLE_NEXT_TO}: kube-arbiter then answers a burst permissively and "
            f"nobody keeps the rule; use role {ROLE_ENFORCER} (configmap-enforcer.yaml)"
            for name, names in off
            if names
        ]
    if role == ROLE_ENFORCER:
        if all(not names for _, names in off):
            return [
                f"{configmap} sets scheduling.role {ROLE_ENFORCER}, but every profile keeps "
                f"{' and '.join(POD_RULE_PLUGINS)} in Filter: kube-arbiter would wait for each "
                f"binding for nothing; use role {ROLE_NEXT_TO} (configmap.yaml)"
            ]
        return []
    return [f"{configmap}: scheduling.role {role!r} is not {ROLE_NEXT_TO} or {ROLE_ENFORCER}"]


def check_role_pairs(loaded):
    """loaded: [(path, docs)]. Each KubeSchedulerConfiguration in
    DIR/scheduler-config<S>.yaml against the kube-arbiter ConfigMap in
    DIR/configmap<S>.yaml, when both were given, or else in its own file.
    The number of failures."""
    roles = {}
    for path, docs in loaded:
        for doc in docs:
            role = arbiter_role(doc) if isinstance(doc, dict) else None
            if role is not None:
                roles[os.path.abspath(path)] = role
    failures = 0
    for path, docs in loaded:
        directory, base = os.path.split(os.path.abspath(path))
        match = re.fullmatch(r"scheduler-config(.*)\.yaml", base)
        configmap = os.path.join(directory, f"configmap{match.group(1)}.yaml") if match else None
        if configmap not in roles:
            configmap = os.path.abspath(path)
        if configmap not in roles:
            continue
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
                continue
            errors = check_role(roles[configmap], doc, os.path.basename(configmap))
            for err in errors:
                print(f"FAIL {path} KubeSchedulerConfiguration/-: {err}")
            if errors:
                failures += 1
            else:
                print(
                    f"ok   {path} KubeSchedulerConfiguration/- "
                    f"(scheduling.role {roles[configmap]} of {os.path.basename(configmap)})"
                )
    return failures


def embedded_scheduler_configs(doc):
    """[(key, config)] for each data value of a ConfigMap that is a
    KubeSchedulerConfiguration (the chart's second scheduler), or
    [(key, error)] for one that does not parse."""
    data = doc.get("data") if doc.get("kind") == "ConfigMap" else None
    found = []
    for key, text in (data or {}).items() if isinstance(data, dict) else []:
        if not isinstance(text, str) or "KubeSchedulerConfiguration" not in text:
            continue
        try:
            config = yaml.load(text, Loader=StrictLoader)
        except yaml.YAMLError as e:
            found.append((key, f"data[{key}]: {e}"))
            continue
        if isinstance(config, dict) and config.get("kind") == "KubeSchedulerConfiguration":
            found.append((key, config))
    return found


GO_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


def go_duration_seconds(text):
    """Seconds in a Go duration like "2160h" or "1h30m"; None if not one."""
    if not isinstance(text, str) or not DURATION.match(text):
        return None
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)", text)
    return sum(float(n) * GO_DURATION_UNITS[u] for n, u in parts)


ISSUER_TYPES = ("acme", "ca", "selfSigned", "vault", "venafi")
CERTIFICATE_NAMES = (
    "commonName", "dnsNames", "uris", "emailAddresses", "ipAddresses", "otherNames", "literalSubject",
)
KEY_SIZES = {"RSA": (2048, 4096, 8192), "ECDSA": (256, 384, 521)}


def check_cert_manager(doc):
    """What cert-manager's admission webhook refuses beyond the CRD schema."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return []
    errors = []
    if doc["kind"] == "Issuer":
        types = [t for t in ISSUER_TYPES if t in spec]
        if len(types) != 1:
            errors.append(f"spec: exactly one issuer type of {', '.join(ISSUER_TYPES)} (found {types or 'none'})")
        return errors
    if not any(spec.get(field) for field in CERTIFICATE_NAMES):
        errors.append("spec: at least one of " + ", ".join(CERTIFICATE_NAMES) + " must be set")
    if spec.get("literalSubject") and (spec.get("commonName") or spec.get("subject")):
        errors.append("spec.literalSubject: cannot be set with commonName or subject")
    key = spec.get("privateKey") or {}
    algorithm, size = key.get("algorithm", "RSA"), key.get("size")
    if size is not None and algorithm in KEY_SIZES and size not in KEY_SIZES[algorithm]:
        errors.append(f"spec.privateKey.size: {size} is not one of {KEY_SIZES[algorithm]} for {algorithm}")
    duration, renew = spec.get("duration"), spec.get("renewBefore")
    for field, value in (("duration", duration), ("renewBefore", renew)):
        if value is not None and go_duration_seconds(value) is None:
            errors.append(f"spec.{field}: {value!r} is not a duration like 2160h")
    duration_s = go_duration_seconds(duration) if duration is not None else 90 * 24 * 3600
    if duration_s is not None and duration_s < 3600:
        errors.append(f"spec.duration: {duration} is shorter than the minimum of 1h")
    renew_s = go_duration_seconds(renew) if renew is not None else None
    if renew_s is not None:
        if renew_s < 300:
            errors.append(f"spec.renewBefore: {renew} is shorter than the minimum of 5m")
        if duration_s is not None and renew_s >= duration_s:
            errors.append(f"spec.renewBefore: {renew} must be shorter than spec.duration")
        if "renewBeforePercentage" in spec:
            errors.append("spec: renewBefore and renewBeforePercentage cannot both be set")
    return errors


def crd_schema(doc):
    """The schema in scripts/schemas/ for this custom resource, or None."""
    group_version = str(doc.get("apiVersion", ""))
    path = os.path.join(SCHEMA_DIR, f"{group_version.replace('/', '_')}_{doc.get('kind')}.json")
    if "/" not in group_version or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_custom_resource(doc, schema):
    validator = jsonschema.Draft202012Validator(schema)
    errors = [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]
    return errors or check_cert_manager(doc)


# --- Security checks (docs/security.md) ----------------------------------
# Per document:
# - no string anywhere in any document is the flag that serves the extender
#   verbs without client authentication;
# - kube-arbiter's Deployment (a container whose image is named
#   kube-arbiter) passes --client-ca;
# - every extender in a KubeSchedulerConfiguration carries the client pair
#   (check_scheduler_config);
# - kube-arbiter's ClusterRole grants exactly RBAC_ALLOWED at most, and
#   RBAC_REQUIRED at least; its Role (the scale-in Lease) exactly
#   ROLE_REQUIRED, get and update only by resourceNames;
# - kube-arbiter's NetworkPolicy is Ingress-only and each rule admits named
#   sources to port 8443/TCP only.
# Across the files of one run (check_set):
# - the NetworkPolicy selects the Deployment's pods and its port is the
#   container's;
# - bindVerb pairing. A KubeSchedulerConfiguration whose extenders have no
#   bindVerb is a "default" config (manifests/scheduler-config.yaml): nobody
#   legitimate calls /scheduler/bind, so the Deployment must pass
#   --disable-bind-verb. When every config in the run has bindVerb
#   (scheduler-config-enforcer.yaml on its own), the Deployment must not pass
#   it, or kube-scheduler's binds would get 404. The shipped set holds both
#   configs: the default one decides, and the enforcer file says to remove
#   the flag when it is used instead.
# - with --complete (the default file list, or a chart rendering): the
#   Deployment, a scheduler config, the ClusterRole and the NetworkPolicy
#   must all be present (the NetworkPolicy not with --no-network-policy).

INSECURE_FLAG = "--insecure-unauthenticated-extender"
ARBITER = "kube-arbiter"
ARBITER_PORT = 8443

# (apiGroup, resource, verb) kube-arbiter may be granted: the watch-fed view,
# the Binding, and the two reviews behind bearer-token authentication.
_VIEW = [
    ("", r) for r in ("nodes", "pods", "namespaces", "services", "replicationcontrollers")
] + [
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "deployments"),
    ("policy", "poddisruptionbudgets"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("resource.k8s.io", "deviceclasses"),
]
RBAC_REQUIRED = {
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
}
RBAC_ALLOWED = (
    {(g, r, v) for g, r in _VIEW for v in ("get", "list", "watch")}
    | {("", "pods/binding", "create")}
    # The scale-in writer sets pod-deletion-cost annotations
    # (docs/scale-in-controller.md).
    | {("", "pods", "patch")}
    | RBAC_REQUIRED
)
# The scale-in writer's Lease: a Role in kube-system, get and update on that
# one Lease by name, and create (which RBAC cannot limit by name).
LEASE_NAMESPACE = "kube-system"
LEASE_NAME = "kube-arbiter-scale-in"
ROLE_REQUIRED = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}
ROLE_NAMED_VERBS = {"get", "update"}


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def check_no_insecure_flag(doc):
    if any(s.split("=", 1)[0] == INSECURE_FLAG for s in _strings(doc)):
        return [f"{INSECURE_FLAG}: serves the extender verbs to anyone; never in manifests (docs/security.md)"]
    return []


def _is_arbiter_image(image):
    name = str(image).split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
    return name == ARBITER


def arbiter_containers(doc):
    """kube-arbiter's containers in a Deployment, or []."""
    if doc.get("kind") != "Deployment":
        return []
    spec = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
    return [c for c in spec.get("containers") or [] if isinstance(c, dict) and _is_arbiter_image(c.get("image"))]


def _flag_value(args, flag):
    """The value of `flag` in args (`--f V` or `--f=V`); "" if given bare, None if absent."""
    for i, arg in enumerate(args):
        if arg == flag:
            return str(args[i + 1]) if i + 1 < len(args) else ""
        if isinstance(arg, str) and arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def check_arbiter_deployment(doc):
    errors = []
    for c in arbiter_containers(doc):
        args = c.get("args") or []
        if not _flag_value(args, "--client-ca"):
            errors.append(
                f"containers[{c.get('name')}].args: --client-ca FILE is required "
                "(kube-scheduler's client certificate must chain to it)"
            )
    return errors


def check_extender_client_pair(tls, path):
    """kube-arbiter refuses /scheduler/* without kube-scheduler's client
    certificate: each extender's tlsConfig must carry the pair."""
    if not isinstance(tls, dict):
        return [f"{path}: missing; needs kube-scheduler's client certificate (certData/keyData or certFile/keyFile)"]
    errors = []
    for data, file, what in (("certData", "certFile", "certificate"), ("keyData", "keyFile", "key")):
        given = [f for f in (data, file) if tls.get(f)]
        if not given:
            errors.append(f"{path}: no client {what} ({data} or {file}); kube-arbiter refuses /scheduler/* without one")
        elif len(given) > 1:
            errors.append(f"{path}: both {data} and {file}; give one")
    return errors


def _is_arbiter_object(doc):
    meta = doc.get("metadata") or {}
    return meta.get("name") == ARBITER or (meta.get("labels") or {}).get("app.kubernetes.io/name") == ARBITER


def check_arbiter_rbac(doc):
    granted, errors = set(), []
    for i, rule in enumerate(doc.get("rules") or []):
        at = f"rules[{i}]"
        if not isinstance(rule, dict):
            continue
        if rule.get("nonResourceURLs"):
            errors.append(f"{at}: nonResourceURLs are more than kube-arbiter needs")
        for g in rule.get("apiGroups") or []:
            for r in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    if (g, r, v) not in RBAC_ALLOWED:
                        errors.append(f"{at}: {v} on {r} ({g or 'core'}) is broader than kube-arbiter needs")
                    granted.add((g, r, v))
    for g, r, v in sorted(RBAC_REQUIRED - granted):
        errors.append(f"rules: missing {v} on {g} {r} (bearer-token authentication needs it)")
    return errors


def check_arbiter_lease_role(doc):
    granted, errors = set(), []
    namespace = (doc.get("metadata") or {}).get("namespace")
    if namespace != LEASE_NAMESPACE:
        errors.append(f"metadata.namespace: the Lease Role belongs in {LEASE_NAMESPACE}, not {namespace}")
    for i, rule in enumerate(doc.get("rules") or []):
        at = f"rules[{i}]"
        if not isinstance(rule, dict):
            continue
        names = rule.get("resourceNames")
        for g in rule.get("apiGroups") or []:
            for r in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    if (g, r, v) not in ROLE_REQUIRED:
                        errors.append(f"{at}: {v} on {r} ({g or 'core'}) is broader than kube-arbiter needs")
                    elif v in ROLE_NAMED_VERBS and names != [LEASE_NAME]:
                        errors.append(f"{at}: {v} on {r} needs resourceNames [{LEASE_NAME}]")
                    granted.add((g, r, v))
    for g, r, v in sorted(ROLE_REQUIRED - granted):
        errors.append(f"rules: missing {v} on {g} {r} (the scale-in writer's Lease needs it)")
    return errors


def _port_is_arbiters(port):
    return isinstance(port, dict) and port.get("port") == ARBITER_PORT and port.get("protocol", "TCP") == "TCP" and "endPort" not in port


def check_arbiter_network_policy(doc):
    spec = doc.get("spec") or {}
    errors = []
    if not (spec.get("podSelector") or {}).get("matchLabels"):
        errors.append("spec.podSelector: must select kube-arbiter's pods by matchLabels")
    if spec.get("policyTypes") != ["Ingress"]:
        errors.append("spec.policyTypes: must be [Ingress] (egress to the API server stays open)")
    rules = spec.get("ingress")
    if not isinstance(rules, list) or not rules:
        errors.append("spec.ingress: must list who may reach port 8443")
        return errors
    for i, rule in enumerate(rules):
        at = f"spec.ingress[{i}]"
        if not isinstance(rule, dict):
            errors.append(f"{at}: must be a mapping")
            continue
        if not rule.get("from"):
            errors.append(f"{at}.from: empty admits every source; name them")
        ports = rule.get("ports")
        if not ports or not all(_port_is_arbiters(p) for p in ports):
            errors.append(f"{at}.ports: only {ARBITER_PORT}/TCP may be admitted")
    return errors


def security_checks(doc):
    """Errors for one document (see the comment above)."""
    errors = check_no_insecure_flag(doc)
    kind = doc.get("kind")
    if kind == "Deployment":
        errors += check_arbiter_deployment(doc)
    elif kind == "ClusterRole" and _is_arbiter_object(doc):
        errors += check_arbiter_rbac(doc)
    elif kind == "Role" and _is_arbiter_object(doc):
        errors += check_arbiter_lease_role(doc)
    elif kind == "NetworkPolicy" and _is_arbiter_object(doc):
        errors += check_arbiter_network_policy(doc)
    return errors


def _name(doc):
    return f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name', '-')}"


def check_set(docs, complete, network_policy=True):
    """Checks across the files of one run; docs is [(path, doc)]. Returns
    the number of failures, printing one FAIL line each."""
    failures = []
    deployments = [(p, d) for p, d in docs if arbiter_containers(d)]
    configs = [(p, d) for p, d in docs if d.get("kind") == "KubeSchedulerConfiguration"]
    policies = [(p, d) for p, d in docs if d.get("kind") == "NetworkPolicy" and _is_arbiter_object(d)]
    roles = [(p, d) for p, d in docs if d.get("kind") == "ClusterRole" and _is_arbiter_object(d)]
    defaults = [p for p, d in configs if not any(isinstance(e, dict) and e.get("bindVerb") for e in d.get("extenders") or [])]
    for path, dep in deployments:
        template = (dep.get("spec") or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        containers = arbiter_containers(dep)
        ports = {p.get("containerPort") for c in containers for p in c.get("ports") or [] if isinstance(p, dict)}
        disabled = any(_flag_value(c.get("args") or [], "--disable-bind-verb") is not None for c in containers)
        if configs and defaults and not disabled:
            failures.append((path, dep, f"{', '.join(defaults)} has no bindVerb: pass --disable-bind-verb so /scheduler/bind is not mounted"))
        if configs and not defaults and disabled:
            failures.append((path, dep, "every scheduler config here uses bindVerb, but --disable-bind-verb unmounts /scheduler/bind"))
        for ppath, policy in policies:
            wanted = ((policy.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
            if not wanted or any(labels.get(k) != v for k, v in wanted.items()):
                failures.append((ppath, policy, f"spec.podSelector {wanted} does not select {_name(dep)}'s pods {labels}"))
            if ARBITER_PORT not in ports:
                failures.append((ppath, policy, f"admits port {ARBITER_PORT}, but {_name(dep)} listens on {sorted(ports)}"))
    if complete:
        required = [
            ("a kube-arbiter Deployment", deployments),
            ("a KubeSchedulerConfiguration", configs),
            ("kube-arbiter's ClusterRole", roles),
        ]
        if network_policy:
            required.append(("a NetworkPolicy for kube-arbiter", policies))
        for what, found in required:
            if not found:
                failures.append(("(set)", {}, f"missing {what}"))
    for path, doc, message in failures:
        print(f"FAIL {path} {_name(doc) if doc else 'manifests'}: {message}")
    return len(failures)


def validate_file(path, k8s_version, seen, loaded):
    """The number of failing documents of `path`; each document goes to
    `seen` as (path, doc), the file's documents to `loaded` as (path, docs),
    and so does each KubeSchedulerConfiguration a ConfigMap holds."""
    failures = 0
    try:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.load_all(f, Loader=StrictLoader) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        print(f"FAIL {path}: {e}")
        return 1
    file_docs = list(docs)
    loaded.append((path, file_docs))
    if not docs:
        print(f"FAIL {path}: no YAML documents")
        return 1
    # A `kind: List` (what `kubectl get -o yaml` prints) is checked item by item.
    docs = [
        item
        for doc in docs
        for item in (doc.get("items") or [] if isinstance(doc, dict) and doc.get("kind") == "List" else [doc])
    ]
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            print(f"FAIL {path}: a document without apiVersion and kind")
            failures += 1
            continue
        seen.append((path, doc))
        name = _name(doc)
        schema = crd_schema(doc)
        if doc["kind"] == "KubeSchedulerConfiguration":
            errors = check_scheduler_config(doc)
            how = "own check (no bundled schema for this kind)"
        elif schema is not None:
            errors = check_custom_resource(doc, schema)
            how = f"scripts/schemas {doc['apiVersion']} {doc['kind']} schema, strict"
        else:
            how = f"kubernetes {k8s_version} schema, strict"
            try:
                kubernetes_validate.validate(doc, k8s_version, strict=True)
                errors = []
            except kubernetes_validate.ValidationError as e:
                where = ".".join(str(p) for p in e.path) or "(root)"
                errors = [f"{where}: {e.message}"]
            except kubernetes_validate.SchemaNotFoundError as e:
                errors = [e.message]
        errors += security_checks(doc)
        if errors:
            failures += 1
            for err in errors:
                print(f"FAIL {path} {name}: {err}")
        else:
            print(f"ok   {path} {name} ({how})")
        for key, config in embedded_scheduler_configs(doc):
            where = f"{name} data[{key}] KubeSchedulerConfiguration"
            if isinstance(config, str):
                errors = [config]
            else:
                errors = check_scheduler_config(config) + security_checks(config)
                seen.append((path, config))
                file_docs.append(config)
            if errors:
                failures += 1
                for err in errors:
                    print(f"FAIL {path} {where}: {err}")
            else:
                print(f"ok   {path} {where} (own check)")
    return failures


def main(argv):
    args = argv[1:]
    complete = "--complete" in args
    network_policy = "--no-network-policy" not in args
    args = [a for a in args if a not in ("--complete", "--no-network-policy")]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    k8s_version, files = args[0], args[1:]
    seen, loaded = [], []
    failures = sum(validate_file(f, k8s_version, seen, loaded) for f in files)
    failures += check_set(seen, complete, network_policy)
    failures += check_role_pairs(loaded)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
