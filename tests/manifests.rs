//! The settings shipped in manifests/ must be ones kube-arbiter accepts
//! (unknown config keys make it refuse to start) and must agree with the
//! Deployment that runs it.

use kube_arbiter::config::{Config, Role};

fn manifest(name: &str) -> serde_json::Value {
    let path = format!("{}/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn shipped_config() -> Config {
    config_of("configmap.yaml")
}

fn config_of(name: &str) -> Config {
    let configmap = manifest(name);
    assert_eq!(configmap["kind"], "ConfigMap");
    Config::parse(configmap["data"]["config.yaml"].as_str().unwrap()).unwrap()
}

/// The default role is the one the shipped scheduler-config.yaml needs
/// (next to the in-tree plugins); configmap-enforcer.yaml, for
/// scheduler-config-enforcer.yaml, differs from configmap.yaml in the
/// role alone.
#[test]
fn each_scheduler_profile_has_a_configmap_with_its_role() {
    assert_eq!(Config::default().scheduling.role, Role::NextToInTreePlugins);
    assert_eq!(shipped_config().scheduling.role, Role::NextToInTreePlugins);
    let mut enforcer = config_of("configmap-enforcer.yaml");
    assert_eq!(enforcer.scheduling.role, Role::Enforcer);
    enforcer.scheduling.role = Role::NextToInTreePlugins;
    assert_eq!(enforcer, shipped_config());
    let (plain, other) = (
        manifest("configmap.yaml"),
        manifest("configmap-enforcer.yaml"),
    );
    assert_eq!(plain["metadata"], other["metadata"]);
}

#[test]
fn configmap_config_yaml_is_accepted_by_the_config_loader() {
    assert_eq!(shipped_config().server.request_timeout_seconds, 30);
}

#[test]
fn shutdown_drains_before_the_kubelet_kills_the_pod() {
    let deployment = manifest("deployment.yaml");
    let pod = &deployment["spec"]["template"]["spec"];
    let kill_after = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(shipped_config().server.shutdown_grace_seconds < kill_after);
}

#[test]
fn the_deployments_arguments_are_ones_serve_accepts_securely() {
    use clap::Parser;
    use kube_arbiter::cli::{Cli, Command};
    let deployment = manifest("deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let cli = Cli::try_parse_from(std::iter::once("kube-arbiter".to_string()).chain(args))
        .unwrap_or_else(|e| panic!("{e}"));
    let Command::Serve(serve) = cli.command else {
        panic!("the Deployment does not run serve");
    };
    assert!(serve.client_ca.is_some());
    assert!(!serve.insecure_unauthenticated_extender);
    assert_eq!(serve.scheduler_client_names, ["system:kube-scheduler"]);
    assert!(
        serve.disable_bind_verb,
        "the shipped scheduler-config.yaml has no bindVerb"
    );
}

#[test]
fn deployment_mounts_the_files_its_arguments_name() {
    let deployment = manifest("deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    let args = container["args"].as_array().unwrap();
    for flag in ["--tls-cert", "--tls-key", "--config", "--client-ca"] {
        let i = args.iter().position(|a| a == flag).unwrap();
        let file = args[i + 1].as_str().unwrap();
        assert!(
            mounts.iter().any(|m| file.starts_with(&format!("{m}/"))),
            "{flag} {file} is not under a mounted volume"
        );
    }
}

#[test]
fn cert_manager_webhooks_are_the_plain_ones_with_the_ca_injected() {
    for name in ["mutating-webhook.yaml", "validating-webhook.yaml"] {
        let mut plain = manifest(name);
        let injected = manifest(&format!("cert-manager/{name}"));
        for webhook in plain["webhooks"].as_array_mut().unwrap() {
            let client = webhook["clientConfig"].as_object_mut().unwrap();
            assert_eq!(client.remove("caBundle").unwrap(), "REPLACE_WITH_CA_BUNDLE");
        }
        plain["metadata"]["annotations"] = serde_json::json!({
            "cert-manager.io/inject-ca-from": "kube-system/kube-arbiter-tls"
        });
        assert_eq!(injected, plain, "manifests/cert-manager/{name}");
    }
}

/// mutating-webhook-podgroups.yaml, for clusters serving PodGroups, is
/// mutating-webhook.yaml plus one webhook: new `scheduling.k8s.io/v1beta1`
/// PodGroups (CREATE only, as upstream's Priority plugin resolves them),
/// sent to the route that resolves their priority, with the pod
/// webhook's failure policy and exempt namespaces.
#[test]
fn the_podgroup_webhook_file_is_the_pod_one_plus_a_podgroup_webhook() {
    let plain = manifest("mutating-webhook.yaml");
    let with_groups = manifest("mutating-webhook-podgroups.yaml");
    let (pods, groups) = (
        plain["webhooks"].as_array().unwrap(),
        with_groups["webhooks"].as_array().unwrap(),
    );
    assert_eq!(plain["metadata"], with_groups["metadata"]);
    assert_eq!(groups.len(), pods.len() + 1);
    assert_eq!(groups[..pods.len()], pods[..]);
    let group = &groups[pods.len()];
    assert_eq!(group["name"], "podgroup-priority.kube-arbiter.io");
    assert_eq!(
        group["rules"],
        serde_json::json!([{"apiGroups": ["scheduling.k8s.io"], "apiVersions": ["v1beta1"],
                            "operations": ["CREATE"], "resources": ["podgroups"],
                            "scope": "Namespaced"}])
    );
    assert_eq!(
        group["clientConfig"]["service"]["path"],
        "/admission/podgroup-priority"
    );
    for same in [
        "failurePolicy",
        "namespaceSelector",
        "matchPolicy",
        "sideEffects",
    ] {
        assert_eq!(group[same], pods[0][same], "{same}");
    }
}

#[test]
fn the_cert_manager_certificate_is_for_the_secret_and_names_the_deployment_uses() {
    let certificate = manifest("cert-manager/certificate.yaml");
    let deployment = manifest("deployment.yaml");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let secret = &certificate["spec"]["secretName"];
    assert!(volumes.iter().any(|v| &v["secret"]["secretName"] == secret));
    let service = manifest("service.yaml");
    let svc = format!(
        "{}.{}.svc",
        service["metadata"]["name"].as_str().unwrap(),
        service["metadata"]["namespace"].as_str().unwrap()
    );
    let names: Vec<&str> = certificate["spec"]["dnsNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(names.contains(&svc.as_str()), "{names:?} lacks {svc}");
    let scheduler = manifest("scheduler-config.yaml");
    let server_name = &scheduler["extenders"][0]["tlsConfig"]["serverName"];
    assert!(names.iter().any(|n| server_name == n), "{server_name}");
}

/// scripts/validate-manifests.sh with `flags` on `files` (written into a
/// temp dir): its exit status and output.
fn validate(flags: &[&str], files: &[(&str, String)]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<_> = files
        .iter()
        .map(|(name, text)| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let out = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/validate-manifests.sh"
    ))
    .args(flags)
    .args(&paths)
    .output()
    .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn manifest_text(name: &str) -> String {
    std::fs::read_to_string(format!("{}/manifests/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// One validator run (it may have to install its Python package first) on
/// the shipped cert-manager and scheduler files and on broken copies: each
/// broken copy must fail with a message naming the broken field.
#[test]
fn the_offline_validator_checks_cert_manager_kinds_and_both_scheduler_versions() {
    let certificate = manifest_text("cert-manager/certificate.yaml");
    let issuer = manifest_text("cert-manager/issuer.yaml");
    let scheduler = manifest_text("scheduler-config.yaml");
    let v1 = "apiVersion: kubescheduler.config.k8s.io/v1\n";
    assert!(scheduler.contains(v1));
    let broken = [
        (
            "bad-algorithm.yaml",
            certificate.replace("algorithm: ECDSA", "algorithm: DSA"),
            "spec.privateKey.algorithm: 'DSA' is not one of",
        ),
        (
            "bad-usage.yaml",
            certificate.replace("- server auth", "- server-auth"),
            "spec.usages.1: 'server-auth' is not one of",
        ),
        (
            "no-secret.yaml",
            certificate.replace("  secretName: kube-arbiter-tls\n", ""),
            "'secretName' is a required property",
        ),
        (
            "typo-field.yaml",
            certificate.replace("  dnsNames:", "  dnsName:"),
            "'dnsName' was unexpected",
        ),
        (
            "key-size.yaml",
            certificate.replace("size: 256", "size: 2048"),
            "spec.privateKey.size: 2048 is not one of (256, 384, 521) for ECDSA",
        ),
        (
            "two-issuer-types.yaml",
            issuer.replace(
                "  selfSigned: {}\n",
                "  selfSigned: {}\n  ca:\n    secretName: other\n",
            ),
            "spec: exactly one issuer type",
        ),
        (
            "scheduler-v1beta2.yaml",
            scheduler.replace(v1, "apiVersion: kubescheduler.config.k8s.io/v1beta2\n"),
            "apiVersion: must be one of",
        ),
    ];
    let mut files: Vec<(&str, String)> = vec![
        ("certificate.yaml", certificate.clone()),
        ("issuer.yaml", issuer.clone()),
        (
            "scheduler-v1beta3.yaml",
            scheduler.replace(v1, "apiVersion: kubescheduler.config.k8s.io/v1beta3\n"),
        ),
    ];
    files.extend(broken.iter().map(|(name, text, _)| (*name, text.clone())));
    let (ok, out) = validate(&[], &files);
    assert!(!ok, "{out}");
    // Lines are "ok   PATH KIND/NAME (how)" or "FAIL PATH KIND/NAME: why".
    let lines_for = |name: &str| -> Vec<&str> {
        let file = format!("/{name} ");
        out.lines().filter(|l| l.contains(&file)).collect()
    };
    for name in ["certificate.yaml", "issuer.yaml", "scheduler-v1beta3.yaml"] {
        let lines = lines_for(name);
        assert!(!lines.is_empty(), "{name} not checked:\n{out}");
        assert!(lines.iter().all(|l| l.starts_with("ok ")), "{out}");
    }
    for (name, _, message) in &broken {
        let lines = lines_for(name);
        let line = lines
            .iter()
            .find(|l| l.starts_with("FAIL"))
            .unwrap_or_else(|| panic!("{name} passed:\n{out}"));
        assert!(line.contains(message), "{name}: {line}");
    }
}

/// scripts/validate-manifests.sh pairs scheduler-config<S>.yaml with
/// configmap<S>.yaml and refuses a role that does not match the profile.
#[test]
fn the_offline_validator_checks_the_role_against_the_scheduler_profile() {
    let (plain, enforcer) = (
        manifest_text("scheduler-config.yaml"),
        manifest_text("scheduler-config-enforcer.yaml"),
    );
    let (next_to, enforcing) = (
        manifest_text("configmap.yaml"),
        manifest_text("configmap-enforcer.yaml"),
    );
    let files = [
        ("scheduler-config.yaml", enforcer.clone()),
        ("configmap.yaml", next_to.clone()),
        ("scheduler-config-b.yaml", plain.clone()),
        ("configmap-b.yaml", enforcing.clone()),
        ("scheduler-config-c.yaml", enforcer),
        ("configmap-c.yaml", enforcing),
        ("scheduler-config-d.yaml", plain),
        ("configmap-d.yaml", next_to),
    ];
    let (ok, out) = validate(&[], &files);
    assert!(!ok, "{out}");
    let role_line = |file: &str| -> Vec<&str> {
        let file = format!("/{file} KubeSchedulerConfiguration");
        out.lines()
            .filter(|l| l.contains(&file) && l.contains("role"))
            .collect()
    };
    let enforcer_next_to = role_line("scheduler-config.yaml");
    assert!(
        enforcer_next_to.iter().any(|l| l.starts_with("FAIL")
            && l.contains("InterPodAffinity, PodTopologySpread taken out of Filter")),
        "{out}"
    );
    let plain_enforcing = role_line("scheduler-config-b.yaml");
    assert!(
        plain_enforcing
            .iter()
            .any(|l| l.starts_with("FAIL") && l.contains("for nothing")),
        "{out}"
    );
    for matching in ["scheduler-config-c.yaml", "scheduler-config-d.yaml"] {
        let lines = role_line(matching);
        assert!(!lines.is_empty(), "{matching}: {out}");
        assert!(lines.iter().all(|l| l.starts_with("ok ")), "{out}");
    }
}

#[test]
fn the_enforcer_profile_leaves_affinity_and_spread_to_kube_arbiter_alone() {
    let config = manifest("scheduler-config-enforcer.yaml");
    let plugins = &config["profiles"][0]["plugins"];
    for point in ["preFilter", "filter"] {
        let disabled: Vec<&str> = plugins[point]["disabled"]
            .as_array()
            .unwrap_or_else(|| panic!("no {point}.disabled"))
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            disabled,
            ["NodeAffinity", "InterPodAffinity", "PodTopologySpread"],
            "{point}"
        );
    }
    let extender = &config["extenders"][0];
    assert_eq!(extender["filterVerb"], "filter");
    // kube-arbiter must bind (it learns placements at once) and must not
    // be skipped: nobody else enforces these rules.
    assert_eq!(extender["bindVerb"], "bind");
    assert_eq!(extender["ignorable"], false);
    assert_eq!(extender["nodeCacheCapable"], true);
}

/// `text` with `from` replaced, which must be there.
fn replaced(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} not found");
    text.replace(from, to)
}

/// The FAIL line for `name` in the validator's output that contains
/// `message` (lines are "FAIL PATH KIND/NAME: why").
fn assert_refused(out: &str, name: &str, message: &str) {
    let file = format!("/{name} ");
    assert!(
        out.lines()
            .any(|l| l.starts_with("FAIL") && l.contains(&file) && l.contains(message)),
        "{name}: no FAIL line with {message:?}:\n{out}"
    );
}

#[test]
fn the_shipped_manifests_pass_the_security_checks_as_a_complete_set() {
    let out = std::process::Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/validate-manifests.sh"
    ))
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok ") && l.contains("NetworkPolicy/kube-arbiter")),
        "{text}"
    );
}

/// The security model (docs/security.md): nothing in manifests/ may serve
/// the extender verbs without client authentication, and the validator
/// refuses each loosened setting.
#[test]
fn the_validator_refuses_the_insecure_flag_and_loosened_security_settings() {
    let deployment = manifest_text("deployment.yaml");
    let disable = "            - --disable-bind-verb\n";
    let client_ca = "            - --client-ca\n            - /etc/kube-arbiter/tls/ca.crt\n";
    let scheduler = manifest_text("scheduler-config.yaml");
    let rbac = manifest_text("rbac.yaml");
    let policy = manifest_text("networkpolicy.yaml");
    let files = [
        (
            "insecure.yaml",
            replaced(
                &deployment,
                disable,
                "            - --insecure-unauthenticated-extender\n",
            ),
        ),
        ("no-client-ca.yaml", replaced(&deployment, client_ca, "")),
        (
            "no-client-key.yaml",
            replaced(
                &scheduler,
                "      keyData: REPLACE_WITH_SCHEDULER_CLIENT_KEY\n",
                "",
            ),
        ),
        (
            "broad-rbac.yaml",
            replaced(
                &rbac,
                "    resources: [tokenreviews]\n    verbs: [create]",
                "    resources: [tokenreviews]\n    verbs: [create, delete]",
            ),
        ),
        (
            "unnamed-lease.yaml",
            replaced(&rbac, "    resourceNames: [kube-arbiter-scale-in]\n", ""),
        ),
        (
            "open-policy.yaml",
            replaced(
                &replaced(&policy, "port: 8443", "port: 10250"),
                "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: kube-arbiter",
                "  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: someone-else",
            ),
        ),
    ];
    let (ok, out) = validate(&[], &files);
    assert!(!ok, "{out}");
    assert_refused(&out, "insecure.yaml", "--insecure-unauthenticated-extender");
    assert_refused(&out, "no-client-ca.yaml", "--client-ca FILE is required");
    assert_refused(
        &out,
        "no-client-key.yaml",
        "no client key (keyData or keyFile)",
    );
    assert_refused(&out, "broad-rbac.yaml", "delete on tokenreviews");
    assert_refused(
        &out,
        "unnamed-lease.yaml",
        "update on leases needs resourceNames [kube-arbiter-scale-in]",
    );
    assert_refused(&out, "open-policy.yaml", "only 8443/TCP may be admitted");
    assert_refused(
        &out,
        "open-policy.yaml",
        "does not select Deployment/kube-arbiter",
    );
    // The copy without --disable-bind-verb next to a config without bindVerb.
    assert_refused(&out, "insecure.yaml", "pass --disable-bind-verb");
}

/// A complete set needs every security-relevant kind, and a Deployment that
/// unmounts bind must not be paired with configs that all bind.
#[test]
fn a_complete_set_needs_the_network_policy_and_matching_bind_settings() {
    let files = [
        ("deployment.yaml", manifest_text("deployment.yaml")),
        (
            "scheduler-config-enforcer.yaml",
            manifest_text("scheduler-config-enforcer.yaml"),
        ),
    ];
    let (ok, out) = validate(&["--complete"], &files);
    assert!(!ok, "{out}");
    assert!(
        out.contains("missing a NetworkPolicy for kube-arbiter"),
        "{out}"
    );
    assert!(out.contains("missing kube-arbiter's ClusterRole"), "{out}");
    assert_refused(
        &out,
        "deployment.yaml",
        "every scheduler config here uses bindVerb",
    );
}

/// cert-manager's kube-scheduler client certificate: the Issuer that signs
/// the serving certificate (whose ca.crt is --client-ca), the CN the
/// Deployment allows, client auth only.
#[test]
fn the_cert_manager_scheduler_client_is_signed_by_the_client_ca_with_the_allowed_name() {
    let client = manifest("cert-manager/scheduler-client.yaml");
    let serving = manifest("cert-manager/certificate.yaml");
    assert_eq!(client["spec"]["issuerRef"], serving["spec"]["issuerRef"]);
    assert_eq!(
        client["spec"]["usages"],
        serde_json::json!(["digital signature", "client auth"])
    );
    let deployment = manifest("deployment.yaml");
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap();
    let value_of = |flag: &str| {
        let i = args.iter().position(|a| a == flag).unwrap();
        args[i + 1].as_str().unwrap()
    };
    assert_eq!(
        client["spec"]["commonName"],
        value_of("--scheduler-client-name")
    );
    // --client-ca is ca.crt of the serving Secret, which cert-manager's CA
    // Issuer fills with the CA that signed the client certificate.
    assert_eq!(value_of("--client-ca"), "/etc/kube-arbiter/tls/ca.crt");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let tls = volumes.iter().find(|v| v["name"] == "tls").unwrap();
    assert_eq!(tls["secret"]["secretName"], serving["spec"]["secretName"]);
}

/// A ConfigMap holding `text` as its scheduler-config.yaml, as the chart
/// ships the second scheduler's configuration.
fn configmap_holding(text: &str) -> String {
    let body: String = text
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("    {l}\n")
            }
        })
        .collect();
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kube-arbiter-scheduler-config\n  \
         namespace: kube-system\ndata:\n  scheduler-config.yaml: |\n{body}"
    )
}

/// A chart rendering is one file: the validator checks a
/// KubeSchedulerConfiguration held in a ConfigMap like one of its own,
/// and pairs it with the kube-arbiter ConfigMap in the same file.
#[test]
fn the_validator_checks_a_scheduler_configuration_held_in_a_configmap() {
    let (plain, enforcer) = (
        manifest_text("scheduler-config.yaml"),
        manifest_text("scheduler-config-enforcer.yaml"),
    );
    let (next_to, enforcing) = (
        manifest_text("configmap.yaml"),
        manifest_text("configmap-enforcer.yaml"),
    );
    let files = [
        (
            "second.yaml",
            format!("{enforcing}---\n{}", configmap_holding(&enforcer)),
        ),
        (
            "mismatch.yaml",
            format!("{next_to}---\n{}", configmap_holding(&enforcer)),
        ),
        (
            "keyless.yaml",
            configmap_holding(&replaced(
                &plain,
                "      keyData: REPLACE_WITH_SCHEDULER_CLIENT_KEY\n",
                "",
            )),
        ),
    ];
    let (ok, out) = validate(&[], &files);
    assert!(!ok, "{out}");
    let held = "ConfigMap/kube-arbiter-scheduler-config data[scheduler-config.yaml]";
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok ") && l.contains("/second.yaml ") && l.contains(held)),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("ok ")
            && l.contains("/second.yaml ")
            && l.contains("scheduling.role enforcer of second.yaml")),
        "{out}"
    );
    assert_refused(&out, "mismatch.yaml", "taken out of Filter");
    assert_refused(&out, "keyless.yaml", "no client key (keyData or keyFile)");
}

/// A deployment without the NetworkPolicy (the chart's
/// networkPolicy.enabled false) is complete only when the run says so.
#[test]
fn a_set_without_the_network_policy_is_complete_when_told_so() {
    let files = [
        ("deployment.yaml", manifest_text("deployment.yaml")),
        ("rbac.yaml", manifest_text("rbac.yaml")),
        ("configmap.yaml", manifest_text("configmap.yaml")),
        (
            "scheduler-config.yaml",
            manifest_text("scheduler-config.yaml"),
        ),
    ];
    let (ok, out) = validate(&["--complete", "--no-network-policy"], &files);
    assert!(ok, "{out}");
    let (ok, out) = validate(&["--complete"], &files);
    assert!(!ok, "{out}");
    assert!(
        out.contains("missing a NetworkPolicy for kube-arbiter"),
        "{out}"
    );
}

/// Every read kube-arbiter makes with its own ServiceAccount is granted by
/// its ClusterRole: each watch's list and watch, and the reads of what the
/// view has not shown yet (get pods and nodes for bind and explain, get
/// and list PriorityClasses for the webhooks; docs/live-source.md).
#[test]
fn the_cluster_role_grants_every_read() {
    let text = manifest_text("rbac.yaml");
    let role = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<serde_json::Value>(doc).unwrap())
        .find(|doc| doc["kind"] == "ClusterRole")
        .unwrap();
    let rules = role["rules"].as_array().unwrap();
    let has =
        |list: &serde_json::Value, item: &str| list.as_array().unwrap().iter().any(|v| v == item);
    let grants = |group: &str, resource: &str, verb: &str| {
        rules.iter().any(|r| {
            has(&r["apiGroups"], group) && has(&r["resources"], resource) && has(&r["verbs"], verb)
        })
    };
    let watched = [
        ("", "nodes"),
        ("", "pods"),
        ("", "namespaces"),
        ("", "services"),
        ("", "replicationcontrollers"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "deployments"),
        ("policy", "poddisruptionbudgets"),
        ("scheduling.k8s.io", "priorityclasses"),
    ];
    for (group, resource) in watched {
        for verb in ["get", "list", "watch"] {
            assert!(grants(group, resource, verb), "{verb} {group}/{resource}");
        }
    }
}
