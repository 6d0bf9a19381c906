//! Axes and numbers for people: ticks at nice numbers (1-2-5 steps) and
//! values written with SI prefixes and as many significant digits as the
//! tick step needs ("3.02 MB", "250 µs", counts as integers).

use super::{Anchor, Label, LabelAlign, Segment};

/// What a number measures, which decides how it is written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Unit {
    /// Nanoseconds, written as ns, µs, ms or s.
    Nanoseconds,
    /// Bytes, written with decimal prefixes (kB, MB, GB).
    Bytes,
    /// A count of things (messages, accesses, calls): integers, k/M/G
    /// beyond 10,000. The noun names the things.
    Count(String),
    /// A fraction 0..1 (busy fraction), written as a plain number.
    Fraction,
    /// A plain number with a unit symbol (counters), SI prefixes applied.
    Other(String),
}

impl Unit {
    /// The unit of a field or counter, from its unit string.
    pub fn from_name(unit: &str) -> Unit {
        match unit.trim() {
            "ns" => Unit::Nanoseconds,
            "bytes" | "B" | "byte" => Unit::Bytes,
            "fraction" | "" => Unit::Fraction,
            "percent" | "%" => Unit::Other("%".into()),
            // (a counter without a unit of its own: "40k" on its ticks,
            // not "40 kcounter value")
            u @ ("messages" | "accesses" | "calls" | "events" | "count" | "samples" | "ticks"
            | "visits" | "counter value") => Unit::Count(u.to_string()),
            other => Unit::Other(other.to_string()),
        }
    }

    /// The text in brackets after a quantity's name, if the name does not
    /// say it already ("bytes sent [bytes]" is just "bytes sent").
    pub fn bracket(&self, name: &str) -> String {
        let lower = name.to_lowercase();
        let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
        match self {
            Unit::Nanoseconds | Unit::Fraction => String::new(),
            Unit::Bytes if lower.contains("byte") => String::new(),
            Unit::Bytes => " [B]".into(),
            Unit::Count(noun) if lower.contains(&noun.to_lowercase()) => String::new(),
            Unit::Count(noun) => format!(" [{noun}]"),
            Unit::Other(sym) if sym.is_empty() || words.contains(&sym.to_lowercase().as_str()) => {
                String::new()
            }
            Unit::Other(sym) => format!(" [{sym}]"),
        }
    }
}

/// Ticks at nice numbers covering `[lo, hi]`: about `max_ticks` or fewer,
/// with steps 1, 2 or 5 × 10^k. Returns the ticks inside the range and the
/// step.
pub fn nice_ticks(lo: f64, hi: f64, max_ticks: usize) -> (Vec<f64>, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (Vec::new(), 1.0);
    }
    if hi <= lo {
        return (vec![lo], 0.0);
    }
    let span = hi - lo;
    let rough = span / max_ticks.max(1) as f64;
    let mag = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= max_ticks.max(1) as f64)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil();
    let mut ticks = Vec::new();
    let mut k = first;
    // a relative epsilon so that hi itself is kept despite rounding
    while k * step <= hi + step * 1e-9 && ticks.len() <= 1000 {
        let v = k * step;
        ticks.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        k += 1.0;
    }
    (ticks, step)
}

/// Integer ticks (for processor numbers, bins): steps of 1, 2, 5 × 10^k,
/// never fractional.
pub fn integer_ticks(lo: u64, hi: u64, max_ticks: usize) -> Vec<u64> {
    let (t, step) = nice_ticks(lo as f64, hi as f64, max_ticks);
    if step < 1.0 {
        return (lo..=hi).collect();
    }
    t.into_iter().map(|v| v.round() as u64).collect()
}

const PREFIXES: [(f64, &str); 7] = [
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
];

/// Decimals needed to tell ticks `step` apart once scaled by `scale`.
fn decimals(step: f64, scale: f64) -> usize {
    if step <= 0.0 || !step.is_finite() {
        return 2;
    }
    let s = step / scale;
    let base = (-(s.log10().floor())).clamp(0.0, 6.0) as usize;
    // 0.25 needs two decimals, not one; steps that are not nice get one more at most
    let exact = |d: usize| {
        let k = s * 10f64.powi(d as i32);
        (k.round() - k).abs() <= 1e-6
    };
    if exact(base) { base } else { (base + 1).min(6) }
}

/// A time in ns with the prefix that suits `magnitude` (the largest
/// value shown together), with enough decimals for `step`.
pub fn format_time(ns: f64, magnitude: f64, step: f64) -> String {
    let m = magnitude.abs();
    let (scale, unit) = if m >= 1e9 {
        (1e9, "s")
    } else if m >= 1e6 {
        (1e6, "ms")
    } else if m >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    if ns == 0.0 {
        return format!("0 {unit}");
    }
    let step = if step > 0.0 {
        step
    } else {
        significant_step(ns)
    };
    format!("{:.*} {unit}", decimals(step, scale), ns / scale)
}

/// A step that shows three significant digits of `v` (for lone values).
fn significant_step(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return 1.0;
    }
    10f64.powf(v.abs().log10().floor() - 2.0)
}

/// Formats `v` in `unit`; `magnitude` is the largest value shown beside it
/// (for a common prefix), `step` the tick step (0 for a lone value).
pub fn format_value(v: f64, unit: &Unit, magnitude: f64, step: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let s = format_finite(v, unit, magnitude, step);
    // a value that rounds to zero is written without a sign ("-0.00")
    match s.strip_prefix('-') {
        Some(rest) if !rest.chars().any(|c| c.is_ascii_digit() && c != '0') => rest.to_string(),
        _ => s,
    }
}

fn format_finite(v: f64, unit: &Unit, magnitude: f64, step: f64) -> String {
    match unit {
        Unit::Nanoseconds => format_time(v, magnitude, step),
        Unit::Fraction => {
            let step = if step > 0.0 {
                step
            } else {
                significant_step(v).min(0.001)
            };
            format!("{:.*}", decimals(step, 1.0), v)
        }
        Unit::Bytes => prefixed(v, magnitude, step, "B", true),
        Unit::Count(_) => {
            // (zero without a prefix: "0", not "0k")
            if v == 0.0 || magnitude.abs() < 1e4 && (step >= 1.0 || step == 0.0) && v.fract() == 0.0
            {
                format!("{}", v as i64)
            } else {
                prefixed(v, magnitude, step, "", false)
            }
        }
        Unit::Other(sym) => prefixed(v, magnitude, step, sym, false),
    }
}

fn prefixed(v: f64, magnitude: f64, step: f64, sym: &str, space_always: bool) -> String {
    let m = magnitude.abs().max(v.abs());
    let (scale, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|(s, _)| m >= *s)
        .unwrap_or((1.0, ""));
    let step = if step > 0.0 {
        step
    } else {
        significant_step(v)
    };
    let num = format!("{:.*}", decimals(step, scale), v / scale);
    let unit = format!("{prefix}{sym}");
    if unit.is_empty() {
        num
    } else if space_always || !sym.is_empty() {
        format!("{num} {unit}")
    } else {
        format!("{num}{unit}")
    }
}

/// Ink of axes on light and dark backgrounds.
pub fn ink(dark: bool) -> [f32; 4] {
    if dark {
        [0.85, 0.85, 0.88, 1.0]
    } else {
        [0.15, 0.15, 0.15, 1.0]
    }
}

/// A horizontal time axis under a 2D chart: the axis line from `x0` to
/// `x1` at height `y`, ticks at nice times of `[t0, t1]` (ns) pointing
/// down by `tick`, labels centred under them, and the axis title.
#[allow(clippy::too_many_arguments)]
pub fn time_axis_2d(
    lines: &mut Vec<Segment>,
    labels: &mut Vec<Label>,
    (x0, x1, y): (f32, f32, f32),
    (t0, t1): (f64, f64),
    tick: f32,
    max_ticks: usize,
    title: &str,
    color: [f32; 4],
) {
    lines.push(Segment {
        a: [x0, y, 0.3],
        b: [x1, y, 0.3],
        color,
    });
    let (ticks, step) = nice_ticks(t0, t1, max_ticks);
    let mag = t0.abs().max(t1.abs());
    for v in ticks {
        let x = x0 + ((v - t0) / (t1 - t0)) as f32 * (x1 - x0);
        lines.push(Segment {
            a: [x, y, 0.3],
            b: [x, y - tick, 0.3],
            color,
        });
        labels.push(Label {
            text: format_time(v, mag, step),
            anchor: Anchor::World([x, y - tick, 0.0]),
            size: 12.0,
            color,
            align: LabelAlign::CenterTop,
            priority: 1,
        });
    }
    labels.push(Label {
        text: title.into(),
        anchor: Anchor::World([(x0 + x1) / 2.0, y - tick, 0.0]),
        size: 13.0,
        color,
        align: LabelAlign::AxisTitleBelow,
        priority: 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        let (t, s) = nice_ticks(0.0, 1.0, 5);
        assert_eq!(s, 0.2);
        assert_eq!(t.len(), 6);
        let (t, s) = nice_ticks(3.0, 97.0, 10);
        assert_eq!(s, 10.0);
        assert_eq!(t.first(), Some(&10.0));
        assert_eq!(t.last(), Some(&90.0));
        let (t, s) = nice_ticks(0.0, 7_300_000.0, 6);
        assert_eq!(s, 2_000_000.0);
        assert_eq!(t, vec![0.0, 2e6, 4e6, 6e6]);
        assert_eq!(integer_ticks(0, 3, 10), vec![0, 1, 2, 3]);
        assert_eq!(integer_ticks(0, 1023, 5), vec![0, 500, 1000]);
        assert_eq!(integer_ticks(0, 1023, 6), vec![0, 200, 400, 600, 800, 1000]);
        // a constant range keeps its one value
        assert_eq!(nice_ticks(2.0, 2.0, 5).0, vec![2.0]);
    }

    #[test]
    fn values_are_written_for_people() {
        assert_eq!(format_time(2e6, 8e6, 2e6), "2 ms");
        assert_eq!(format_time(2.5e5, 1e6, 5e4), "0.25 ms");
        assert_eq!(format_time(1500.0, 1500.0, 500.0), "1.5 µs");
        assert_eq!(format_time(0.0, 3e9, 1e9), "0 s");
        assert_eq!(format_time(0.0, 3e9, 0.0), "0 s");
        assert_eq!(format_time(39e6, 39e6, 0.0), "39.0 ms");
        assert_eq!(format_value(3_024_112.0, &Unit::Bytes, 0.0, 0.0), "3.02 MB");
        assert_eq!(
            format_value(40.0, &Unit::Count("accesses".into()), 80.0, 20.0),
            "40"
        );
        assert_eq!(
            format_value(250_000.0, &Unit::Count("messages".into()), 1e6, 2.5e5),
            "0.25M"
        );
        assert_eq!(format_value(0.25, &Unit::Fraction, 1.0, 0.25), "0.25");
        assert_eq!(format_value(0.5, &Unit::Fraction, 1.0, 0.2), "0.5");
        assert_eq!(Unit::Count("accesses".into()).bracket("accesses"), "");
        assert_eq!(Unit::Bytes.bracket("bytes sent"), "");
        assert_eq!(Unit::Other("W".into()).bracket("power"), " [W]");
        // a counter without a unit: its ticks carry the prefix only
        let counter = Unit::from_name("counter value");
        assert_eq!(format_value(40_000.0, &counter, 40_000.0, 20_000.0), "40k");
        assert_eq!(format_value(0.0, &counter, 40_000.0, 20_000.0), "0");
        assert_eq!(counter.bracket("w"), " [counter value]");
    }
}
