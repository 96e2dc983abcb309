//! The cost of one watch event made visible at 5,000 nodes / 150,000 pods:
//! apply it to the published snapshot incrementally and publish. A full
//! rebuild is measured alongside for comparison (what a relist costs).

#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use kube_arbiter::cluster::{ClusterObjects, ClusterView, PodChange, SharedObjects, Snapshot};
use kube_arbiter::model::{Node, Pod};

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NAMESPACES: usize = 300;

fn cluster() -> ClusterObjects {
    ClusterObjects {
        nodes: (0..NODES)
            .map(|i| serde_json::from_value(synthetic::node(i)).unwrap())
            .collect(),
        pods: (0..PODS)
            .map(|i| serde_json::from_value(synthetic::pod(i, NODES, NAMESPACES)).unwrap())
            .collect(),
        namespaces: (0..NAMESPACES)
            .map(|i| serde_json::from_value(synthetic::namespace(i)).unwrap())
            .collect(),
        ..Default::default()
    }
}

fn moved(i: usize, to: usize) -> Arc<Pod> {
    let mut p: Pod = serde_json::from_value(synthetic::pod(i, NODES, NAMESPACES)).unwrap();
    p.spec.node_name = format!("node-{to:05}");
    Arc::new(p)
}

fn bench(c: &mut Criterion) {
    let objects = cluster();
    let base = Snapshot::build(objects.clone());
    let view = ClusterView::new();
    view.publish(base.clone());

    // A plain pod moving between two nodes, and one with anti-affinity
    // (it also touches the affinity indexes).
    for (name, i) in [("pod_event_publish", 1), ("affinity_pod_event_publish", 10)] {
        let versions = [moved(i, 7), moved(i, 8)];
        let mut flip = 0;
        c.bench_function(name, |b| {
            b.iter(|| {
                flip ^= 1;
                let next = base.with_pod_changes(&[PodChange::upsert(versions[flip].clone())]);
                view.publish(black_box(next));
            })
        });
    }

    let batch: Vec<PodChange> = (0..20)
        .map(|k| PodChange::upsert(moved(k * 7_001 + 1, k)))
        .collect();
    c.bench_function("batch_of_20_pod_events_publish", |b| {
        b.iter(|| view.publish(black_box(base.with_pod_changes(&batch))))
    });

    let mut node: Node = serde_json::from_value(synthetic::node(42)).unwrap();
    node.spec.unschedulable = true;
    let node = [Arc::new(node)];
    c.bench_function("node_event_publish", |b| {
        b.iter(|| view.publish(black_box(base.with_node_changes(&node).unwrap())))
    });

    let shared = SharedObjects::from(objects);
    let mut g = c.benchmark_group("full_rebuild");
    g.sample_size(10);
    g.bench_function("build_5000_nodes_150000_pods", |b| {
        b.iter(|| black_box(Snapshot::build_shared(shared.clone())))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    // The VM is shared and noisy; short runs still separate µs from ms.
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
