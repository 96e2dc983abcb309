//! `fit` at Kubernetes' published limits: a 100-replica question on a
//! synthetic 5,000-node, 150,000-pod view (the bundled shape).
//!
//! - `fit/100_replicas_spread_and_anti_affinity`: a Deployment of 100
//!   replicas of 500m each, spread hard over zones and softly over hosts,
//!   with preferred hostname anti-affinity to itself: every replica judges
//!   all 5,000 nodes, scores the feasible ones and is placed on the view
//!   for the next.
//! - `fit/100_replicas_plain`: the same without placement rules (resources
//!   and taints only).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

use kube_arbiter::cluster::Snapshot;
use kube_arbiter::config::Config;
use kube_arbiter::fit::{FitOptions, Workload, admit, fit};
use kube_arbiter::synth::{SynthParams, generate_objects};

fn deployment(rules: bool) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]});
    if rules {
        let selector = json!({"matchLabels": {"app": "fit-bench"}});
        spec["topologySpreadConstraints"] = json!([
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
             "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
             "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector}]);
        spec["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}}]}});
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "fit-bench", "namespace": "default"},
        "spec": {"replicas": 100, "selector": {"matchLabels": {"app": "fit-bench"}},
                 "template": {"metadata": {"labels": {"app": "fit-bench"}}, "spec": spec}}})
}

fn admitted(snapshot: &Snapshot, rules: bool) -> Workload {
    let mut w = kube_arbiter::fit::workload::workload(deployment(rules)).unwrap();
    admit(&mut w, snapshot).unwrap();
    w
}

fn bench(c: &mut Criterion) {
    let objects = generate_objects(&SynthParams::new(5_000, 150_000)).unwrap();
    let snapshot = Snapshot::build(objects);
    let config = Config::default();
    let mut group = c.benchmark_group("fit");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for (name, rules) in [
        ("100_replicas_spread_and_anti_affinity", true),
        ("100_replicas_plain", false),
    ] {
        let workload = admitted(&snapshot, rules);
        let answer = fit(&snapshot, &workload, FitOptions::default(), &config).unwrap();
        assert_eq!(answer.placed, 100, "the synthetic cluster has room");
        group.bench_function(name, |b| {
            b.iter(|| black_box(fit(&snapshot, &workload, FitOptions::default(), &config).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
