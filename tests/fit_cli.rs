//! `kube-arbiter fit --cluster-state F MANIFEST` as a user or a CI
//! pipeline runs it: the built binary, real files and stdin. Checks the
//! table, the JSON shape and the exit codes (0 every replica fits, 1 not,
//! 2 bad input).

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use kube_arbiter::testing::{make_node, make_pod};
use serde_json::{Value, json};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo-cluster.yaml");
const SEARCH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/workloads/search.yaml"
);

fn fit(args: &[&str]) -> Output {
    let mut all = vec!["fit"];
    all.extend(args);
    common::run(&all)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

#[test]
fn every_replica_fits_exit_0_with_the_table() {
    let out = fit(&["--cluster-state", DEMO, SEARCH]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "Deployment shop/search: 6 of 6 replicas fit; priority 1000 (default-priority), preemption on"
    );
    assert!(lines[2].starts_with("REPLICA  NODE"), "{stdout}");
    assert!(stdout.contains("\nZONE        REPLICAS\n"), "{stdout}");
    for zone in ["eu-west-1a  2", "eu-west-1b  2", "eu-west-1c  2"] {
        assert!(stdout.contains(zone), "{zone}: {stdout}");
    }
}

#[test]
fn not_every_replica_fits_exit_1_and_the_json_says_where_and_why() {
    let out = fit(&[
        "--cluster-state",
        DEMO,
        "--replicas",
        "9",
        "-o",
        "json",
        SEARCH,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["workload"], "Deployment shop/search");
    assert_eq!(v["priority"], 1000);
    assert_eq!(v["priorityClassName"], "default-priority");
    assert_eq!(v["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(
        (
            &v["replicas"],
            &v["placed"],
            &v["placedByPreemption"],
            &v["unplaced"]
        ),
        (&json!(9), &json!(8), &json!(0), &json!(1))
    );
    assert_eq!(
        v["zones"],
        json!([{"name": "eu-west-1a", "replicas": 3}, {"name": "eu-west-1b", "replicas": 3},
               {"name": "eu-west-1c", "replicas": 2}])
    );
    let placements = v["placements"].as_array().unwrap();
    assert_eq!(placements.len(), 8);
    for (i, p) in placements.iter().enumerate() {
        assert_eq!(p["replica"], i);
        assert!(p["node"].as_str().unwrap().starts_with("node-"), "{p}");
        assert!(p["score"]["total"].is_i64(), "{p}");
        assert_eq!(p["preempted"], false);
    }
    let failed = &v["firstUnschedulable"];
    assert_eq!(failed["replica"], 8);
    let summary = failed["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("0/9 nodes are available: ")
            && summary.contains("didn't match pod topology spread constraints"),
        "{summary}"
    );
    assert_eq!(failed["nodes"].as_array().unwrap().len(), 9);
    assert!(
        failed["preemption"]
            .as_str()
            .unwrap()
            .starts_with("preemption: 0/9 nodes are available:")
    );
    assert_eq!(v["victims"], json!([]));
}

#[test]
fn the_manifest_can_come_from_stdin() {
    let mut child = Command::new(common::BIN)
        .args(["fit", "--cluster-state", DEMO, "-o", "json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let manifest = std::fs::read(SEARCH).unwrap();
    child.stdin.take().unwrap().write_all(&manifest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json_of(&out)["placed"], 6);
}

/// n1 runs a low-priority pod holding most of its cpu, under a budget
/// that allows no disruption; the urgent workload's second replica can
/// only go there by evicting it.
fn preemption_cluster(dir: &std::path::Path) -> String {
    let node = |name: &str| {
        make_node(name)
            .typed()
            .hostname()
            .zone("z1")
            .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
            .json()
    };
    let report = make_pod("batch", "report")
        .typed()
        .uid("uid-report")
        .label("app", "report")
        .node("n1")
        .priority(10)
        .requests(&[("cpu", "3")])
        .phase("Running");
    let state = json!({"kind": "List", "apiVersion": "v1", "items": [
        node("n1"), node("n2"), report.json(),
        {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1",
         "metadata": {"name": "report", "namespace": "batch"},
         "spec": {"selector": {"matchLabels": {"app": "report"}}}, "status": {"disruptionsAllowed": 0}},
        {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
         "metadata": {"name": "urgent"}, "value": 1000}]});
    let path = dir.join("state.json");
    std::fs::write(&path, state.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

fn urgent(dir: &std::path::Path, class: &str) -> String {
    let manifest = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: api, namespace: shop}}\n\
         spec:\n  replicas: 2\n  selector: {{matchLabels: {{app: api}}}}\n  template:\n    \
         metadata: {{labels: {{app: api}}}}\n    spec:\n      priorityClassName: {class}\n      \
         containers: [{{name: c, resources: {{requests: {{cpu: '3'}}}}}}]\n"
    );
    let path = dir.join(format!("{class}.yaml"));
    std::fs::write(&path, manifest).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn preemption_names_its_victims_and_budgets_and_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let (state, manifest) = (preemption_cluster(dir.path()), urgent(dir.path(), "urgent"));
    let out = fit(&["--cluster-state", &state, "-o", "json", &manifest]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json_of(&out);
    assert_eq!(
        (&v["placed"], &v["placedByPreemption"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(
        v["victims"],
        json!([{"pod": "batch/report", "node": "n1", "priority": 10, "breaksPdb": true, "forReplica": 1}])
    );
    assert_eq!(v["placements"][1]["preempted"], true);

    let table = fit(&["--cluster-state", &state, &manifest]);
    let stdout = text(&table.stdout);
    assert!(
        stdout.contains(
            "* evict batch/report (priority 10) on n1 for replica 1: breaks its PodDisruptionBudget"
        ),
        "{stdout}"
    );

    let off = fit(&[
        "--cluster-state",
        &state,
        "--preempt=false",
        "-o",
        "json",
        &manifest,
    ]);
    assert_eq!(off.status.code(), Some(1), "{}", text(&off.stderr));
    let v = json_of(&off);
    assert_eq!((&v["placed"], &v["unplaced"]), (&json!(1), &json!(1)));
    assert_eq!(v["victims"], json!([]));
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let state = preemption_cluster(dir.path());
    let unknown_class = urgent(dir.path(), "nope");
    let service = dir.path().join("service.yaml");
    std::fs::write(
        &service,
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
    )
    .unwrap();
    let broken_state = dir.path().join("broken.yaml");
    std::fs::write(&broken_state, "items: [\n").unwrap();
    let cases: [(&str, Vec<&str>, &str); 5] = [
        (
            "unknown PriorityClass: upstream's admission message",
            vec!["--cluster-state", &state, &unknown_class],
            "pods \"api\" is forbidden: no PriorityClass with name nope was found",
        ),
        (
            "not a workload",
            vec!["--cluster-state", &state, service.to_str().unwrap()],
            "the manifest has kind Service",
        ),
        (
            "no such manifest",
            vec!["--cluster-state", &state, "/nonexistent/fit.yaml"],
            "cannot read manifest /nonexistent/fit.yaml",
        ),
        (
            "a broken state file",
            vec!["--cluster-state", broken_state.to_str().unwrap(), SEARCH],
            "broken.yaml",
        ),
        (
            "a live workload with a state file",
            vec!["--cluster-state", &state, "deployment/web"],
            "a live workload is read from the API server",
        ),
    ];
    for (name, args, want) in cases {
        let out = fit(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(want), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}");
    }
}

/// The README's `fit` example: the command its marker names, run here,
/// prints exactly the block under it.
#[test]
fn the_readme_example_is_what_the_command_prints() {
    const MARK: &str = "<!-- README answer: kube-arbiter fit ";
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let at = readme.find(MARK).expect("the README shows a fit example");
    let rest = &readme[at + MARK.len()..];
    let (args, rest) = rest.split_once(" -->\n```text\n").unwrap();
    let shown = &rest[..rest.find("```\n").unwrap()];
    let root = env!("CARGO_MANIFEST_DIR");
    let args: Vec<String> = args
        .split_whitespace()
        .map(|a| {
            if a.starts_with("examples/") {
                format!("{root}/{a}")
            } else {
                a.to_string()
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = fit(&args);
    assert_eq!(text(&out.stdout), shown, "{}", text(&out.stderr));
}
