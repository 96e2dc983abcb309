//! The settings shipped in manifests/ must be ones kube-arbiter accepts
//! (unknown config keys make it refuse to start) and must agree with the
//! Deployment that runs it.

use kube_arbiter::config::Config;

fn manifest(name: &str) -> serde_json::Value {
    let path = format!("{}/manifests/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn shipped_config() -> Config {
    let configmap = manifest("configmap.yaml");
    assert_eq!(configmap["kind"], "ConfigMap");
    Config::parse(configmap["data"]["config.yaml"].as_str().unwrap()).unwrap()
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
    for flag in ["--tls-cert", "--tls-key", "--config"] {
        let i = args.iter().position(|a| a == flag).unwrap();
        let file = args[i + 1].as_str().unwrap();
        assert!(
            mounts.iter().any(|m| file.starts_with(&format!("{m}/"))),
            "{flag} {file} is not under a mounted volume"
        );
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
