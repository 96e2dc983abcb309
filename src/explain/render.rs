//! The two renderings of an [`Explanation`]: an aligned table for people
//! and the JSON the server answers by default.

use std::fmt::Write as _;

use super::{Explanation, NodeExplanation, PreemptionOutlook};

/// An aligned table: feasible nodes first, best score first, then the
/// failed ones by name.
pub fn render_table(e: &Explanation) -> String {
    let mut out = String::new();
    if let Some(err) = &e.error {
        let _ = writeln!(out, "pod {}: cannot be scheduled anywhere: {err}", e.pod);
        return out;
    }
    let bound = e.bound_to.as_ref().map_or(String::new(), |node| {
        format!(" (bound to {node}; judged as if it were not placed)")
    });
    let _ = writeln!(
        out,
        "pod {}{bound}: {} of {} nodes feasible\n",
        e.pod,
        e.feasible,
        e.nodes.len()
    );
    let mut rows: Vec<&NodeExplanation> = e.nodes.iter().collect();
    rows.sort_by_key(|n| {
        (
            n.scores.is_none(),
            std::cmp::Reverse(n.scores.as_ref().map(|s| s.total)),
        )
    });
    let cell = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let table: Vec<[String; 7]> = rows
        .iter()
        .map(|n| {
            let s = n.scores.as_ref();
            [
                n.node.clone(),
                n.result.to_string(),
                cell(s.and_then(|s| s.node_affinity)),
                cell(s.and_then(|s| s.inter_pod_affinity)),
                cell(s.and_then(|s| s.pod_topology_spread)),
                cell(s.map(|s| s.total)),
                match (&n.reason, &n.taint) {
                    (Some(reason), Some(taint)) => format!("{reason} ({taint})"),
                    (reason, _) => reason.clone().unwrap_or_default(),
                },
            ]
        })
        .collect();
    let header = [
        "NODE",
        "RESULT",
        "NODE-AFFINITY",
        "POD-AFFINITY",
        "SPREAD",
        "SCORE",
        "REASON",
    ];
    let mut widths: [usize; 7] = header.map(str::len);
    for row in &table {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut line = |cells: [&str; 7]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 6 {
                l.push_str(c);
            } else {
                let _ = write!(l, "{c:<w$}  ", w = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(header);
    for row in &table {
        line(row.each_ref().map(String::as_str));
    }
    let _ = writeln!(out, "\n{}", e.summary);
    if let Some(p) = &e.preemption {
        render_preemption(&mut out, p);
    }
    for d in &e.dra_extended_resources {
        let _ = writeln!(
            out,
            "{} (DeviceClass {}): a DRA extended resource, checked against allocatable \
             only on nodes that list it; elsewhere kube-scheduler's DynamicResources plugin \
             decides whether a device is free (not judged here)",
            d.resource, d.device_class
        );
    }
    out
}

/// The preemption line, then one line per candidate node (the nominated
/// one marked), with how many pods would go and the first few of them.
fn render_preemption(out: &mut String, p: &PreemptionOutlook) {
    const NAMED: usize = 3;
    let _ = writeln!(out, "{}", p.message);
    for c in &p.candidates {
        let mark = if p.nominate.as_deref() == Some(c.node.as_str()) {
            "*"
        } else {
            " "
        };
        let mut names = c.victims[..c.victims.len().min(NAMED)].join(", ");
        if c.victims.len() > NAMED {
            names.push_str(", …");
        }
        let pdb = match c.pdb_violations {
            0 => String::new(),
            n => format!(", {n} breaking a PodDisruptionBudget"),
        };
        let _ = writeln!(
            out,
            "{mark} {}: evict {} pod(s){pdb}: {names}",
            c.node,
            c.victims.len()
        );
    }
}

pub fn render_json(e: &Explanation) -> String {
    serde_json::to_string_pretty(e).unwrap_or_else(|err| format!("{{\"error\":\"{err}\"}}"))
}
