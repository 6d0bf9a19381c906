//! The metric matrix M, the state vector, the spatial domain and the
//! event-domain and temporal performance signals (paper 002 chapters 4–5,
//! SPEC §3.2).
//!
//! M has one row `(time, location, value)` for every event that sets the
//! chosen metric, in time order. The state vector `v(n)` holds the value of
//! every location after all rows at times `≤ n`; the spatial domain `S(n0)`
//! is `v(n0)`. The event-domain signal `x` has one sample per distinct row
//! time (or per row), `x = (1/P) Σ v_k` (in percent for utilization
//! metrics); the temporal signal `w` holds `x` between events and samples it
//! with a period Δ, either at the sample instants (`hold`, the thesis's
//! definition for Δ = one tick) or as the exact mean over each period
//! (`mean`).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{Time, Trace};

/// The metric of the metric matrix.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// 1 while the location is in one of the selected states, else 0.
    Busy,
    /// (time in the selected states up to n) / n.
    BusyFraction,
    /// Messages sent so far.
    MessageCount,
    /// Bytes sent so far.
    MessageBytes,
    /// The value of a counter (index into the counter definitions).
    Counter(u32),
}

impl Metric {
    /// `busy`, `busy-fraction`, `messages`, `bytes` or `counter:NAME`.
    pub fn parse(s: &str, trace: &Trace) -> Result<Metric> {
        Ok(match s {
            "busy" => Metric::Busy,
            "busy-fraction" => Metric::BusyFraction,
            "messages" => Metric::MessageCount,
            "bytes" => Metric::MessageBytes,
            other => match other.strip_prefix("counter:") {
                Some(name) => Metric::Counter(crate::views::inputs::counter_index(trace, name)?),
                None => {
                    return Err(Error::Invalid(format!(
                        "expected a metric busy, busy-fraction, messages, bytes or counter:NAME, found '{other}'"
                    )));
                }
            },
        })
    }

    /// Unit of the metric's values.
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Busy | Metric::BusyFraction => "fraction",
            Metric::MessageCount => "messages",
            Metric::MessageBytes => "bytes",
            Metric::Counter(_) => "counter value",
        }
    }
    /// Scale of the signals x and w: utilization is given in percent.
    pub fn signal_scale(&self) -> (f64, &'static str) {
        match self {
            Metric::Busy | Metric::BusyFraction => (100.0, "percent"),
            m => (1.0, m.unit()),
        }
    }
}

/// The metric matrix: rows sorted by time (stable within a time).
#[derive(Debug, Clone, Default, Serialize)]
pub struct MetricMatrix {
    pub time: Vec<Time>,
    pub location: Vec<u32>,
    pub value: Vec<f64>,
    /// Number of locations P.
    pub locations: usize,
    /// Value of every location before its first row.
    pub initial: f64,
}

/// Builds M for `metric` over the selected states (`mask`, by state id).
pub fn metric_matrix(trace: &Trace, metric: &Metric, mask: &[bool]) -> Result<MetricMatrix> {
    let p = trace.num_locations();
    let mut rows: Vec<(Time, u32, u64, f64)> = Vec::new();
    let busy = |s: u32| mask.get(s as usize).copied().unwrap_or(false);
    match metric {
        Metric::Busy | Metric::BusyFraction => {
            for l in 0..p as u32 {
                let iv = trace.intervals.of(l);
                let mut acc: u64 = 0; // busy time so far
                let mut seq = 0u64;
                for i in 0..iv.len() {
                    let (s, e, st) = (iv.start[i], iv.end[i], iv.state[i]);
                    let b = busy(st);
                    let frac = |t: Time, a: u64| if t == 0 { 0.0 } else { a as f64 / t as f64 };
                    let v = match metric {
                        Metric::Busy => b as u8 as f64,
                        _ => frac(s, acc),
                    };
                    rows.push((s, l, seq, v));
                    seq += 1;
                    if b {
                        acc += e - s;
                    }
                    // an end that no interval continues sets the idle value
                    let continued = i + 1 < iv.len() && iv.start[i + 1] == e;
                    if !continued {
                        let v = match metric {
                            Metric::Busy => 0.0,
                            _ => frac(e, acc),
                        };
                        rows.push((e, l, seq, v));
                        seq += 1;
                    }
                }
            }
        }
        Metric::MessageCount | Metric::MessageBytes => {
            let mut count = vec![0f64; p];
            let m = &trace.messages;
            for i in 0..m.len() {
                let s = m.sender[i] as usize;
                count[s] += if *metric == Metric::MessageCount {
                    1.0
                } else {
                    m.bytes[i] as f64
                };
                rows.push((m.send_time[i], s as u32, i as u64, count[s]));
            }
        }
        Metric::Counter(c) => {
            if *c as usize >= trace.counters.defs.len() {
                return Err(Error::Invalid(format!(
                    "no counter number {c} in this trace"
                )));
            }
            for l in 0..p as u32 {
                for i in trace.counters.range_of(l) {
                    if trace.counters.counter[i] == *c {
                        rows.push((trace.counters.time[i], l, i as u64, trace.counters.value[i]));
                    }
                }
            }
        }
    }
    rows.sort_by_key(|r| (r.0, r.1, r.2));
    Ok(MetricMatrix {
        time: rows.iter().map(|r| r.0).collect(),
        location: rows.iter().map(|r| r.1).collect(),
        value: rows.iter().map(|r| r.3).collect(),
        locations: p,
        initial: 0.0,
    })
}

/// The state vector S(n0) of `metric` (SPEC §3.2): the metric matrix's
/// last value of every location at or before `n0`; the cumulative busy
/// fraction exactly at `n0` (busy time in `[0, n0)` / n0, which changes
/// continuously, not only at events). `mm` is `metric`'s matrix.
pub fn state_vector(
    trace: &Trace,
    metric: &Metric,
    mask: &[bool],
    mm: &MetricMatrix,
    n0: Time,
) -> Vec<f64> {
    use rayon::prelude::*;
    if *metric == Metric::BusyFraction {
        return (0..trace.num_locations() as u32)
            .into_par_iter()
            .map(|l| {
                if n0 == 0 {
                    return 0.0;
                }
                super::moments::accumulate(trace.intervals.of(l), mask, 0, n0).w / n0 as f64
            })
            .collect();
    }
    mm.state_vector(n0)
}

#[cfg(test)]
mod busy_curve_tests {
    use super::*;
    use crate::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};

    /// The #12 example: at 20 µs the state vector says 25 %, and so must x and w.
    #[test]
    fn x_and_w_are_the_mean_of_the_state_vector() {
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let l0 = b.locations.add("p0", LocationKind::Thread, None, 0);
        let l1 = b.locations.add("p1", LocationKind::Thread, None, 1);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let wait = b.states.add("wait", StateClass::Idle, None, 1);
        b.interval(l0, 0, 10_000, run);
        b.interval(l0, 10_000, 40_000, wait);
        b.interval(l1, 0, 17_000, wait);
        b.interval(l1, 17_000, 23_000, run);
        b.interval(l1, 23_000, 40_000, wait);
        let t = b.finish(BuildOptions::default()).unwrap();
        let mask = t.states.select(&["busy".to_string()]).unwrap();
        let m = Metric::BusyFraction;
        let mm = metric_matrix(&t, &m, &mask).unwrap();
        let c = BusyCurve::new(&t, &mask);
        let mean_sv = |n0: Time| {
            let v = state_vector(&t, &m, &mask, &mm, n0);
            v.iter().sum::<f64>() / v.len() as f64
        };
        // (10 + 3) µs busy of 2 × 20 µs
        assert!((c.fraction_at(20_000) - 13.0 / 40.0).abs() < 1e-15);
        for n0 in (0..=40_000).step_by(500) {
            assert!((c.fraction_at(n0) - mean_sv(n0)).abs() < 1e-12, "n0 {n0}");
        }
        let mut x = event_signal(&mm, 100.0, "percent", false);
        c.exact_x(&mut x, 100.0);
        for (tt, v) in x.time.iter().zip(&x.x) {
            assert!((v - 100.0 * mean_sv(*tt)).abs() < 1e-9);
        }
        // hold: the value at each instant; mean: the average over the bin
        let w = c.exact_w(1.0, 1000, SampleMode::Hold, 41);
        for (k, v) in w.iter().enumerate() {
            assert!((v - mean_sv(k as u64 * 1000)).abs() < 1e-12);
        }
        let w = c.exact_w(1.0, 4000, SampleMode::Mean, 10);
        for (k, v) in w.iter().enumerate() {
            // trapezoids over 1 ns steps (f(0) is 0 by definition, its limit
            // 0.5: the first bin's reference is off by 0.5/8000)
            let (a, b) = (k as u64 * 4000, (k as u64 + 1) * 4000);
            let num: f64 = (a..b)
                .map(|s| c.fraction_at(s) + c.fraction_at(s + 1))
                .sum::<f64>()
                / 2.0
                / 4000.0;
            assert!((v - num).abs() < 1e-4, "bin {k}: {v} {num}");
        }
    }
}

#[cfg(test)]
mod busy_runs_tests {
    use super::*;
    use crate::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};

    #[test]
    fn busy_runs_equal_the_moment_accumulator_at_every_time() {
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let l = b.locations.add("p0", LocationKind::Thread, None, 0);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let wait = b.states.add("wait", StateClass::Idle, None, 1);
        for (s, e, st) in [
            (0, 5, run),
            (5, 9, run),
            (9, 20, wait),
            (20, 23, run),
            (30, 40, run),
        ] {
            b.interval(l, s, e, st);
        }
        let t = b.finish(BuildOptions::default()).unwrap();
        let mask = t.states.select(&["busy".to_string()]).unwrap();
        let r = BusyRuns::new(&t, &mask);
        for n0 in 0..45 {
            let want = if n0 == 0 {
                0.0
            } else {
                super::super::moments::accumulate(t.intervals.of(0), &mask, 0, n0).w / n0 as f64
            };
            assert_eq!(r.fractions(n0)[0], want, "n0 = {n0}");
        }
    }
}

/// Busy time as a function of time, per location: the merged runs of the
/// selected states and the busy time before each, so that the cumulative
/// busy fraction at any n0 takes a binary search (for animations over n0).
#[derive(Debug, Clone, Default)]
pub struct BusyRuns {
    offsets: Vec<usize>,
    start: Vec<Time>,
    end: Vec<Time>,
    before: Vec<u64>,
}

impl BusyRuns {
    pub fn new(trace: &Trace, mask: &[bool]) -> BusyRuns {
        let mut r = BusyRuns {
            offsets: vec![0],
            ..Default::default()
        };
        for l in 0..trace.num_locations() as u32 {
            let iv = trace.intervals.of(l);
            let mut acc = 0u64;
            let first = r.start.len();
            for i in 0..iv.len() {
                if !mask.get(iv.state[i] as usize).copied().unwrap_or(false) {
                    continue;
                }
                let (s, e) = (iv.start[i], iv.end[i]);
                // adjacent busy intervals merge into one run
                if r.start.len() > first && r.end.last() == Some(&s) {
                    if let Some(last) = r.end.last_mut() {
                        *last = e;
                    }
                } else {
                    r.start.push(s);
                    r.end.push(e);
                    r.before.push(acc);
                }
                acc += e - s;
            }
            r.offsets.push(r.start.len());
        }
        r
    }

    /// The number of locations.
    pub fn locations(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The busy runs of location `l`: starts and ends (sorted, disjoint).
    pub fn runs(&self, l: usize) -> (&[Time], &[Time]) {
        let (a, b) = (self.offsets[l], self.offsets[l + 1]);
        (&self.start[a..b], &self.end[a..b])
    }

    /// Busy time of location `l` in `[0, n0)`.
    pub fn busy_before(&self, l: usize, n0: Time) -> u64 {
        let (a, b) = (self.offsets[l], self.offsets[l + 1]);
        let k = self.start[a..b].partition_point(|&s| s < n0);
        if k == 0 {
            return 0;
        }
        let i = a + k - 1;
        self.before[i] + (n0.min(self.end[i]) - self.start[i])
    }

    /// The cumulative busy fraction of every location at `n0`.
    pub fn fractions(&self, n0: Time) -> Vec<f64> {
        use rayon::prelude::*;
        (0..self.offsets.len() - 1)
            .into_par_iter()
            .map(|l| {
                if n0 == 0 {
                    0.0
                } else {
                    self.busy_before(l, n0) as f64 / n0 as f64
                }
            })
            .collect()
    }
}

impl MetricMatrix {
    pub fn len(&self) -> usize {
        self.time.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// The state vector after all rows at times `≤ n0`.
    pub fn state_vector(&self, n0: Time) -> Vec<f64> {
        let mut v = vec![self.initial; self.locations];
        let end = self.time.partition_point(|&t| t <= n0);
        for i in 0..end {
            if let Some(x) = v.get_mut(self.location[i] as usize) {
                *x = self.value[i];
            }
        }
        v
    }
}

/// The event-domain signal: sample times and values.
#[derive(Debug, Clone, Serialize)]
pub struct EventSignal {
    pub time: Vec<Time>,
    pub x: Vec<f64>,
    pub unit: String,
}

/// `x = scale · (1/P) Σ v_k` after all rows at each distinct time, or
/// after each row (`per_event`).
pub fn event_signal(m: &MetricMatrix, scale: f64, unit: &str, per_event: bool) -> EventSignal {
    let p = m.locations.max(1) as f64;
    let mut v = vec![m.initial; m.locations];
    let mut sum: f64 = m.initial * m.locations as f64;
    let (mut time, mut x) = (Vec::new(), Vec::new());
    let n = m.len();
    for i in 0..n {
        let l = m.location[i] as usize;
        if let Some(old) = v.get_mut(l) {
            sum += m.value[i] - *old;
            *old = m.value[i];
        }
        let last_at_time = i + 1 == n || m.time[i + 1] != m.time[i];
        if per_event || last_at_time {
            time.push(m.time[i]);
            x.push(scale * sum / p);
        }
    }
    EventSignal {
        time,
        x,
        unit: unit.to_string(),
    }
}

/// Time spent by all locations together, up to any t, in something that
/// starts and ends (a state set, one state): Σ over the intervals of their
/// overlap with [0, t). Piecewise linear in t, its slope the number of
/// intervals open at t; exact integers.
#[derive(Debug, Clone)]
pub struct Occupancy {
    /// Times where the slope changes, ascending, from 0.
    time: Vec<Time>,
    /// The time spent up to each of those times.
    total: Vec<u64>,
    /// The slope from each time to the next: intervals open.
    open: Vec<u64>,
}

impl Occupancy {
    /// From the intervals' ends: `(start, +1)` and `(end, −1)`, any order.
    pub fn from_edges(mut edges: Vec<(Time, i64)>) -> Occupancy {
        edges.sort_unstable();
        let mut o = Occupancy {
            time: vec![0],
            total: vec![0],
            open: vec![0],
        };
        let (mut total, mut k, mut last) = (0u64, 0i64, 0 as Time);
        let mut i = 0;
        while i < edges.len() {
            let t = edges[i].0;
            total += k.max(0) as u64 * (t - last);
            while i < edges.len() && edges[i].0 == t {
                k += edges[i].1;
                i += 1;
            }
            last = t;
            if o.time.last() == Some(&t) {
                // a change at time 0: the first piece's slope
                if let Some(s) = o.open.last_mut() {
                    *s = k.max(0) as u64;
                }
            } else {
                o.time.push(t);
                o.total.push(total);
                o.open.push(k.max(0) as u64);
            }
        }
        o
    }

    /// The intervals of the states in `mask` over all locations.
    pub fn of_states(trace: &Trace, mask: &[bool]) -> Occupancy {
        let mut edges = Vec::new();
        for l in 0..trace.num_locations() as u32 {
            let iv = trace.intervals.of(l);
            for i in 0..iv.len() {
                if mask.get(iv.state[i] as usize).copied().unwrap_or(false) {
                    edges.push((iv.start[i], 1));
                    edges.push((iv.end[i], -1));
                }
            }
        }
        Occupancy::from_edges(edges)
    }

    /// The time spent in `[0, t)`.
    pub fn total_at(&self, t: Time) -> u64 {
        let i = self.time.partition_point(|&x| x <= t) - 1;
        self.total[i] + self.open[i] * (t - self.time[i])
    }
}

/// The total busy time of all locations, B(t) = Σ_l (busy time of l in
/// [0, t)) (an [`Occupancy`]). The mean cumulative busy fraction of the
/// state vector at t is B(t) / (P t), exactly, at any t (not only at
/// events).
#[derive(Debug, Clone)]
pub struct BusyCurve {
    busy: Occupancy,
    locations: usize,
}

impl BusyCurve {
    pub fn new(trace: &Trace, mask: &[bool]) -> BusyCurve {
        BusyCurve {
            busy: Occupancy::of_states(trace, mask),
            locations: trace.num_locations(),
        }
    }

    /// B(t).
    pub fn total_at(&self, t: Time) -> f64 {
        self.busy.total_at(t) as f64
    }

    /// The mean cumulative busy fraction of the locations at `t` (0 at 0).
    pub fn fraction_at(&self, t: Time) -> f64 {
        if t == 0 || self.locations == 0 {
            return 0.0;
        }
        self.total_at(t) / (self.locations as f64 * t as f64)
    }

    /// The time average of the mean busy fraction over `[a, b)`:
    /// (1/(b − a)) ∫ B(t) / (P t) dt, exact on each linear piece
    /// (∫ (B_i − k t_i)/t + k dt = (B_i − k t_i) ln(t1/t0) + k (t1 − t0)).
    pub fn mean_fraction(&self, a: Time, b: Time) -> f64 {
        if b <= a || self.locations == 0 {
            return 0.0;
        }
        let mut acc = 0.0;
        let mut i = self.busy.time.partition_point(|&x| x <= a) - 1;
        let mut t0 = a;
        while t0 < b {
            let t1 = self
                .busy
                .time
                .get(i + 1)
                .copied()
                .unwrap_or(Time::MAX)
                .min(b);
            let (bi, k) = (self.busy.total[i] as f64, self.busy.open[i] as f64);
            let c = bi - k * self.busy.time[i] as f64;
            acc += k * (t1 - t0) as f64;
            if t0 > 0 && c != 0.0 {
                acc += c * ((t1 - t0) as f64 / t0 as f64).ln_1p();
            }
            t0 = t1;
            i += 1;
        }
        acc / (self.locations as f64 * (b - a) as f64)
    }

    /// `x` with its values replaced by the exact mean busy fraction at its
    /// sample times, times `scale`.
    pub fn exact_x(&self, x: &mut EventSignal, scale: f64) {
        for (t, v) in x.time.iter().zip(x.x.iter_mut()) {
            *v = scale * self.fraction_at(*t);
        }
    }

    /// `n` samples of w every `delta`: the exact mean busy fraction at `k Δ`
    /// (hold) or its time average over `[k Δ, (k+1) Δ)` (mean), times `scale`.
    pub fn exact_w(&self, scale: f64, delta: Time, mode: SampleMode, n: usize) -> Vec<f64> {
        (0..n as u64)
            .map(|k| {
                scale
                    * match mode {
                        SampleMode::Hold => self.fraction_at(k * delta),
                        SampleMode::Mean => self.mean_fraction(k * delta, (k + 1) * delta),
                    }
            })
            .collect()
    }
}

/// The signals of one metric over a trace: the event-domain x (exact for
/// the cumulative busy fraction, which changes between records too) and
/// the temporal w sampled from it.
pub struct MetricSignal {
    pub x: EventSignal,
    /// x before the first record.
    pub initial: f64,
    scale: f64,
    end: Time,
    exact: Option<BusyCurve>,
}

impl MetricSignal {
    pub fn new(trace: &Trace, metric: &Metric, mask: &[bool], per_event: bool) -> Result<Self> {
        let mm = metric_matrix(trace, metric, mask)?;
        let (scale, unit) = metric.signal_scale();
        let mut x = event_signal(&mm, scale, unit, per_event);
        let exact = (*metric == Metric::BusyFraction).then(|| BusyCurve::new(trace, mask));
        if let Some(c) = &exact {
            c.exact_x(&mut x, scale);
        }
        Ok(MetricSignal {
            x,
            initial: mm.initial * scale,
            scale,
            end: trace.meta.span,
            exact,
        })
    }

    /// w with period `delta` from time 0 (see [`temporal_signal`]).
    pub fn w(&self, delta: Time, mode: SampleMode) -> Result<Vec<f64>> {
        let w = temporal_signal(&self.x, self.initial, delta, mode, self.end)?;
        Ok(match &self.exact {
            Some(c) => c.exact_w(self.scale, delta, mode, w.len()),
            None => w,
        })
    }

    /// x held over `[t0, t1)`: its value at `t0` (the last record before,
    /// or the initial value) then the records inside, as times and values.
    pub fn held(&self, t0: Time, t1: Time) -> (Vec<Time>, Vec<f64>) {
        let x = &self.x;
        let k0 = x.time.partition_point(|&s| s < t0);
        let k1 = x.time.partition_point(|&s| s < t1);
        let (mut time, mut value) = (
            Vec::with_capacity(k1 - k0 + 1),
            Vec::with_capacity(k1 - k0 + 1),
        );
        if x.time.get(k0) != Some(&t0) {
            time.push(t0);
            value.push(if k0 > 0 { x.x[k0 - 1] } else { self.initial });
        }
        time.extend_from_slice(&x.time[k0..k1]);
        value.extend_from_slice(&x.x[k0..k1]);
        (time, value)
    }
}

/// How the temporal signal samples the held event signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleMode {
    /// The value at each sample instant `n·Δ` (after the events at it).
    Hold,
    /// The exact time average over `[n·Δ, (n+1)·Δ)`.
    Mean,
}

/// The temporal signal w with period `delta` (ns) from time 0: `hold` has
/// `floor(last event / Δ) + 1` samples; `mean` covers `[0, end)` with
/// `ceil(end / Δ)` bins. Before the first event the signal is `initial`.
pub fn temporal_signal(
    x: &EventSignal,
    initial: f64,
    delta: Time,
    mode: SampleMode,
    end: Time,
) -> Result<Vec<f64>> {
    if delta == 0 {
        return Err(Error::Invalid(
            "the sampling period must be at least 1 ns".into(),
        ));
    }
    let last = x.time.last().copied().unwrap_or(0);
    let n = match mode {
        SampleMode::Hold => last / delta + 1,
        SampleMode::Mean => end.max(last).div_ceil(delta).max(1),
    };
    if n > 1 << 27 {
        return Err(Error::Invalid(format!(
            "{n} samples with a period of {delta} ns; use a longer period"
        )));
    }
    let n = n as usize;
    let mut w = Vec::with_capacity(n);
    match mode {
        SampleMode::Hold => {
            let mut k = 0usize;
            let mut cur = initial;
            for s in 0..n {
                let t = s as u64 * delta;
                while k < x.time.len() && x.time[k] <= t {
                    cur = x.x[k];
                    k += 1;
                }
                w.push(cur);
            }
        }
        SampleMode::Mean => {
            // integrate the step function bin by bin
            let mut k = 0usize;
            let mut cur = initial;
            for s in 0..n {
                let (b0, b1) = (s as u64 * delta, (s as u64 + 1) * delta);
                let mut t = b0;
                let mut acc = 0.0;
                while k < x.time.len() && x.time[k] < b1 {
                    let te = x.time[k].max(t);
                    acc += cur * (te - t) as f64;
                    t = te;
                    cur = x.x[k];
                    k += 1;
                }
                acc += cur * (b1 - t) as f64;
                w.push(acc / delta as f64);
            }
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_and_mean_sampling() {
        let x = EventSignal {
            time: vec![0, 10, 15],
            x: vec![100.0, 50.0, 0.0],
            unit: "percent".into(),
        };
        let w = temporal_signal(&x, 0.0, 5, SampleMode::Hold, 15).unwrap();
        assert_eq!(w, vec![100.0, 100.0, 50.0, 0.0]);
        let w = temporal_signal(&x, 0.0, 4, SampleMode::Mean, 16).unwrap();
        // bins [0,4) [4,8) [8,12) [12,16)
        assert_eq!(w, vec![100.0, 100.0, 75.0, 0.75 * 50.0]);
    }
}
