//! `fit`'s answer as a table for people and as JSON for tools.

use std::fmt::Write;

use super::FitAnswer;

pub fn render_json(answer: &FitAnswer) -> String {
    let mut text = serde_json::to_string_pretty(answer).expect("the answer serializes");
    text.push('\n');
    text
}

/// The headline, each replica's node, the counts per node and per zone,
/// the first replica that fit nowhere and why, and the evictions.
pub fn render_table(a: &FitAnswer) -> String {
    let mut out = String::new();
    let class = if a.priority_class_name.is_empty() {
        String::new()
    } else {
        format!(" ({})", a.priority_class_name)
    };
    let _ = writeln!(
        out,
        "{}: {} of {} replicas fit{}; priority {}{class}, preemption {}",
        a.workload,
        a.placed,
        a.replicas,
        match a.placed_by_preemption {
            0 => String::new(),
            n => format!(" ({n} by preemption)"),
        },
        a.priority,
        if a.preempt { "on" } else { "off" },
    );
    if !a.placements.is_empty() {
        out.push('\n');
        let rows: Vec<[String; 5]> = a
            .placements
            .iter()
            .map(|p| {
                [
                    p.replica.to_string(),
                    p.node.clone(),
                    p.zone.clone(),
                    if p.preempted {
                        "preempts".to_string()
                    } else {
                        p.feasible.to_string()
                    },
                    p.score.as_ref().map_or("-".into(), |s| {
                        format!("{} (kube-arbiter {})", s.total, s.extender)
                    }),
                ]
            })
            .collect();
        table(
            &mut out,
            ["REPLICA", "NODE", "ZONE", "FEASIBLE", "SCORE"],
            &rows,
        );
        out.push('\n');
        let counts = |counts: &[super::Count]| -> Vec<[String; 2]> {
            counts
                .iter()
                .map(|c| [c.name.clone(), c.replicas.to_string()])
                .collect()
        };
        table(&mut out, ["ZONE", "REPLICAS"], &counts(&a.zones));
        out.push('\n');
        table(&mut out, ["NODE", "REPLICAS"], &counts(&a.nodes));
    }
    if let Some(u) = &a.first_unschedulable {
        let _ = writeln!(out, "\nreplica {} ({}) fits on no node:", u.replica, u.pod);
        unschedulable(&mut out, u);
    }
    if let Some(u) = &a.first_unplaced {
        let _ = writeln!(
            out,
            "\nreplica {} ({}) fits on no node, not even by preemption:",
            u.replica, u.pod
        );
        unschedulable(&mut out, u);
    }
    if !a.victims.is_empty() {
        out.push('\n');
        for v in &a.victims {
            let _ = writeln!(
                out,
                "* evict {} (priority {}) on {} for replica {}{}",
                v.pod,
                v.priority,
                v.node,
                v.for_replica,
                if v.breaks_pdb {
                    ": breaks its PodDisruptionBudget"
                } else {
                    ""
                }
            );
        }
    }
    if a.unplaced > 0 {
        let _ = writeln!(
            out,
            "\n{} of {} replicas do not fit.",
            a.unplaced, a.replicas
        );
    }
    for d in &a.dra_extended_resources {
        let _ = writeln!(
            out,
            "\n{} (DeviceClass {}): a DRA extended resource, counted only on nodes that \
             list it; elsewhere kube-scheduler's DynamicResources plugin allocates the devices \
             (not judged here)",
            d.resource, d.device_class
        );
    }
    out
}

fn unschedulable(out: &mut String, u: &super::Unschedulable) {
    let _ = writeln!(out, "{}", u.summary);
    if let Some(p) = &u.preemption {
        let _ = writeln!(out, "{p}");
    }
}

/// Columns padded to their widest cell, two spaces apart.
fn table<const N: usize>(out: &mut String, header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut line = |cells: [&str; N]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<width$}  ", width = widths[i]);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header);
    for row in rows {
        line(std::array::from_fn(|i| row[i].as_str()));
    }
}
