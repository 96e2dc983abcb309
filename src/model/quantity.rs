//! Kubernetes resource quantities ("100m", "1Gi", "2e3") turned into the
//! integers the scheduler compares: CPU in millicores, everything else in
//! whole units, both rounded up as `Quantity.MilliValue()` / `Value()` do.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// Resource name → amount in scheduler units (see module doc).
pub type ResourceList = BTreeMap<String, i64>;

/// Parse one quantity into scheduler units for `resource`.
pub fn parse_for(resource: &str, text: &str) -> Result<i64, String> {
    let milli = resource == CPU;
    parse_scaled(text, if milli { 3 } else { 0 })
        .ok_or_else(|| format!("invalid quantity {text:?} for resource {resource:?}"))
}

/// Value × 10^extra_exp, rounded up, saturating at i64 bounds.
fn parse_scaled(text: &str, extra_exp: i32) -> Option<i64> {
    let s = text.trim();
    if s.is_empty() {
        return None;
    }
    let (negative, s) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(num_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    // (base, exponent): value = digits × base^exponent
    let (base, exp): (i128, i32) = match suffix {
        "" => (10, 0),
        "n" => (10, -9),
        "u" => (10, -6),
        "m" => (10, -3),
        "k" => (10, 3),
        "M" => (10, 6),
        "G" => (10, 9),
        "T" => (10, 12),
        "P" => (10, 15),
        "E" => (10, 18),
        "Ki" => (2, 10),
        "Mi" => (2, 20),
        "Gi" => (2, 30),
        "Ti" => (2, 40),
        "Pi" => (2, 50),
        "Ei" => (2, 60),
        other => {
            let rest = other.strip_prefix(['e', 'E'])?;
            (10, rest.parse::<i32>().ok().filter(|e| e.abs() <= 40)?)
        }
    };
    if int_part.len() + frac_part.len() > 30 {
        return None;
    }
    let digits: i128 = format!("{int_part}{frac_part}").parse().ok()?;
    // value = digits × 10^(extra - frac_len) × base^exp
    let mut num = digits;
    let mut den: i128 = 1;
    let mut scale10 = extra_exp - frac_part.len() as i32;
    if base == 10 {
        scale10 += exp;
    } else {
        num = num.checked_mul(1i128 << exp)?;
    }
    while scale10 > 0 {
        num = num.checked_mul(10)?;
        scale10 -= 1;
    }
    while scale10 < 0 {
        den = den.checked_mul(10)?;
        scale10 += 1;
    }
    let mut value = num / den;
    if num % den != 0 {
        value += 1; // round up, as the apiserver's Value()/MilliValue() do
    }
    let value = if negative { -value } else { value };
    Some(value.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Deserialize `{"cpu": "100m", "memory": "1Gi"}` (values may also be bare
/// JSON numbers) into scheduler units.
pub fn resource_list<'de, D: Deserializer<'de>>(d: D) -> Result<ResourceList, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Int(i64),
        Float(f64),
    }
    let raw: Option<BTreeMap<String, Raw>> = Option::deserialize(d)?;
    let mut out = ResourceList::new();
    for (name, value) in raw.unwrap_or_default() {
        let text = match value {
            Raw::Text(t) => t,
            Raw::Int(i) => i.to_string(),
            Raw::Float(f) => f.to_string(),
        };
        let amount = parse_for(&name, &text).map_err(serde::de::Error::custom)?;
        out.insert(name, amount);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_in_millicores_rounded_up() {
        assert_eq!(parse_for(CPU, "100m"), Ok(100));
        assert_eq!(parse_for(CPU, "1"), Ok(1000));
        assert_eq!(parse_for(CPU, "0.5"), Ok(500));
        assert_eq!(parse_for(CPU, "1.0001"), Ok(1001));
        assert_eq!(parse_for(CPU, "250000n"), Ok(1));
    }

    #[test]
    fn memory_is_in_bytes_with_binary_and_decimal_suffixes() {
        assert_eq!(parse_for(MEMORY, "1Gi"), Ok(1 << 30));
        assert_eq!(parse_for(MEMORY, "1G"), Ok(1_000_000_000));
        assert_eq!(parse_for(MEMORY, "128974848"), Ok(128_974_848));
        assert_eq!(parse_for(MEMORY, "129e6"), Ok(129_000_000));
        assert_eq!(parse_for(MEMORY, "123Mi"), Ok(123 << 20));
        assert_eq!(parse_for(MEMORY, "1.5Ki"), Ok(1536));
        assert_eq!(parse_for(MEMORY, "500m"), Ok(1));
    }

    #[test]
    fn garbage_is_refused() {
        for bad in ["", "abc", "1Qi", "1..2", "--1", "1e999", "."] {
            assert!(parse_for(MEMORY, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resource_list_accepts_numbers_and_strings() {
        let list: ResourceList = resource_list(&mut serde_json::Deserializer::from_str(
            r#"{"cpu":"2","memory":1024,"pods":"110","nvidia.com/gpu":"1"}"#,
        ))
        .unwrap();
        assert_eq!(list[CPU], 2000);
        assert_eq!(list[MEMORY], 1024);
        assert_eq!(list[PODS], 110);
        assert_eq!(list["nvidia.com/gpu"], 1);
    }
}
