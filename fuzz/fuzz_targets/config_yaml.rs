//! `--config` files through the same parser `Config::load` uses; a config
//! it accepts must then drive filter, prioritize and preempt without
//! failing (weights, default spread constraints, answer mode).
#![no_main]

use jiff::Timestamp;
use kube_arbiter::api::extender::{filter, prioritize_body};
use kube_arbiter::api::preempt::answer;
use kube_arbiter::config::Config;
use kube_arbiter::model::RecentNodes;
use kube_arbiter::parallel::Splitter;
use kube_arbiter_fuzz::{DEFAULTS, DEMO};
use libfuzzer_sys::fuzz_target;

/// A pod the default spread constraints apply to (a ReplicaSet of the demo
/// cluster selects it), preferring SSD nodes, asked about every node.
const ARGS: &[u8] = br#"{"Pod": {"metadata": {"name": "web-new", "namespace": "shop",
    "labels": {"app": "web", "pod-template-hash": "6d4cf56db6"}},
  "spec": {"priority": 1000000, "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 10, "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}}]}},
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "7", "memory": "1Gi"}}}]}},
  "NodeNames": ["node-a1", "node-a2", "node-b1", "node-b2", "node-c1", "node-c2"],
  "NodeNameToMetaVictims": {"node-a1": {}, "node-b1": {}, "node-c2": {}}}"#;

fuzz_target!(|text: &str| {
    let Ok(config) = Config::parse(text) else {
        return;
    };
    // The default settings are what every other target decides with.
    if config.scheduling == DEFAULTS.scheduling && config.preemption == DEFAULTS.preemption {
        return;
    }
    let result = filter(
        Some(&DEMO),
        &config.scheduling,
        ARGS,
        &RecentNodes::default(),
        &Splitter::default(),
    );
    assert_eq!(result.error, "", "a valid config fails filter");
    let scores = prioritize_body(
        &DEMO,
        &config.scheduling,
        ARGS,
        &RecentNodes::default(),
        &Splitter::default(),
    )
    .unwrap_or_else(|e| panic!("a valid config fails prioritize: {}", e.message));
    for host in &scores {
        assert!(
            (0..=10).contains(&host.score),
            "score out of 0..10: {host:?}"
        );
    }
    let now = Timestamp::from_second(1_800_000_000).expect("a fixed valid instant");
    if let Err(e) = answer(&DEMO, &config, ARGS, now) {
        panic!("a valid config fails preempt: {}", e.message);
    }
});
