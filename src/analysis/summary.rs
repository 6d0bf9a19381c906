//! The trace description: what a trace holds and how its time is spent.

use ndarray::Array2;
use rayon::prelude::*;
use serde::Serialize;

use crate::diagnostics::Warning;
use crate::model::{GroupKind, StateClass, Time, Trace};

/// Time spent in one state over all locations.
#[derive(Debug, Clone, Serialize)]
pub struct StateTime {
    pub name: String,
    pub class: StateClass,
    pub time_ns: u128,
    /// Share of the total location-time (span × locations), in percent.
    pub percent: f64,
}

/// Minimum, mean and maximum of the per-location busy fraction.
#[derive(Debug, Clone, Serialize)]
pub struct BusySummary {
    pub min: f64,
    pub min_location: String,
    pub mean: f64,
    pub max: f64,
    pub max_location: String,
}

/// The trace description.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub source: String,
    pub format: String,
    pub time_unit: String,
    pub origin_ns: i64,
    pub span_ns: Time,
    pub locations: usize,
    pub nodes: usize,
    pub processes: usize,
    pub state_intervals: usize,
    pub states: usize,
    pub events: usize,
    pub event_types: usize,
    pub messages: usize,
    pub bytes_sent: u64,
    pub counters: usize,
    pub counter_samples: usize,
    pub collectives: usize,
    pub communicators: usize,
    pub time_per_state: Vec<StateTime>,
    pub time_per_class: Vec<StateTime>,
    pub busy_fraction: Option<BusySummary>,
    pub ignored: Vec<(String, u64)>,
    pub warnings: Vec<Warning>,
}

/// Per-location time in each state (`[location][state id]`, a row a
/// location), in parallel over locations. One table: a list of its own
/// for each location took 56 bytes of the heap a location beside its
/// times (3.5 MiB at 65,536 locations of 3 states, above the peak of the
/// read before it).
pub fn state_time_per_location(trace: &Trace) -> Array2<u64> {
    let ns = trace.states.len();
    let nloc = trace.num_locations();
    let mut time = vec![0u64; nloc.saturating_mul(ns)];
    if ns > 0 {
        time.par_chunks_mut(ns)
            .with_min_len(256)
            .enumerate()
            .for_each(|(l, acc)| {
                let iv = trace.intervals.of(l as u32);
                for i in 0..iv.len() {
                    acc[iv.state[i] as usize] += iv.end[i] - iv.start[i];
                }
            });
    }
    Array2::from_shape_vec((nloc, ns), time).unwrap_or_else(|_| Array2::zeros((0, ns)))
}

/// The record counts of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub state_intervals: usize,
    pub events: usize,
    pub messages: usize,
    pub bytes_sent: u64,
    pub counter_samples: usize,
    pub collectives: usize,
    pub communicators: usize,
}

impl Totals {
    /// The counts of a trace in memory.
    pub fn of(trace: &Trace) -> Totals {
        Totals {
            state_intervals: trace.intervals.len(),
            events: trace.events.len(),
            messages: trace.messages.len(),
            bytes_sent: trace.messages.total_bytes(),
            counter_samples: trace.counters.len(),
            collectives: trace.collectives.len(),
            communicators: trace.communicators.len(),
        }
    }
}

/// Describes `trace`.
pub fn summarize(trace: &Trace) -> Summary {
    summarize_from(trace, &state_time_per_location(trace), Totals::of(trace))
}

/// Describes `trace` from its time per location and state (`[location][state
/// id]`) and its record counts: a streamed trace holds neither its records
/// nor its intervals, only these reductions (`--stream`).
pub fn summarize_from(trace: &Trace, per_loc: &Array2<u64>, totals: Totals) -> Summary {
    let ns = trace.states.len();
    let nloc = trace.num_locations();
    let span = trace.meta.span;
    let mut state_totals = vec![0u128; ns];
    for l in per_loc.rows() {
        for (t, v) in state_totals.iter_mut().zip(l) {
            *t += *v as u128;
        }
    }
    let denom = span as f64 * nloc as f64;
    let pct = |t: u128| {
        if denom > 0.0 {
            100.0 * t as f64 / denom
        } else {
            0.0
        }
    };
    let time_per_state: Vec<StateTime> = trace
        .states
        .iter()
        .map(|(id, s)| StateTime {
            name: s.name.clone(),
            class: s.class,
            time_ns: state_totals[id as usize],
            percent: pct(state_totals[id as usize]),
        })
        .collect();
    let time_per_class = [StateClass::Busy, StateClass::Overhead, StateClass::Idle]
        .into_iter()
        .map(|c| {
            let t: u128 = time_per_state
                .iter()
                .filter(|s| s.class == c)
                .map(|s| s.time_ns)
                .sum();
            StateTime {
                name: c.name().to_string(),
                class: c,
                time_ns: t,
                percent: pct(t),
            }
        })
        .collect();

    let busy_mask = trace.states.mask(StateClass::Busy);
    let busy_fraction = (nloc > 0 && span > 0 && per_loc.nrows() == nloc).then(|| {
        let fr: Vec<f64> = per_loc
            .rows()
            .into_iter()
            .map(|l| {
                let b: u64 = l
                    .iter()
                    .zip(&busy_mask)
                    .filter(|(_, m)| **m)
                    .map(|(t, _)| *t)
                    .sum();
                b as f64 / span as f64
            })
            .collect();
        let (mut imin, mut imax) = (0usize, 0usize);
        for (i, &f) in fr.iter().enumerate() {
            if f < fr[imin] {
                imin = i;
            }
            if f > fr[imax] {
                imax = i;
            }
        }
        BusySummary {
            min: fr[imin],
            min_location: trace.locations.path(imin as u32),
            mean: fr.iter().sum::<f64>() / fr.len() as f64,
            max: fr[imax],
            max_location: trace.locations.path(imax as u32),
        }
    });

    let counts = trace.locations.group_counts();
    let count = |k: GroupKind| counts.iter().find(|(g, _)| *g == k).map_or(0, |c| c.1);
    Summary {
        source: trace.meta.source.display().to_string(),
        format: trace.meta.format.name().to_string(),
        time_unit: trace.meta.time_unit.name.clone(),
        origin_ns: trace.meta.origin_ns,
        span_ns: span,
        locations: nloc,
        nodes: count(GroupKind::Node),
        processes: count(GroupKind::Process),
        state_intervals: totals.state_intervals,
        states: trace.states.len(),
        events: totals.events,
        event_types: trace.event_types.len(),
        messages: totals.messages,
        bytes_sent: totals.bytes_sent,
        counters: trace.counters.defs.len(),
        counter_samples: totals.counter_samples,
        collectives: totals.collectives,
        communicators: totals.communicators,
        time_per_state,
        time_per_class,
        busy_fraction,
        ignored: trace.meta.ignored.clone(),
        warnings: trace.meta.diagnostics.warnings.clone(),
    }
}

/// Formats nanoseconds with a readable unit.
pub fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.6} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.3} us", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

impl Summary {
    /// The plain-text description printed by `tapestry info`.
    pub fn to_text(&self, trace: &Trace, max_locations: usize) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "trace      {}", self.source);
        let _ = writeln!(
            s,
            "format     {} (time unit {})",
            self.format, self.time_unit
        );
        let _ = writeln!(
            s,
            "span       {} ({} ns){}",
            format_ns(self.span_ns as f64),
            self.span_ns,
            if self.origin_ns != 0 {
                format!(", origin {} ns", self.origin_ns)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            s,
            "locations  {} ({} node(s), {} process(es))",
            self.locations, self.nodes, self.processes
        );
        let shown = self.locations.min(max_locations);
        for l in 0..shown {
            let loc = &trace.locations.locations[l];
            let _ = writeln!(
                s,
                "  [{l}] {} ({:?})",
                trace.locations.path(l as u32),
                loc.kind
            );
        }
        if shown < self.locations {
            let _ = writeln!(
                s,
                "  ... {} more (use --locations N to list more)",
                self.locations - shown
            );
        }
        let _ = writeln!(s, "records");
        let _ = writeln!(
            s,
            "  state intervals  {} ({} states)",
            self.state_intervals, self.states
        );
        let _ = writeln!(
            s,
            "  events           {} ({} types)",
            self.events, self.event_types
        );
        let _ = writeln!(
            s,
            "  messages         {} ({} bytes sent)",
            self.messages, self.bytes_sent
        );
        let _ = writeln!(
            s,
            "  counter samples  {} ({} counters)",
            self.counter_samples, self.counters
        );
        let _ = writeln!(
            s,
            "  collectives      {} ({} communicators)",
            self.collectives, self.communicators
        );
        let _ = writeln!(
            s,
            "time per state (over all locations; % of span x locations)"
        );
        let w = self
            .time_per_state
            .iter()
            .map(|t| t.name.chars().count())
            .max()
            .unwrap_or(5)
            .clamp(5, 40);
        let idle_states = self
            .time_per_state
            .iter()
            .filter(|t| t.time_ns == 0)
            .count();
        for t in self.time_per_state.iter().filter(|t| t.time_ns > 0) {
            let name: String = t.name.chars().take(40).collect();
            let _ = writeln!(
                s,
                "  {name:<w$}  {:<8}  {:>16}  {:>7.3} %",
                t.class.name(),
                format_ns(t.time_ns as f64),
                t.percent
            );
        }
        if idle_states > 0 {
            let _ = writeln!(
                s,
                "  ({idle_states} state(s) without time not shown; see --json)"
            );
        }
        let _ = writeln!(s, "time per class");
        for t in &self.time_per_class {
            let _ = writeln!(
                s,
                "  {:<8}  {:>16}  {:>7.3} %",
                t.name,
                format_ns(t.time_ns as f64),
                t.percent
            );
        }
        if let Some(b) = &self.busy_fraction {
            let _ = writeln!(s, "busy fraction per location");
            let _ = writeln!(s, "  min   {:>7.3} %  ({})", 100.0 * b.min, b.min_location);
            let _ = writeln!(s, "  mean  {:>7.3} %", 100.0 * b.mean);
            let _ = writeln!(s, "  max   {:>7.3} %  ({})", 100.0 * b.max, b.max_location);
        }
        if !self.ignored.is_empty() {
            let _ = writeln!(s, "ignored (not part of the model)");
            for (k, n) in &self.ignored {
                let _ = writeln!(s, "  {k}: {n}");
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(
                s,
                "repairs ({} record(s) affected)",
                self.warnings.iter().map(|w| w.count).sum::<u64>()
            );
            for w in &self.warnings {
                let _ = writeln!(s, "  {w}");
            }
        }
        s
    }
}

/// Totals of one metric of a profile.
#[derive(Debug, Clone, Serialize)]
pub struct MetricTotal {
    pub name: String,
    pub unit: String,
    /// Sum over all rows (call paths excluded) and columns.
    pub total: f64,
    /// Per-column totals: smallest, mean, largest.
    pub column_min: f64,
    pub column_mean: f64,
    pub column_max: f64,
}

/// One of the hottest rows of a profile.
#[derive(Debug, Clone, Serialize)]
pub struct HotRow {
    pub row: String,
    /// The procedure containing the line (line profiles).
    pub procedure: Option<String>,
    pub value: f64,
    /// Share of the metric's total, in percent.
    pub percent: f64,
}

/// The description of a profile printed by `tapestry info`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileSummary {
    pub source: String,
    pub format: String,
    pub row_kind: crate::model::RowKind,
    pub rows: usize,
    pub callpaths: usize,
    pub columns: usize,
    pub procedures: usize,
    pub source_file: Option<String>,
    pub metrics: Vec<MetricTotal>,
    /// The metric the hottest rows are ranked by.
    pub ranked_by: String,
    pub hottest: Vec<HotRow>,
}

/// Describes a profile, with its `top` hottest rows (call paths excluded).
pub fn summarize_profile(p: &crate::model::ProfileMatrix, top: usize) -> ProfileSummary {
    let metrics = (0..p.metrics.len())
        .map(|m| {
            let cols = p.column_totals(m);
            let total: f64 = cols.iter().sum();
            let n = cols.len().max(1) as f64;
            MetricTotal {
                name: p.metrics[m].name.clone(),
                unit: p.metrics[m].unit.clone(),
                total,
                column_min: if cols.is_empty() {
                    0.0
                } else {
                    cols.iter().copied().fold(f64::INFINITY, f64::min)
                },
                column_mean: total / n,
                column_max: cols.iter().copied().fold(0.0, f64::max),
            }
        })
        .collect::<Vec<_>>();
    let pm = p.primary_metric();
    let totals = p.row_totals(pm);
    let grand = metrics.get(pm).map_or(0.0, |m| m.total);
    let mut order: Vec<usize> = (0..p.rows.len())
        .filter(|&r| !p.callpath[r] && totals[r] > 0.0)
        .collect();
    order.sort_by(|&a, &b| totals[b].total_cmp(&totals[a]).then(a.cmp(&b)));
    let hottest = order
        .into_iter()
        .take(top)
        .map(|r| HotRow {
            row: p.rows[r].clone(),
            procedure: p
                .procedures
                .iter()
                .find(|pr| {
                    (pr.first_line..=pr.last_line).contains(&p.row_ids[r])
                        && p.row_kind == crate::model::RowKind::Line
                })
                .map(|pr| pr.name.clone()),
            value: totals[r],
            percent: if grand > 0.0 {
                100.0 * totals[r] / grand
            } else {
                0.0
            },
        })
        .collect();
    ProfileSummary {
        source: p.source.display().to_string(),
        format: p.format.clone(),
        row_kind: p.row_kind,
        rows: p.rows.len(),
        callpaths: p.callpath.iter().filter(|c| **c).count(),
        columns: p.columns.len(),
        procedures: p.procedures.len(),
        source_file: p.source_file.clone(),
        metrics,
        ranked_by: p.metrics.get(pm).map_or(String::new(), |m| m.name.clone()),
        hottest,
    }
}

impl ProfileSummary {
    /// The plain-text description printed by `tapestry info`.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "profile    {}", self.source);
        let _ = writeln!(s, "format     {}", self.format);
        let (rows, cols) = match self.row_kind {
            crate::model::RowKind::Function => ("functions", "threads"),
            crate::model::RowKind::Line => ("lines", "processors"),
        };
        let _ = writeln!(
            s,
            "dimensions {} {rows}{} x {} {cols}",
            self.rows,
            if self.callpaths > 0 {
                format!(" ({} of them call paths)", self.callpaths)
            } else {
                String::new()
            },
            self.columns
        );
        if let Some(f) = &self.source_file {
            let _ = writeln!(s, "source     {f}");
        }
        if self.procedures > 0 {
            let _ = writeln!(s, "procedures {}", self.procedures);
        }
        let _ = writeln!(
            s,
            "metrics (totals over {rows}, call paths excluded; per-{} min / mean / max)",
            &cols[..cols.len() - 1]
        );
        for m in &self.metrics {
            let _ = writeln!(
                s,
                "  {:<28} {:>16.6} {:<6} {:>14.4} / {:.4} / {:.4}",
                m.name, m.total, m.unit, m.column_min, m.column_mean, m.column_max
            );
        }
        let _ = writeln!(s, "hottest {rows} by {}", self.ranked_by);
        for h in &self.hottest {
            let name: String = h.row.chars().take(60).collect();
            let proc_ = h
                .procedure
                .as_ref()
                .map(|p| format!(" [{p}]"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:>7.3} %  {:>16.6}  {name}{proc_}",
                h.percent, h.value
            );
        }
        s
    }
}
