"""Write ExtenderArgs bodies for the extender load test from a cluster file.

The incoming pod joins the largest Deployment of the cluster with the
benchmark's shape: hard zone spread, soft hostname spread, required
hostname anti-affinity to its own app, preferred affinity and
anti-affinity (zone) to two other apps of its namespace. NodeNames lists
every node of the file, as kube-scheduler does with nodeCacheCapable.

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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
