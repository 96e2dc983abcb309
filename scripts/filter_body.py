"""Write the request bodies of the extender load test from a cluster file.

The incoming pod is a realistic web replica joining the largest Deployment
of the cluster whose pods have a hard zone spread: hard zone spread and
soft hostname spread over its own app, required node affinity (node pools
holding about a tenth of the nodes), required hostname anti-affinity to
another app of its namespace, preferred zone affinity and anti-affinity to
two more apps.

Bodies (OUT_DIR/load-NAME-body.json):
- filter-500, prioritize-500: NodeNames mode, the first 500 nodes the
  pod's node affinity admits, what kube-scheduler sends at 5,000 nodes
  (percentageOfNodesToScore stops its own filter after about 10 %
  feasible);
- filter-all: NodeNames mode, every node of the file (most fail the node
  affinity: a large answer);
- filter-nodes: Nodes mode, every node object of the file (the full
  NodeList kube-scheduler sends without nodeCacheCapable);
- preempt: MetaVictims, a 24-cpu pod at priority 1,000,000 and, for each of
  the first 199 nodes (by name) large enough where it does not fit now, the
  lower-priority pods it needs gone (kube-scheduler's victim selection:
  remove all lower-priority pods, reprieve the most important ones that
  still leave room).

Each body also has a `.tmpl` sibling where the pod's uid is the marker
`@UID@`, so wrk can send a new pod on every request (a prepared-state
cache must not turn the benchmark into cache hits).

    python3 scripts/filter_body.py CLUSTER.json OUT_DIR
"""
import collections
import json
import sys

UID_MARK = "@UID@"
FEASIBLE_NAMES = 500


def main(state_path, out_dir):
    with open(state_path, "rb") as f:
        items = json.load(f)["items"]
    node_objs = sorted((o for o in items if o.get("kind") == "Node"),
                       key=lambda o: o["metadata"]["name"])
    pod, pools = web_replica(items, node_objs)
    key = pool_key(node_objs)
    admitted = [o["metadata"]["name"] for o in node_objs
                if o["metadata"]["labels"].get(key) in pools]
    every = [o["metadata"]["name"] for o in node_objs]
    bodies = {
        "filter-500": {"Pod": pod, "NodeNames": admitted[:FEASIBLE_NAMES]},
        "prioritize-500": {"Pod": pod, "NodeNames": admitted[:FEASIBLE_NAMES]},
        "filter-all": {"Pod": pod, "NodeNames": every},
        "filter-nodes": {"Pod": pod, "Nodes": {"items": node_objs}},
        "preempt": preempt_args(items, node_objs),
    }
    for name, body in bodies.items():
        text = json.dumps(body, separators=(",", ":"))
        write(f"{out_dir}/load-{name}-body.json", text.replace(UID_MARK, f"{name}-pod"))
        write(f"{out_dir}/load-{name}-body.json.tmpl", text)
        print(f"{name}: {len(text) // 1024} KiB body")
    print(f"pod {pod['metadata']['namespace']}/{pod['metadata']['labels']['app']}: "
          f"node affinity admits {len(admitted)} of {len(every)} nodes")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def pool_key(node_objs):
    """The node pool label: `nodepool` (examples/synth_cluster) or `pool`
    (the live soak's cluster, tests/support/synthetic.rs)."""
    for key in ("nodepool", "pool"):
        if any(key in o["metadata"]["labels"] for o in node_objs):
            return key
    sys.exit("no node carries a nodepool or pool label")


def hard_zone_spread(pod):
    return any(c.get("topologyKey") == "topology.kubernetes.io/zone"
               and c.get("whenUnsatisfiable") == "DoNotSchedule"
               for c in pod["spec"].get("topologySpreadConstraints") or [])


def web_replica(items, node_objs):
    """The incoming pod and the node pools its required node affinity names."""
    apps = collections.Counter()
    spread = set()
    for o in items:
        if o.get("kind") == "Pod" and o["spec"].get("nodeName"):
            labels = o["metadata"].get("labels") or {}
            if "app" in labels:
                apps[(o["metadata"]["namespace"], labels["app"])] += 1
                if hard_zone_spread(o):
                    spread.add((o["metadata"]["namespace"], labels["app"]))
    # A new replica of the largest Deployment whose pods spread over zones
    # as the incoming pod does (where apps are all the same size, the
    # largest of all may have other constraints); the largest when none do.
    (ns, app), _ = next(((a, n) for a, n in apps.most_common() if a in spread),
                        apps.most_common(1)[0])
    others = [a for (n, a), _ in apps.most_common() if n == ns and a != app][:3]
    while len(others) < 3:
        others.append(app)
    # Node pools (instance type × zone), smallest first, until they hold
    # 500 nodes: several zones keep some, so the zone spread counts. GPU
    # pools are tainted: kube-scheduler would not send them.
    key = pool_key(node_objs)
    pool_sizes = collections.Counter(o["metadata"]["labels"][key] for o in node_objs
                                     if key in o["metadata"]["labels"])
    pools, admitted = [], 0
    for pool, size in sorted(pool_sizes.items(), key=lambda p: (p[1], p[0])):
        if admitted >= FEASIBLE_NAMES:
            break
        if pool.startswith("g5-"):
            continue
        pools.append(pool)
        admitted += size
    own = {"matchLabels": {"app": app}}

    def preferred(target, weight):
        return {"weight": weight, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": target}},
            "topologyKey": "topology.kubernetes.io/zone"}}

    pod = {
        "metadata": {"name": f"{app}-new", "namespace": ns, "uid": UID_MARK,
                     "resourceVersion": "1", "labels": {"app": app}},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": own},
                {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                 "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": own},
            ],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": key, "operator": "In", "values": sorted(pools)}]}]}},
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": others[2]}},
                         "topologyKey": "kubernetes.io/hostname"}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [preferred(others[1], 50)],
                },
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [preferred(others[0], 80)],
                },
            },
        },
    }
    return pod, set(pools)


CPU, MEMORY, PRIORITY = 24000, 8 << 30, 1_000_000
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


def requests(pod):
    cpu = mem = 0
    for c in pod["spec"].get("containers", []):
        r = (c.get("resources") or {}).get("requests") or {}
        cpu += amount(r.get("cpu", 0), True)
        mem += amount(r.get("memory", 0))
    return cpu, mem


def preempt_args(items, node_objs):
    alloc = {}
    for o in node_objs:
        a = o["status"]["allocatable"]
        alloc[o["metadata"]["name"]] = (amount(a["cpu"], True), amount(a["memory"]))
    on_node = collections.defaultdict(list)
    for o in items:
        node = o.get("kind") == "Pod" and o["spec"].get("nodeName")
        if node in alloc and o.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
            on_node[node].append(o)
    victims = {}
    for name in sorted(alloc):
        cpu, mem = alloc[name]
        if cpu < CPU or mem < MEMORY:
            continue
        pods = on_node[name]
        used = [sum(x) for x in zip(*(requests(p) for p in pods))] or [0, 0]
        if cpu - used[0] >= CPU and mem - used[1] >= MEMORY:
            continue
        lower = [p for p in pods if p["spec"].get("priority", 0) < PRIORITY]
        kept = [p for p in pods if p["spec"].get("priority", 0) >= PRIORITY]
        free = [cpu - sum(requests(p)[0] for p in kept), mem - sum(requests(p)[1] for p in kept)]
        if free[0] < CPU or free[1] < MEMORY:
            continue
        # Reprieve the most important first (higher priority, then older).
        lower.sort(key=lambda p: (-p["spec"].get("priority", 0),
                                  p.get("status", {}).get("startTime", "")))
        needed = []
        for p in lower:
            c, m = requests(p)
            if free[0] - c >= CPU and free[1] - m >= MEMORY:
                free[0] -= c
                free[1] -= m
            else:
                needed.append(p)
        victims[name] = {"Pods": [{"UID": p["metadata"]["uid"]} for p in needed],
                         "NumPDBViolations": 0}
        if len(victims) == 199:
            break
    pod = {
        "metadata": {"name": "urgent", "namespace": "default", "uid": UID_MARK,
                     "resourceVersion": "1", "labels": {"app": "urgent"}},
        "spec": {"priority": PRIORITY, "containers": [{"name": "c", "resources": {
            "requests": {"cpu": "24", "memory": "8Gi"}}}]},
    }
    print(f"preempt: {len(victims)} candidate nodes, "
          f"{sum(len(v['Pods']) for v in victims.values())} MetaVictims")
    return {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": victims}


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
