//! Fields for the data-parallel views (paper 003, SPEC §3.3): one value per
//! time bin and element, with a layout (ring, grid or cube).
//!
//! From traces (element = location): the busy fraction per bin, computed
//! exactly from interval overlaps; messages or bytes sent per bin; a
//! counter's time-average per bin. From element access tensors
//! (`[interval, element, processor, kind]`): accesses of the chosen kinds
//! per interval and element, over all processors or one.

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{Time, Trace};

/// How the elements of a field are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum FieldLayout {
    /// Elements on a circle (Kiviat tube).
    Ring,
    /// W × H grid, row-major (displacement, scatter).
    Grid { width: usize, height: usize },
    /// X × Y × Z cube, x fastest (isosurfaces).
    Cube { x: usize, y: usize, z: usize },
}

impl FieldLayout {
    /// Checks that the layout holds `elements` elements.
    pub fn check(&self, elements: usize) -> Result<()> {
        let n = match *self {
            FieldLayout::Ring => elements,
            FieldLayout::Grid { width, height } => width * height,
            FieldLayout::Cube { x, y, z } => x * y * z,
        };
        if n != elements {
            return Err(Error::Invalid(format!(
                "the layout {self:?} holds {n} elements, the field has {elements}"
            )));
        }
        Ok(())
    }
}

/// What the bin edges of a field count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TimeAxis {
    /// Nanoseconds from the trace start.
    #[default]
    Nanoseconds,
    /// Intervals (time steps) of an access tensor.
    Intervals,
}

/// A field `F[t][e]`, row-major by time bin.
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    pub bins: usize,
    pub elements: usize,
    pub values: Vec<f64>,
    /// Bin edges in ns (`bins + 1`); for tensors, interval numbers.
    pub edges: Vec<u64>,
    pub layout: FieldLayout,
    pub quantity: String,
    pub unit: String,
    /// What the edges count.
    pub time: TimeAxis,
}

impl Field {
    pub fn at(&self, t: usize, e: usize) -> f64 {
        self.values[t * self.elements + e]
    }
}

/// Integer bin edges `t0 + floor(k (t1 − t0) / B)`.
pub fn bin_edges(t0: Time, t1: Time, bins: usize) -> Vec<Time> {
    let span = (t1 - t0) as u128;
    (0..=bins)
        .map(|k| t0 + (k as u128 * span / bins as u128) as Time)
        .collect()
}

/// Refuses a `bins × elements` field (built location-major, then
/// transposed: two copies of f64) larger than the memory limit.
pub fn guard_field(bins: usize, elements: usize) -> Result<()> {
    let cells = (bins as u64).saturating_mul(elements as u64);
    crate::memory::guard(crate::memory::bytes_of(cells, 16), || {
        format!("a field of {bins} bins × {elements} locations")
    })
}

/// Refuses zero bins or an empty window.
pub fn check_bins(t0: Time, t1: Time, bins: usize) -> Result<()> {
    if bins == 0 || t1 <= t0 {
        return Err(Error::Invalid(format!(
            "a field needs bins > 0 and a window t0 < t1 (got {bins} bins, [{t0}, {t1}))"
        )));
    }
    if bins as u64 > t1 - t0 {
        return Err(Error::Invalid(format!(
            "{bins} bins are more than the {} ns of the window",
            t1 - t0
        )));
    }
    Ok(())
}

/// Busy time of one location per bin (exact integer overlaps), added to
/// `out` (ns).
pub fn busy_per_bin(
    iv: crate::model::IntervalSlice<'_>,
    mask: &[bool],
    edges: &[Time],
    out: &mut [u64],
) {
    let bins = edges.len() - 1;
    let (t0, t1) = (edges[0], edges[bins]);
    let w = iv.window(t0, t1);
    // intervals are sorted and disjoint: the bin cursor only moves forward
    let mut k = 0usize;
    for i in 0..w.len() {
        if !mask.get(w.state[i] as usize).copied().unwrap_or(false) {
            continue;
        }
        let a = w.start[i].max(t0);
        let b = w.end[i].min(t1);
        if b <= a {
            continue;
        }
        while edges[k + 1] <= a {
            k += 1;
        }
        let mut s = a;
        let mut j = k;
        loop {
            let e = b.min(edges[j + 1]);
            out[j] += e - s;
            if e == b {
                break;
            }
            s = e;
            j += 1;
        }
    }
}

/// The busy fraction of every location per bin over `[t0, t1)`.
pub fn busy_fraction(
    trace: &Trace,
    mask: &[bool],
    t0: Time,
    t1: Time,
    bins: usize,
) -> Result<Field> {
    check_bins(t0, t1, bins)?;
    guard_field(bins, trace.num_locations())?;
    let edges = bin_edges(t0, t1, bins);
    let p = trace.num_locations();
    let out = busy_cells(trace, mask, &edges, BAND_CELLS);
    Ok(busy_field(out, edges, p))
}

/// The busy fraction of every location per bin of `edges`, bin-major
/// (`[t][e]`), summed a band of about `band_cells` cells (at least 64
/// locations) at a time: their busy time per bin (parallel,
/// location-major), then into each bin's row (the rows in parallel); the
/// band's room instead of a second whole field to transpose.
fn busy_cells(trace: &Trace, mask: &[bool], edges: &[Time], band_cells: usize) -> Vec<f64> {
    let p = trace.num_locations();
    let bins = edges.len().saturating_sub(1);
    let inv = inverse_widths(edges);
    let mut out = vec![0.0; bins * p];
    if p == 0 || bins == 0 {
        return out;
    }
    let band = (band_cells / bins).max(64).min(p);
    let mut by_loc = vec![0.0; band * bins];
    for l0 in (0..p).step_by(band) {
        let l1 = (l0 + band).min(p);
        let b = &mut by_loc[..(l1 - l0) * bins];
        // busy time summed in integers (exact whatever the span: an f64
        // sum rounds past 2^53 ns, about 104 days), as the stream and the
        // GPU sum it; one buffer per worker
        b.par_chunks_mut(bins).enumerate().for_each_init(
            || vec![0u64; bins],
            |sums, (i, v)| {
                sums.fill(0);
                busy_per_bin(trace.intervals.of((l0 + i) as u32), mask, edges, sums);
                for ((x, &n), s) in v.iter_mut().zip(sums.iter()).zip(&inv) {
                    *x = n as f64 * s;
                }
            },
        );
        let b = &*b;
        out.par_chunks_mut(p).enumerate().for_each(|(k, row)| {
            for (i, x) in row[l0..l1].iter_mut().enumerate() {
                *x = b[i * bins + k];
            }
        });
    }
    out
}

/// Cells of a band of [`busy_fraction`]: 4 MB of `f64`.
const BAND_CELLS: usize = 1 << 19;

/// `1 / width` of every bin: busy time × this is the busy fraction (the
/// GPU twin divides its exact sums by the same factors, so both paths give
/// identical fields).
pub fn inverse_widths(edges: &[Time]) -> Vec<f64> {
    edges
        .windows(2)
        .map(|e| 1.0 / (e[1] - e[0]) as f64)
        .collect()
}

/// The busy-fraction field of `values` (`[bin][location]`) over `edges`.
pub fn busy_field(values: Vec<f64>, edges: Vec<Time>, locations: usize) -> Field {
    Field {
        bins: edges.len().saturating_sub(1),
        elements: locations,
        values,
        edges,
        layout: FieldLayout::Ring,
        quantity: "busy fraction".into(),
        unit: "fraction".into(),
        time: TimeAxis::Nanoseconds,
    }
}

/// Messages (or bytes) sent by every location per bin.
pub fn messages(trace: &Trace, bytes: bool, t0: Time, t1: Time, bins: usize) -> Result<Field> {
    check_bins(t0, t1, bins)?;
    guard_field(bins, trace.num_locations())?;
    let edges = bin_edges(t0, t1, bins);
    let p = trace.num_locations();
    let mut values = vec![0.0; bins * p];
    let m = &trace.messages;
    for i in 0..m.len() {
        let t = m.send_time[i];
        if t < t0 || t >= t1 {
            continue;
        }
        let k = edges.partition_point(|&e| e <= t) - 1;
        values[k * p + m.sender[i] as usize] += if bytes { m.bytes[i] as f64 } else { 1.0 };
    }
    Ok(Field {
        bins,
        elements: p,
        values,
        edges,
        layout: FieldLayout::Ring,
        quantity: if bytes {
            "bytes sent".into()
        } else {
            "messages sent".into()
        },
        unit: if bytes {
            "bytes".into()
        } else {
            "messages".into()
        },
        time: TimeAxis::Nanoseconds,
    })
}

/// The time-average per bin of a counter held between its samples (before
/// the first sample a location's value is 0).
pub fn counter(trace: &Trace, counter: u32, t0: Time, t1: Time, bins: usize) -> Result<Field> {
    check_bins(t0, t1, bins)?;
    let def = trace
        .counters
        .defs
        .get(counter as usize)
        .ok_or_else(|| Error::Invalid(format!("no counter number {counter} in this trace")))?;
    guard_field(bins, trace.num_locations())?;
    let edges = bin_edges(t0, t1, bins);
    let p = trace.num_locations();
    let mut values = vec![0.0; bins * p];
    for l in 0..p as u32 {
        let mut samples: Vec<(Time, f64)> = trace
            .counters
            .range_of(l)
            .filter(|&i| trace.counters.counter[i] == counter)
            .map(|i| (trace.counters.time[i], trace.counters.value[i]))
            .collect();
        samples.push((Time::MAX, 0.0));
        let mut cur = 0.0;
        let mut j = 0;
        for k in 0..bins {
            let (b0, b1) = (edges[k], edges[k + 1]);
            let mut t = b0;
            let mut acc = 0.0;
            while samples[j].0 < b1 {
                let ts = samples[j].0.max(t);
                acc += cur * (ts - t) as f64;
                t = ts;
                cur = samples[j].1;
                j += 1;
            }
            acc += cur * (b1 - t) as f64;
            values[k * p + l as usize] = acc / (b1 - b0) as f64;
        }
    }
    Ok(Field {
        bins,
        elements: p,
        values,
        edges,
        layout: FieldLayout::Ring,
        quantity: def.name.clone(),
        unit: def.unit.clone(),
        time: TimeAxis::Nanoseconds,
    })
}

/// Kinds of access selected from a tensor (its last axis:
/// local read, remote read, local write, remote write).
pub fn access_kinds(name: &str) -> Result<[bool; 4]> {
    Ok(match name {
        "local-reads" => [true, false, false, false],
        "remote-reads" => [false, true, false, false],
        "local-writes" => [false, false, true, false],
        "remote-writes" => [false, false, false, true],
        "reads" => [true, true, false, false],
        "writes" => [false, false, true, true],
        "local" => [true, false, true, false],
        "remote" => [false, true, false, true],
        "all" => [true; 4],
        other => {
            return Err(Error::Invalid(format!(
                "unknown access kind '{other}' (local-reads, remote-reads, local-writes, remote-writes, reads, writes, local, remote, all)"
            )));
        }
    })
}

/// A field from the access counts of an element access tensor (read by
/// [`crate::readers::tensor`]): `values[t * elements + e]`, one row per
/// interval. `kinds` names the access kinds kept (for the title).
pub fn from_access_counts(
    intervals: usize,
    elements: usize,
    values: Vec<f64>,
    kinds: &str,
) -> Result<Field> {
    if values.len() != intervals.saturating_mul(elements) || intervals == 0 || elements == 0 {
        return Err(Error::Invalid(format!(
            "an access field of {intervals} intervals x {elements} elements needs that many values, found {}",
            values.len()
        )));
    }
    Ok(Field {
        bins: intervals,
        elements,
        values,
        edges: (0..=intervals as u64).collect(),
        layout: FieldLayout::Ring,
        quantity: if kinds == "all" {
            "accesses".into()
        } else {
            format!("{kinds} accesses")
        },
        unit: "accesses".into(),
        time: TimeAxis::Intervals,
    })
}

/// Leading bins where every element is zero (trimmed by the Kiviat tube).
pub fn leading_empty_bins(f: &Field) -> usize {
    (0..f.bins)
        .take_while(|&t| (0..f.elements).all(|e| f.at(t, e) == 0.0))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy time is summed in integers: past 2^53 ns in one bin an f64
    /// sum drops nanoseconds (found by the fuzz harness: the stream's field
    /// differed from memory's by an ulp on a 136-year span).
    #[test]
    fn busy_time_past_2_pow_53_ns_is_summed_exactly() {
        use crate::model::{
            BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder,
        };
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let l = b.locations.add("p0", LocationKind::Thread, None, 0);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let big: u64 = 1 << 53;
        // lengths 2^53, 1, 1: in f64, 2^53 + 1 rounds back to 2^53 twice
        b.interval(l, 0, big, run);
        b.interval(l, big, big + 1, run);
        b.interval(l, big + 2, big + 3, run);
        let t = b.finish(BuildOptions::default()).unwrap();
        let mask = t.states.select(&["busy".to_string()]).unwrap();
        let span = big + 4;
        let f = busy_fraction(&t, &mask, 0, span, 1).unwrap();
        assert_eq!(f.values[0], (big + 2) as f64 / span as f64);
        assert_ne!(f.values[0], big as f64 / span as f64);
    }

    #[test]
    fn bands_of_locations_give_the_field_of_one_band() {
        use crate::model::{
            BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder,
        };
        // 150 locations: bands of 64, 64 and 22, against one band and
        // against each location's own sums
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let wait = b.states.add("wait", StateClass::Idle, None, 0);
        for i in 0..150u64 {
            let l = b
                .locations
                .add(format!("p{i}"), LocationKind::Thread, None, 0);
            let mut t = i % 7;
            for k in 0..(3 + i % 5) {
                let len = 5 + (i * 13 + k * 7) % 40;
                b.interval(l, t, t + len, if k % 2 == 0 { run } else { wait });
                t += len + (k % 3);
            }
        }
        let t = b.finish(BuildOptions::default()).unwrap();
        let mask = t.states.select(&["busy".to_string()]).unwrap();
        let edges = bin_edges(0, 300, 7);
        let banded = busy_cells(&t, &mask, &edges, 1);
        let whole = busy_cells(&t, &mask, &edges, usize::MAX);
        assert_eq!(banded, whole);
        let p = t.num_locations();
        let inv = inverse_widths(&edges);
        for l in 0..p {
            let mut sums = vec![0u64; 7];
            busy_per_bin(t.intervals.of(l as u32), &mask, &edges, &mut sums);
            for k in 0..7 {
                assert_eq!(banded[k * p + l], sums[k] as f64 * inv[k], "{l} {k}");
            }
        }
        assert!(banded.iter().any(|&v| v > 0.0));
    }

    #[test]
    fn edges_are_exact() {
        assert_eq!(bin_edges(0, 10, 3), vec![0, 3, 6, 10]);
        assert_eq!(bin_edges(5, 9, 4), vec![5, 6, 7, 8, 9]);
    }
}
