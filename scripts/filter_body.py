"""Write request bodies for the extender load test from a cluster file.

The incoming pod joins the largest Deployment of the cluster with the
benchmark's shape: hard zone spread, soft hostname spread, required
hostname anti-affinity to its own app, preferred affinity and
anti-affinity (zone) to two other apps of its namespace. NodeNames lists
every node of the file, as kube-scheduler does with nodeCacheCapable.

The preempt body (ExtenderPreemptionArgs, MetaVictims form) is the
preempt benchmark's: a pod of priority 2,000,000 asking for 6 cpu and
8 GiB, with the first 200 nodes (by name) where it does not fit now.

    python3 scripts/filter_body.py CLUSTER.json OUT_DIR
"""
import collections
import json
import sys


def main(state_path, out_dir):
    with open(state_path, "rb") as f:
        items = json.load(f)["items"]
    nodes = [o["metadata"]["name"] for o in items if o.get("kind") == "Node"]
    apps = collections.Counter()
    for o in items:
        if o.get("kind") == "Pod" and o["spec"].get("nodeName"):
            labels = o["metadata"].get("labels") or {}
            if "app" in labels:
                apps[(o["metadata"]["namespace"], labels["app"])] += 1
    (ns, app), replicas = apps.most_common(1)[0]
    others = [a for (n, a), _ in apps.most_common() if n == ns and a != app][:2]
    while len(others) < 2:
        others.append(app)
    own = {"matchLabels": {"app": app}}

    def term(target, weight):
        return {"weight": weight, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": target}},
            "topologyKey": "topology.kubernetes.io/zone"}}

    pod = {
        "metadata": {"name": f"{app}-new", "namespace": ns, "uid": "load-test-pod",
                     "labels": {"app": app}},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": own},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": own},
            ],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": own, "topologyKey": "kubernetes.io/hostname"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [term(others[1], 50)],
                },
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [term(others[0], 80)],
                },
            },
        },
    }
    body = json.dumps({"Pod": pod, "NodeNames": nodes}, separators=(",", ":"))
    for verb in ("filter", "prioritize"):
        with open(f"{out_dir}/load-{verb}-body.json", "w") as f:
            f.write(body)
    print(f"pod {ns}/{app} ({replicas} replicas), {len(nodes)} node names, "
          f"{len(body) // 1024} KiB body")
    write_preempt_body(items, out_dir)


CPU, MEMORY = 6000, 8 << 30
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
         "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def amount(quantity, millis=False):
    """Plain, m-suffixed and binary/decimal-suffixed quantities (what the
    synthetic cluster writes), in millis for cpu."""
    q = str(quantity)
    if q.endswith("m"):
        value = float(q[:-1]) / 1000
    else:
        suffix = next((u for u in sorted(UNITS, key=len, reverse=True) if q.endswith(u)), "")
        value = float(q[:len(q) - len(suffix)]) * UNITS.get(suffix, 1)
    return round(value * 1000) if millis else round(value)


def write_preempt_body(items, out_dir):
    free = {}
    for o in items:
        if o.get("kind") == "Node":
            a = o["status"]["allocatable"]
            free[o["metadata"]["name"]] = [amount(a["cpu"], True), amount(a["memory"])]
    for o in items:
        node = o.get("kind") == "Pod" and o["spec"].get("nodeName")
        if node in free and o.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            for c in o["spec"].get("containers", []):
                r = (c.get("resources") or {}).get("requests") or {}
                free[node][0] -= amount(r.get("cpu", 0), True)
                free[node][1] -= amount(r.get("memory", 0))
    full = [n for n in sorted(free) if free[n][0] < CPU or free[n][1] < MEMORY][:200]
    pod = {
        "metadata": {"name": "urgent", "namespace": "default", "uid": "urgent-1",
                     "labels": {"app": "urgent"}},
        "spec": {"priority": 2_000_000, "containers": [{"name": "c", "resources": {
            "requests": {"cpu": "6", "memory": "8Gi"}}}]},
    }
    victims = {n: {"Pods": [], "NumPDBViolations": 0} for n in full}
    body = json.dumps({"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims},
                      separators=(",", ":"))
    with open(f"{out_dir}/load-preempt-body.json", "w") as f:
        f.write(body)
    print(f"preempt: {len(full)} candidate nodes, {len(body) // 1024} KiB body")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
