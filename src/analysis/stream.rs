//! Reductions made while a trace is read (`--stream`): moments and the
//! busy field, in memory proportional to locations × states (× bins), never
//! to the records.
//!
//! Everything is kept per state (the format's state value) so that which
//! states count (`--states`, `--busy`, ...) is decided at the end, on the
//! finished state table, exactly as in memory. Busy time per bin is summed
//! in integers, so the field equals the in-memory field bit for bit; the
//! moments merge one interval at a time (Pébay) where the in-memory path
//! makes two passes, and agree to rounding (1e-12 relative).
//!
//! Records must come in time order per location (as every Paraver writer
//! emits them): overlaps are clipped like the in-memory reader clips them;
//! a record that starts before the previous one of its location stops the
//! read with a message (the in-memory path sorts; a stream cannot).

use rustc_hash::FxHashMap as HashMap;

use super::fields::{self, Field};
use super::moments::{MomentAcc, Moments};
use crate::error::{Error, Result};
use crate::model::stream::IntervalSink;
use crate::model::{LocId, StateId, Time};

/// What to reduce besides moments and time per state.
#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    /// Bins of the busy field over the window (none: no field).
    pub bins: Option<usize>,
}

/// The window `[t0, t1)` given the trace's declared end.
pub type WindowFn<'a> = dyn Fn(Time) -> Result<(Time, Time)> + 'a;

/// The per-state accumulators of one state value.
struct Slot {
    key: u32,
    /// Moments per location (over the window).
    moments: Vec<MomentAcc>,
    /// Busy time per location and bin, location-major (over the window).
    bins: Vec<u64>,
    intervals: u64,
}

/// The streaming reducer: an [`IntervalSink`] for a streaming reader.
pub struct StreamReducer<'a> {
    spec: StreamSpec,
    window_of: Box<WindowFn<'a>>,
    window: (Time, Time),
    edges: Vec<Time>,
    locations: usize,
    slots: Vec<Slot>,
    slot_of: HashMap<u32, usize>,
    /// Per location: raw start and end of the previous record, and the end
    /// of the last interval kept.
    prev: Vec<(Time, Time, Time)>,
    overlaps: u64,
    first_overlap: Option<(LocId, Time)>,
    end: Time,
    messages: u64,
    others: u64,
}

impl<'a> StreamReducer<'a> {
    pub fn new(spec: StreamSpec, window_of: Box<WindowFn<'a>>) -> Self {
        StreamReducer {
            spec,
            window_of,
            window: (0, 0),
            edges: Vec::new(),
            locations: 0,
            slots: Vec::new(),
            slot_of: HashMap::default(),
            prev: Vec::new(),
            overlaps: 0,
            first_overlap: None,
            end: 0,
            messages: 0,
            others: 0,
        }
    }

    fn slot(&mut self, key: u32) -> std::result::Result<usize, String> {
        if let Some(&s) = self.slot_of.get(&key) {
            return Ok(s);
        }
        let p = self.locations;
        let bins = self.edges.len().saturating_sub(1);
        // all states' accumulators together: a trace with many state
        // values cannot grow them past the limit one state at a time
        let n = self.slots.len() as u64 + 1;
        let bytes = (p as u64)
            .saturating_mul(40 + 8 * bins as u64)
            .saturating_mul(n);
        crate::memory::guard(bytes, || {
            format!("the stream accumulators of {n} states × {p} locations")
        })
        .map_err(|e| e.to_string())?;
        self.slots.push(Slot {
            key,
            moments: vec![MomentAcc::default(); p],
            bins: vec![0; p * bins],
            intervals: 0,
        });
        self.slot_of.insert(key, self.slots.len() - 1);
        Ok(self.slots.len() - 1)
    }

    /// The window reduced over.
    pub fn window(&self) -> (Time, Time) {
        self.window
    }

    /// Intervals, messages and other records read.
    pub fn records(&self) -> (u64, u64, u64) {
        let iv = self.slots.iter().map(|s| s.intervals).sum();
        (iv, self.messages, self.others)
    }

    /// `mask` (by state id) as a mask over the slots, through the state id
    /// of each key.
    fn selected(&self, mask: &[bool], keys: &[(u32, StateId)]) -> Vec<bool> {
        let id: HashMap<u32, StateId> = keys.iter().copied().collect();
        self.slots
            .iter()
            .map(|s| {
                id.get(&s.key)
                    .is_some_and(|&i| mask.get(i as usize).copied().unwrap_or(false))
            })
            .collect()
    }

    /// The moments of every location over the states in `mask`.
    pub fn moments(&self, mask: &[bool], keys: &[(u32, StateId)]) -> Vec<Moments> {
        let sel = self.selected(mask, keys);
        (0..self.locations)
            .map(|l| {
                self.slots
                    .iter()
                    .zip(&sel)
                    .filter(|(_, on)| **on)
                    .fold(MomentAcc::default(), |acc, (s, _)| acc.merge(s.moments[l]))
                    .moments()
            })
            .collect()
    }

    /// The busy-fraction field over the states in `mask` (`[bin][location]`),
    /// identical to [`fields::busy_fraction`] on the same trace.
    pub fn busy_field(&self, mask: &[bool], keys: &[(u32, StateId)]) -> Result<Field> {
        if self.edges.len() < 2 {
            return Err(Error::Invalid(
                "the stream kept no field (no --bins)".into(),
            ));
        }
        let sel = self.selected(mask, keys);
        let bins = self.edges.len() - 1;
        let p = self.locations;
        let inv = fields::inverse_widths(&self.edges);
        let mut values = vec![0.0; bins * p];
        for l in 0..p {
            for k in 0..bins {
                let busy: u64 = self
                    .slots
                    .iter()
                    .zip(&sel)
                    .filter(|(_, on)| **on)
                    .map(|(s, _)| s.bins[l * bins + k])
                    .sum();
                values[k * p + l] = busy as f64 * inv[k];
            }
        }
        Ok(fields::busy_field(values, self.edges.clone(), p))
    }

    /// Adds the reductions of another share of the same trace (same
    /// locations, window and bins): accumulators are merged per state,
    /// counts and repairs added. Merging shares in file order gives the
    /// whole file's field exactly and its moments to rounding.
    pub fn merge(&mut self, other: StreamParts) -> Result<()> {
        if other.locations != self.locations || other.edges != self.edges {
            return Err(Error::Invalid(
                "stream shares of different traces, windows or bins cannot be merged".into(),
            ));
        }
        for o in other.slots {
            let i = self.slot(o.key).map_err(Error::Invalid)?;
            let s = &mut self.slots[i];
            for (a, b) in s.moments.iter_mut().zip(&o.moments) {
                *a = a.merge(*b);
            }
            for (a, b) in s.bins.iter_mut().zip(&o.bins) {
                *a += b;
            }
            s.intervals += o.intervals;
        }
        self.overlaps += other.overlaps;
        if self.first_overlap.is_none() {
            self.first_overlap = other.first_overlap;
        }
        self.end = self.end.max(other.end);
        self.messages += other.messages;
        self.others += other.others;
        Ok(())
    }

    /// This share's reductions as bytes (little-endian), for sending to
    /// the process that merges ([`StreamParts::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        let put = |w: &mut Vec<u8>, x: u64| w.extend_from_slice(&x.to_le_bytes());
        let putf = |w: &mut Vec<u8>, x: f64| w.extend_from_slice(&x.to_le_bytes());
        put(&mut w, MAGIC);
        put(&mut w, self.locations as u64);
        put(&mut w, self.edges.len() as u64);
        for &e in &self.edges {
            put(&mut w, e);
        }
        put(&mut w, self.overlaps);
        match self.first_overlap {
            Some((l, t)) => {
                put(&mut w, 1);
                put(&mut w, l as u64);
                put(&mut w, t);
            }
            None => {
                put(&mut w, 0);
                put(&mut w, 0);
                put(&mut w, 0);
            }
        }
        put(&mut w, self.end);
        put(&mut w, self.messages);
        put(&mut w, self.others);
        put(&mut w, self.slots.len() as u64);
        for s in &self.slots {
            put(&mut w, s.key as u64);
            put(&mut w, s.intervals);
            for m in &s.moments {
                put(&mut w, m.origin);
                putf(&mut w, m.w);
                putf(&mut w, m.mean);
                putf(&mut w, m.m2);
                putf(&mut w, m.m3);
            }
            for &b in &s.bins {
                put(&mut w, b);
            }
        }
        w
    }
}

const MAGIC: u64 = 0x7461_7065_7374_7231; // "tapestr1"

/// The reductions of one share, decoded from [`StreamReducer::to_bytes`].
pub struct StreamParts {
    locations: usize,
    edges: Vec<Time>,
    slots: Vec<Slot>,
    overlaps: u64,
    first_overlap: Option<(LocId, Time)>,
    end: Time,
    messages: u64,
    others: u64,
}

impl StreamParts {
    /// Decodes the bytes of a share; damaged or truncated bytes are an
    /// error, never a panic or a huge allocation.
    pub fn from_bytes(b: &[u8]) -> Result<StreamParts> {
        let bad = || Error::Invalid("damaged stream reduction received".into());
        let mut at = 0usize;
        let mut get = || -> Result<u64> {
            let x = b.get(at..at + 8).ok_or_else(bad)?;
            at += 8;
            Ok(u64::from_le_bytes(x.try_into().map_err(|_| bad())?))
        };
        if get()? != MAGIC {
            return Err(bad());
        }
        let locations = get()? as usize;
        let ne = get()? as usize;
        // every count is bounded by the bytes that must follow it
        if ne > b.len() / 8 || locations > b.len() {
            return Err(bad());
        }
        let edges = (0..ne).map(|_| get()).collect::<Result<Vec<_>>>()?;
        let overlaps = get()?;
        let (has, l, t) = (get()?, get()?, get()?);
        let first_overlap = (has == 1).then_some((l as LocId, t));
        let end = get()?;
        let messages = get()?;
        let others = get()?;
        let ns = get()? as usize;
        let bins = ne.saturating_sub(1);
        let per_slot = 16 + locations * (40 + 8 * bins);
        if ns.saturating_mul(per_slot) > b.len() {
            return Err(bad());
        }
        let mut slots = Vec::with_capacity(ns);
        for _ in 0..ns {
            let key = u32::try_from(get()?).map_err(|_| bad())?;
            let intervals = get()?;
            let mut moments = Vec::with_capacity(locations);
            for _ in 0..locations {
                moments.push(MomentAcc {
                    origin: get()?,
                    w: f64::from_bits(get()?),
                    mean: f64::from_bits(get()?),
                    m2: f64::from_bits(get()?),
                    m3: f64::from_bits(get()?),
                });
            }
            let bins = (0..locations * bins)
                .map(|_| get())
                .collect::<Result<Vec<_>>>()?;
            slots.push(Slot {
                key,
                moments,
                bins,
                intervals,
            });
        }
        Ok(StreamParts {
            locations,
            edges,
            slots,
            overlaps,
            first_overlap,
            end,
            messages,
            others,
        })
    }
}

impl IntervalSink for StreamReducer<'_> {
    fn begin(&mut self, locations: usize, declared_end: Time) -> Result<()> {
        self.locations = locations;
        self.window = (self.window_of)(declared_end)?;
        let (t0, t1) = self.window;
        if let Some(bins) = self.spec.bins {
            fields::check_bins(t0, t1, bins)?;
            fields::guard_field(bins, locations)?;
            self.edges = fields::bin_edges(t0, t1, bins);
        }
        crate::memory::guard((locations as u64).saturating_mul(24), || {
            format!("the stream state of {locations} locations")
        })?;
        self.prev = vec![(0, 0, 0); locations];
        Ok(())
    }

    fn interval(
        &mut self,
        loc: LocId,
        start: Time,
        end: Time,
        key: u32,
    ) -> std::result::Result<(), String> {
        let l = loc as usize;
        let Some(&(ps, pe, kept)) = self.prev.get(l) else {
            return Err(format!("location {loc} out of range"));
        };
        let seen = pe > 0 || ps > 0 || kept > 0;
        if seen && (start < ps || (start == ps && end < pe)) {
            return Err(format!(
                "a state record of location {loc} starts at {start} ns, before the previous one \
                 ({ps} ns): --stream needs records in time order per location (read without \
                 --stream, which sorts them)"
            ));
        }
        // clip an overlap with the last interval kept, as the builder does
        let mut s = start;
        if seen && s < kept {
            self.overlaps += 1;
            self.first_overlap.get_or_insert((loc, s));
            s = kept;
        }
        self.prev[l] = (start, end, if end > s { end } else { kept });
        if end <= s {
            return Ok(());
        }
        self.end = self.end.max(end);
        let (t0, t1) = self.window;
        let slot = self.slot(key)?;
        let bins = self.edges.len().saturating_sub(1);
        let edges = &self.edges;
        let sl = &mut self.slots[slot];
        sl.intervals += 1;
        let (a, b) = (s.max(t0), end.min(t1));
        if b > a {
            sl.moments[l] = sl.moments[l].merge(MomentAcc::interval(a, b));
            if bins > 0 {
                // the bin of a: edges are t0 + floor(k·span/B), so the
                // estimate is exact or one off
                let span = (t1 - t0) as u128;
                let mut k = (((a - t0) as u128 * bins as u128) / span) as usize;
                k = k.min(bins - 1);
                while k > 0 && edges[k] > a {
                    k -= 1;
                }
                while k + 1 < bins && edges[k + 1] <= a {
                    k += 1;
                }
                let row = &mut sl.bins[l * bins..(l + 1) * bins];
                let mut x = a;
                while x < b && k < bins {
                    let e = b.min(edges[k + 1]);
                    row[k] += e - x;
                    x = e;
                    k += 1;
                }
            }
        }
        Ok(())
    }

    fn message(&mut self, _src: LocId, _dst: LocId, send: Time, recv: Time, _bytes: u64) {
        self.messages += 1;
        self.end = self.end.max(send).max(recv);
    }

    fn other_records(&mut self, n: u64) {
        self.others += n;
    }

    fn end_time(&self) -> Time {
        self.end
    }

    fn repairs(&self) -> Vec<(&'static str, u64, String)> {
        let mut v = Vec::new();
        if self.overlaps > 0 {
            let at = self
                .first_overlap
                .map(|(l, t)| format!(" (first: location {l} at {t} ns)"))
                .unwrap_or_default();
            v.push((
                "overlapping-states",
                self.overlaps,
                format!(
                    "{} state interval(s) overlap an earlier interval of the same location{at}; clipped",
                    self.overlaps
                ),
            ));
        }
        v
    }
}
