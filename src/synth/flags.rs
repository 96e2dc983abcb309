//! The command line of `examples/synth_cluster.rs`: the size, a named
//! shape, and flags that change single parameters of it.

use super::SynthParams;

pub const USAGE: &str = "\
usage: synth_cluster [NODES [PODS]] [--shape bundled|second] [FLAGS] > cluster.json
  NODES, PODS                 cluster size (default 500 15000)
  --shape bundled             3 zones, Deployments of 10-300 replicas, 30 % zone spread,
                              10 % each anti-affinity, preferred affinity, node affinity,
                              5 % GPU, a PDB on every 2nd, 6-12 images per node (default)
  --shape second              10 zones, Deployments of 100 replicas, 30 % zone spread,
                              10 % anti-affinity, the rest none, a PDB on every 5th,
                              20 images per node (the second benchmark shape)
flags override the shape's value, in any order:
  --zones N  --namespaces N  --app-size N  --images-per-node N  --pdb-every N (0: none)
  --spread-share F  --anti-affinity-share F  --prefer-affinity-share F
  --node-affinity-share F  --gpu-share F
                              share of the Deployments, 0 to 1 in whole percents
                              (0.3), all shares together at most 1
  --seed N  --verbose";

/// The parameters `args` (without the program name) ask for, or what is
/// wrong with them.
pub fn parse(args: &[String]) -> Result<SynthParams, String> {
    let mut sizes = Vec::new();
    let mut shape = "bundled";
    let mut flags: Vec<(&str, &str)> = Vec::new();
    let mut verbose = false;
    let mut rest = args.iter().map(String::as_str);
    while let Some(arg) = rest.next() {
        if arg == "--verbose" {
            verbose = true;
        } else if let Some(flag) = arg.strip_prefix("--") {
            let (name, value) = match flag.split_once('=') {
                Some((name, value)) => (name, value),
                None => (
                    flag,
                    rest.next()
                        .ok_or_else(|| format!("--{flag} needs a value"))?,
                ),
            };
            if name == "shape" {
                shape = value;
            } else {
                flags.push((name, value));
            }
        } else if sizes.len() < 2 {
            sizes.push(count("NODES and PODS", arg)?);
        } else {
            return Err(format!("unexpected argument {arg:?}"));
        }
    }
    let nodes = sizes.first().copied().unwrap_or(500);
    let pods = sizes.get(1).copied().unwrap_or(15_000);
    let mut p = match shape {
        "bundled" => SynthParams::new(nodes, pods),
        "second" => SynthParams::second_shape(nodes, pods),
        other => {
            return Err(format!(
                "--shape: unknown shape {other:?} (bundled or second)"
            ));
        }
    };
    p.verbose = verbose;
    for (name, value) in flags {
        let flag = format!("--{name}");
        match name {
            "zones" => p.zones = positive(&flag, value)?,
            "namespaces" => p.namespaces = positive(&flag, value)?,
            "app-size" => p.app_size = Some(positive(&flag, value)?),
            "images-per-node" => p.images_per_node = Some(count(&flag, value)?),
            "pdb-every" => p.pdb_every = count(&flag, value)?,
            "seed" => {
                p.seed = value
                    .parse()
                    .map_err(|_| format!("{flag}: {value:?} is not a number"))?
            }
            "spread-share" => p.mix.spread = percent(&flag, value)?,
            "anti-affinity-share" => p.mix.anti_affinity = percent(&flag, value)?,
            "prefer-affinity-share" => p.mix.prefer_affinity = percent(&flag, value)?,
            "node-affinity-share" => p.mix.node_affinity = percent(&flag, value)?,
            "gpu-share" => p.mix.gpu = percent(&flag, value)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if p.mix.total() > 100 {
        return Err(format!(
            "the shares add up to {} %, more than all Deployments",
            p.mix.total()
        ));
    }
    Ok(p)
}

fn count(what: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .map_err(|_| format!("{what}: {value:?} is not a whole number"))
}

fn positive(what: &str, value: &str) -> Result<usize, String> {
    match count(what, value)? {
        0 => Err(format!("{what}: must be at least 1")),
        n => Ok(n),
    }
}

/// A share from 0 to 1 in whole percents ("0.3"), as a percent.
fn percent(what: &str, value: &str) -> Result<u8, String> {
    let hundredths = value
        .parse::<f64>()
        .ok()
        .filter(|share| (0.0..=1.0).contains(share))
        .map(|share| share * 100.0)
        .ok_or_else(|| format!("{what}: {value:?} is not a share from 0 to 1"))?;
    let rounded = hundredths.round();
    if (hundredths - rounded).abs() > 1e-6 {
        return Err(format!(
            "{what}: {value:?} is not a whole percent (0.01 steps)"
        ));
    }
    Ok(rounded as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::PlacementMix;

    fn parse_line(line: &str) -> Result<SynthParams, String> {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args)
    }

    #[test]
    fn no_arguments_give_the_bundled_shape_at_the_example_size() {
        assert_eq!(parse_line(""), Ok(SynthParams::new(500, 15_000)));
        assert_eq!(parse_line("80 2000"), Ok(SynthParams::new(80, 2_000)));
        let verbose = parse_line("80 --verbose").unwrap();
        assert!(verbose.verbose);
        assert_eq!((verbose.nodes, verbose.pods), (80, 15_000));
    }

    #[test]
    fn the_second_shape_is_the_one_of_issue_27() {
        let p = parse_line("5000 150000 --shape second").unwrap();
        assert_eq!(p, SynthParams::second_shape(5_000, 150_000));
        assert_eq!(
            (
                p.zones,
                p.namespaces,
                p.app_size,
                p.pdb_every,
                p.images_per_node
            ),
            (10, 50, Some(100), 5, Some(20))
        );
        assert_eq!(
            (p.mix.spread, p.mix.anti_affinity, p.mix.total()),
            (30, 10, 40)
        );
    }

    #[test]
    fn flags_override_the_shape_wherever_they_stand() {
        let line = "--zones 4 200 --namespaces=7 6000 --app-size 50 --spread-share 0.25 \
                    --anti-affinity-share 0 --prefer-affinity-share 0.33 --node-affinity-share 0.05 \
                    --gpu-share 0.01 --pdb-every 0 --images-per-node 3 --seed 9 --shape second";
        let p = parse_line(line).unwrap();
        let expected = SynthParams {
            zones: 4,
            namespaces: 7,
            seed: 9,
            app_size: Some(50),
            mix: PlacementMix {
                spread: 25,
                anti_affinity: 0,
                prefer_affinity: 33,
                node_affinity: 5,
                gpu: 1,
            },
            pdb_every: 0,
            images_per_node: Some(3),
            ..SynthParams::second_shape(200, 6_000)
        };
        assert_eq!(p, expected);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (line, error) in [
            ("lots", r#"NODES and PODS: "lots" is not a whole number"#),
            ("1 2 3", r#"unexpected argument "3""#),
            (
                "--shape third",
                r#"--shape: unknown shape "third" (bundled or second)"#,
            ),
            ("--zones", "--zones needs a value"),
            ("--zones 0", "--zones: must be at least 1"),
            ("--app-size -3", r#"--app-size: "-3" is not a whole number"#),
            (
                "--spread-share 1.5",
                r#"--spread-share: "1.5" is not a share from 0 to 1"#,
            ),
            (
                "--gpu-share NaN",
                r#"--gpu-share: "NaN" is not a share from 0 to 1"#,
            ),
            (
                "--spread-share 0.333",
                r#"--spread-share: "0.333" is not a whole percent (0.01 steps)"#,
            ),
            (
                "--spread-share 0.8",
                "the shares add up to 115 %, more than all Deployments",
            ),
            ("--colour blue", "unknown flag --colour"),
        ] {
            assert_eq!(parse_line(line), Err(error.to_string()), "{line}");
        }
    }
}
