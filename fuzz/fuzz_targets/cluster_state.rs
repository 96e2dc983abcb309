//! `--cluster-state` files (JSON and YAML) through the file source's
//! decoder and index, as `cluster::file::load` runs them.
#![no_main]

use kube_arbiter::cluster::Snapshot;
use kube_arbiter::cluster::decode::decode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok((objects, _ignored)) = decode(text) else {
        return;
    };
    let nodes = objects.nodes.len();
    let snapshot = Snapshot::build(objects);
    assert!(snapshot.nodes().len() <= nodes);
    let _ = snapshot.counts();
});
