//! Reductions made while a trace is read (`--stream`): moments, the busy
//! field, the communication matrix and the `info` summary, in memory
//! proportional to locations × states (× bins) and to the pairs of
//! locations that exchange messages, never to the records.
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

use super::comm::{self, CommMatrices};
use super::fields::{self, Field};
use super::moments::{MomentAcc, Moments};
use super::summary::Totals;
use crate::error::{Error, Result};
use crate::model::builder::RawInterval;
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{LocId, StateId, Time, Trace};

/// What to reduce besides moments and time per state.
#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    /// Bins of the busy field over the window (none: no field).
    pub bins: Option<usize>,
    /// Keep the messages sent in the window per (sender, receiver) pair,
    /// for the communication matrix.
    pub comm: bool,
}

/// The window `[t0, t1)` given the trace's declared end.
pub type WindowFn<'a> = dyn Fn(Time) -> Result<(Time, Time)> + Send + Sync + 'a;

/// The per-state accumulators of one state value.
struct Slot {
    key: u32,
    /// Moments per location (over the window).
    moments: Vec<MomentAcc>,
    /// Busy time per bin and location, bin-major as the field is (over
    /// the window): records come in time order, so at any point of the
    /// stream the cells written are those of a bin or two, every
    /// location's side by side ([`Row`]).
    bins: Vec<u64>,
    /// Time per location over the whole trace (for the summary).
    time: Vec<u64>,
    intervals: u64,
}

/// Bytes of one slot per location besides its bins: a moment accumulator
/// (40) and the whole trace's time (8).
const SLOT_BYTES: u64 = 48;

/// What is counted, not reduced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    messages: u64,
    bytes_sent: u64,
    events: u64,
    collectives: u64,
    communicators: u64,
    counter_samples: u64,
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
    counts: Counts,
    /// Messages and bytes sent in the window per `sender << 32 | receiver`
    /// (with [`StreamSpec::comm`]).
    pairs: HashMap<u64, (u64, u64)>,
    /// The number of pairs the memory guard has allowed so far.
    pairs_allowed: usize,
    /// Per location: the bin of its last interval's start (with bins).
    bin_cursor: Vec<u32>,
    /// A block's records in order of location (room kept from block to
    /// block).
    by_location: ByLocation,
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
            counts: Counts::default(),
            pairs: HashMap::default(),
            pairs_allowed: 0,
            bin_cursor: Vec::new(),
            by_location: ByLocation::default(),
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
            .saturating_mul(SLOT_BYTES + 8 * bins as u64)
            .saturating_mul(n);
        crate::memory::guard(bytes, || {
            format!("the stream accumulators of {n} states × {p} locations")
        })
        .map_err(|e| e.to_string())?;
        self.slots.push(Slot {
            key,
            moments: vec![MomentAcc::default(); p],
            bins: vec![0; p * bins],
            time: vec![0; p],
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
        let c = &self.counts;
        (
            iv,
            c.messages,
            c.events + c.collectives + c.communicators + c.counter_samples,
        )
    }

    /// The counts of the summary (`info`): as [`Totals::of`] gives them
    /// for the trace in memory.
    pub fn totals(&self) -> Totals {
        let c = &self.counts;
        Totals {
            state_intervals: self.slots.iter().map(|s| s.intervals as usize).sum(),
            events: c.events as usize,
            messages: c.messages as usize,
            bytes_sent: c.bytes_sent,
            counter_samples: c.counter_samples as usize,
            collectives: c.collectives as usize,
            communicators: c.communicators as usize,
        }
    }

    /// Time per location in each state over the whole trace (`[location][state
    /// id]`, `states` ids), as [`super::summary::state_time_per_location`]
    /// gives it in memory; `keys` maps the state values to ids.
    pub fn state_time_per_location(
        &self,
        keys: &[(u32, StateId)],
        states: usize,
    ) -> ndarray::Array2<u64> {
        let id: HashMap<u32, StateId> = keys.iter().copied().collect();
        let mut out = ndarray::Array2::zeros((self.locations, states));
        for s in &self.slots {
            let Some(&i) = id.get(&s.key) else { continue };
            let i = i as usize;
            if i >= states {
                continue;
            }
            for (o, &t) in out.column_mut(i).iter_mut().zip(&s.time) {
                *o += t;
            }
        }
        out
    }

    /// The communication matrix of the messages sent in the window at
    /// `level` of `trace` (the stream's locations), identical to
    /// [`comm::comm_matrices`] with one window. Needs [`StreamSpec::comm`].
    pub fn comm_matrix(&self, trace: &Trace, level: comm::Level) -> Result<CommMatrices> {
        if !self.spec.comm {
            return Err(Error::Invalid(
                "the stream kept no communication matrix".into(),
            ));
        }
        let (t0, t1) = self.window;
        comm::CommMatrices::from_pairs(
            trace,
            level,
            t0,
            t1,
            self.pairs
                .iter()
                .map(|(&k, &(n, b))| ((k >> 32) as u32, k as u32, n, b)),
        )
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
        // (sums of whole nanoseconds, exact in f64 as in the model's field)
        let mut values = vec![0.0; bins * p];
        for (s, _) in self.slots.iter().zip(&sel).filter(|(_, on)| **on) {
            for (v, &x) in values.iter_mut().zip(&s.bins) {
                *v += x as f64;
            }
        }
        for (row, &w) in values.chunks_exact_mut(p.max(1)).zip(&inv) {
            row.iter_mut().for_each(|v| *v *= w);
        }
        Ok(fields::busy_field(values, self.edges.clone(), p))
    }

    /// Adds the reductions of another share of the same trace (same
    /// locations, window and bins): accumulators are merged per state,
    /// counts and repairs added. Merging shares in file order gives the
    /// whole file's field exactly and its moments to rounding.
    pub fn merge(&mut self, other: StreamParts) -> Result<()> {
        self.check_same(other.locations, &other.edges)?;
        for o in &other.slots {
            self.merge_slot(
                o.key,
                o.intervals,
                o.moments.iter().copied(),
                o.bins.iter().copied(),
                o.time.iter().copied(),
            )?;
        }
        self.merge_rest(other)
    }

    /// [`StreamReducer::merge`] of [`StreamParts::from_bytes`]`(b)`, each
    /// accumulator added where it is decoded: the share's accumulators
    /// (locations × states × (48 + 8 × bins) bytes) take no memory of their
    /// own. Damaged bytes are an error, as there; what was merged before
    /// the damage stays merged.
    pub fn merge_bytes(&mut self, b: &[u8]) -> Result<()> {
        let (rest, slots) = StreamParts::head(b)?;
        self.check_same(rest.locations, &rest.edges)?;
        let bins = rest.edges.len().saturating_sub(1);
        for sb in slots.chunks_exact(slot_len(rest.locations, bins)) {
            let (key, intervals, m, c, t) = decode_slot(sb, rest.locations, bins)?;
            self.merge_slot(key, intervals, m, c, t)?;
        }
        self.merge_rest(rest)
    }

    /// Refuses a share of another trace, window or bins.
    fn check_same(&self, locations: usize, edges: &[Time]) -> Result<()> {
        if locations != self.locations || edges != self.edges {
            return Err(Error::Invalid(
                "stream shares of different traces, windows or bins cannot be merged".into(),
            ));
        }
        Ok(())
    }

    /// Adds one state's accumulators of another share.
    fn merge_slot(
        &mut self,
        key: u32,
        intervals: u64,
        moments: impl Iterator<Item = MomentAcc>,
        bins: impl Iterator<Item = u64>,
        time: impl Iterator<Item = u64>,
    ) -> Result<()> {
        let i = self.slot(key).map_err(Error::Invalid)?;
        let s = &mut self.slots[i];
        for (a, b) in s.moments.iter_mut().zip(moments) {
            *a = a.merge(b);
        }
        for (a, b) in s.bins.iter_mut().zip(bins) {
            *a += b;
        }
        for (a, b) in s.time.iter_mut().zip(time) {
            *a += b;
        }
        s.intervals += intervals;
        Ok(())
    }

    /// Adds what another share holds besides its accumulators.
    fn merge_rest(&mut self, other: StreamParts) -> Result<()> {
        for (k, (n, b)) in other.pairs {
            self.add_pair(k, n, b).map_err(Error::Invalid)?;
        }
        self.overlaps += other.overlaps;
        // a later share's first overlap counts only at a lower location
        if let Some((l, t)) = other.first_overlap
            && self.first_overlap.is_none_or(|(f, _)| l < f)
        {
            self.first_overlap = Some((l, t));
        }
        self.end = self.end.max(other.end);
        let (a, b) = (&mut self.counts, other.counts);
        a.messages += b.messages;
        a.bytes_sent = a.bytes_sent.saturating_add(b.bytes_sent);
        a.events += b.events;
        a.collectives += b.collectives;
        a.communicators += b.communicators;
        a.counter_samples += b.counter_samples;
        Ok(())
    }

    /// Adds `n` messages of `bytes` to the pair `key`, the map's growth
    /// guarded like any other allocation.
    fn add_pair(&mut self, key: u64, n: u64, bytes: u64) -> std::result::Result<(), String> {
        if let Some(e) = self.pairs.get_mut(&key) {
            e.0 += n;
            e.1 = e.1.saturating_add(bytes);
            return Ok(());
        }
        if self.pairs.len() >= self.pairs_allowed {
            let want = (self.pairs_allowed * 2).max(1 << 16);
            // a hash map entry of 24 bytes, at most half full after growing
            crate::memory::guard((want as u64).saturating_mul(48), || {
                format!("the communication matrix of {want} pairs of locations")
            })
            .map_err(|e| e.to_string())?;
            self.pairs_allowed = want;
        }
        self.pairs.insert(key, (n, bytes));
        Ok(())
    }

    /// This share's reductions as bytes (little-endian), for sending to
    /// the process that merges ([`StreamParts::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        self.write_bytes(&mut w);
        w
    }

    /// [`StreamReducer::to_bytes`] appended to `w`, which grows once to
    /// the size needed (a share's reductions can be hundreds of MB: no
    /// doubling and copying on the way).
    pub fn write_bytes(&self, w: &mut Vec<u8>) {
        let bins = self.edges.len().saturating_sub(1);
        w.reserve(
            8 * (16 + self.edges.len())
                + self.slots.len() * slot_len(self.locations, bins)
                + 24 * self.pairs.len(),
        );
        let put = |w: &mut Vec<u8>, x: u64| w.extend_from_slice(&x.to_le_bytes());
        let putf = |w: &mut Vec<u8>, x: f64| w.extend_from_slice(&x.to_le_bytes());
        put(w, MAGIC);
        put(w, self.locations as u64);
        put(w, self.edges.len() as u64);
        for &e in &self.edges {
            put(w, e);
        }
        put(w, self.overlaps);
        match self.first_overlap {
            Some((l, t)) => {
                put(w, 1);
                put(w, l as u64);
                put(w, t);
            }
            None => {
                put(w, 0);
                put(w, 0);
                put(w, 0);
            }
        }
        put(w, self.end);
        let c = &self.counts;
        for x in [
            c.messages,
            c.bytes_sent,
            c.events,
            c.collectives,
            c.communicators,
            c.counter_samples,
        ] {
            put(w, x);
        }
        put(w, self.slots.len() as u64);
        for s in &self.slots {
            put(w, s.key as u64);
            put(w, s.intervals);
            for m in &s.moments {
                put(w, m.origin);
                putf(w, m.w);
                putf(w, m.mean);
                putf(w, m.m2);
                putf(w, m.m3);
            }
            for &b in &s.bins {
                put(w, b);
            }
            for &t in &s.time {
                put(w, t);
            }
        }
        put(w, self.pairs.len() as u64);
        for (&k, &(n, b)) in &self.pairs {
            put(w, k);
            put(w, n);
            put(w, b);
        }
    }
}

// (bins bin-major from "tapestr4" on)
const MAGIC: u64 = 0x7461_7065_7374_7234; // "tapestr4"

/// The reductions of one share, decoded from [`StreamReducer::to_bytes`].
pub struct StreamParts {
    locations: usize,
    edges: Vec<Time>,
    slots: Vec<Slot>,
    overlaps: u64,
    first_overlap: Option<(LocId, Time)>,
    end: Time,
    counts: Counts,
    pairs: Vec<(u64, (u64, u64))>,
}

impl StreamParts {
    /// Decodes the bytes of a share; damaged or truncated bytes are an
    /// error, never a panic or a huge allocation.
    pub fn from_bytes(b: &[u8]) -> Result<StreamParts> {
        let (mut parts, slots) = Self::head(b)?;
        let bins = parts.edges.len().saturating_sub(1);
        parts.slots = slots
            .chunks_exact(slot_len(parts.locations, bins))
            .map(|sb| {
                let (key, intervals, moments, bins, time) = decode_slot(sb, parts.locations, bins)?;
                Ok(Slot {
                    key,
                    moments: moments.collect(),
                    bins: bins.collect(),
                    time: time.collect(),
                    intervals,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(parts)
    }

    /// Everything of a share's bytes but its accumulators (`slots` left
    /// empty), and the accumulators' bytes: whole slots of
    /// [`slot_len`] bytes.
    fn head(b: &[u8]) -> Result<(StreamParts, &[u8])> {
        let bad = || Error::Invalid("damaged stream reduction received".into());
        let mut at = 0usize;
        let get = |at: &mut usize| -> Result<u64> {
            let x = b.get(*at..*at + 8).ok_or_else(bad)?;
            *at += 8;
            Ok(u64::from_le_bytes(x.try_into().map_err(|_| bad())?))
        };
        if get(&mut at)? != MAGIC {
            return Err(bad());
        }
        let locations = get(&mut at)? as usize;
        let ne = get(&mut at)? as usize;
        // every count is bounded by the bytes that must follow it
        if ne > b.len() / 8 || locations > b.len() {
            return Err(bad());
        }
        let edges = (0..ne).map(|_| get(&mut at)).collect::<Result<Vec<_>>>()?;
        let overlaps = get(&mut at)?;
        let (has, l, t) = (get(&mut at)?, get(&mut at)?, get(&mut at)?);
        let first_overlap = (has == 1).then_some((l as LocId, t));
        let end = get(&mut at)?;
        let counts = Counts {
            messages: get(&mut at)?,
            bytes_sent: get(&mut at)?,
            events: get(&mut at)?,
            collectives: get(&mut at)?,
            communicators: get(&mut at)?,
            counter_samples: get(&mut at)?,
        };
        let ns = get(&mut at)? as usize;
        let len = ns
            .checked_mul(slot_len(locations, ne.saturating_sub(1)))
            .filter(|&n| n <= b.len().saturating_sub(at))
            .ok_or_else(bad)?;
        let slots = &b[at..at + len];
        at += len;
        let np = get(&mut at)? as usize;
        if np.saturating_mul(24) > b.len() {
            return Err(bad());
        }
        let pairs = (0..np)
            .map(|_| Ok((get(&mut at)?, (get(&mut at)?, get(&mut at)?))))
            .collect::<Result<Vec<_>>>()?;
        Ok((
            StreamParts {
                locations,
                edges,
                slots: Vec::new(),
                overlaps,
                first_overlap,
                end,
                counts,
                pairs,
            },
            slots,
        ))
    }
}

/// Bytes of one state's accumulators as [`StreamReducer::to_bytes`]
/// writes them: key and intervals, then every location's moments (40
/// bytes each), the bins (bin-major: [`Slot::bins`]) and every location's
/// time.
fn slot_len(locations: usize, bins: usize) -> usize {
    16 + locations * (SLOT_BYTES as usize + 8 * bins)
}

fn le(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[..8]);
    u64::from_le_bytes(x)
}

/// One state's accumulators from their [`slot_len`] bytes: key, intervals,
/// and the moments, bins and times of its locations, decoded as they are
/// read.
#[allow(clippy::type_complexity)]
fn decode_slot(
    sb: &[u8],
    locations: usize,
    bins: usize,
) -> Result<(
    u32,
    u64,
    impl Iterator<Item = MomentAcc> + '_,
    impl Iterator<Item = u64> + '_,
    impl Iterator<Item = u64> + '_,
)> {
    let key = u32::try_from(le(&sb[0..8]))
        .map_err(|_| Error::Invalid("damaged stream reduction received".into()))?;
    let intervals = le(&sb[8..16]);
    let (moments, rest) = sb[16..].split_at(40 * locations);
    let (cells, time) = rest.split_at(8 * bins * locations);
    Ok((
        key,
        intervals,
        moments.chunks_exact(40).map(|m| MomentAcc {
            origin: le(&m[0..]),
            w: f64::from_bits(le(&m[8..])),
            mean: f64::from_bits(le(&m[16..])),
            m2: f64::from_bits(le(&m[24..])),
            m3: f64::from_bits(le(&m[32..])),
        }),
        cells.chunks_exact(8).map(le),
        time.chunks_exact(8).map(le),
    ))
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
        crate::memory::guard((locations as u64).saturating_mul(28), || {
            format!("the stream state of {locations} locations")
        })?;
        self.prev = vec![(0, 0, 0); locations];
        if self.edges.len() > 1 {
            self.bin_cursor = vec![0; locations];
        }
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
        let Some(prev) = self.prev.get_mut(l) else {
            return Err(format!("location {loc} out of range"));
        };
        let mut first = self.first_overlap;
        let kept = clip(prev, loc, start, end, &mut self.overlaps, &mut first)?;
        self.first_overlap = first;
        let Some(s) = kept else {
            return Ok(());
        };
        self.end = self.end.max(end);
        let slot = self.slot(key)?;
        let bins = self.edges.len().saturating_sub(1);
        let sl = &mut self.slots[slot];
        sl.intervals += 1;
        let mut no_cursor = 0u32;
        let cursor = self.bin_cursor.get_mut(l).unwrap_or(&mut no_cursor);
        let row = Row::of(&mut sl.bins, l, self.locations, bins);
        accumulate(
            self.window,
            &self.edges,
            (s, end),
            &mut sl.moments[l],
            &mut sl.time[l],
            cursor,
            row,
        );
        Ok(())
    }

    /// A block of records. Records in time order meet the locations at
    /// random, and each costs a cache miss on every per-location
    /// accumulator it touches; so where those outgrow the caches
    /// ([`SORT_MIN_LOCATIONS`]), or where several threads reduce, the
    /// block is first put in order of location ([`ByLocation`], stable: a
    /// location's records stay in time order) and then reduced location
    /// after location, the accumulators met in the order they lie. On
    /// several threads each takes a run of whole locations of the ordered
    /// block, about as many records each, so no two touch the same
    /// location's accumulators, nor (but at the runs' edges) the same
    /// cache line, and the reduction, not only the parse, uses every core.
    /// Few locations, or a small block, are reduced one by one.
    fn intervals(&mut self, batch: &[RawInterval]) -> std::result::Result<(), String> {
        let threads = rayon::current_num_threads().min(self.locations);
        let parallel = threads >= 2 && batch.len() >= PARALLEL_MIN_RECORDS;
        let ordered =
            parallel || (self.locations >= SORT_MIN_LOCATIONS && batch.len() >= SORT_MIN_RECORDS);
        // a location out of range is named where it comes, one by one
        if !ordered || !self.by_location.order(batch, self.locations) {
            for r in batch {
                self.interval(r.loc, r.start, r.end, r.state)?;
            }
            return Ok(());
        }
        // every state of the block gets its slot first, in file order
        // (few distinct)
        let mut last = None;
        for r in batch {
            if last != Some(r.state) {
                self.slot(r.state)?;
                last = Some(r.state);
            }
        }
        let slot_of: Vec<(u32, usize)> = self.slot_of.iter().map(|(&k, &v)| (k, v)).collect();
        let locations = self.locations;
        let shared = Shards {
            prev: self.prev.as_mut_ptr(),
            cursor: self.bin_cursor.as_mut_ptr(),
            has_cursor: self.bin_cursor.len() == locations,
            slots: self
                .slots
                .iter_mut()
                .map(|s| {
                    (
                        s.moments.as_mut_ptr(),
                        s.time.as_mut_ptr(),
                        s.bins.as_mut_ptr(),
                    )
                })
                .collect(),
        };
        let run = Run {
            batch,
            slot_of: &slot_of,
            window: self.window,
            edges: &self.edges,
            locations,
        };
        let by = &self.by_location;
        let outs: Vec<ShardOut> = if parallel {
            use rayon::prelude::*;
            // the closure takes the whole struct (Sync), not its raw fields
            let sh = &shared;
            let run = &run;
            (0..threads)
                .into_par_iter()
                // SAFETY: the pieces hold disjoint sets of whole locations
                .map(|t| unsafe { run.reduce(sh, by.piece(t, threads)) })
                .collect()
        } else {
            // SAFETY: one piece, all of it, on this thread
            vec![unsafe { run.reduce(&shared, by.piece(0, 1)) }]
        };
        drop(shared);
        let mut first = ShardOut::default();
        for o in outs {
            if let Some((i, e)) = o.error {
                first.note_error(i, e);
            }
            self.overlaps += o.overlaps;
            if let Some((l, t)) = o.first_overlap
                && self.first_overlap.is_none_or(|(f, _)| l < f)
            {
                self.first_overlap = Some((l, t));
            }
            self.end = self.end.max(o.end);
            for (s, n) in self.slots.iter_mut().zip(o.intervals) {
                s.intervals += n;
            }
        }
        match first.error {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    fn message(
        &mut self,
        src: LocId,
        dst: LocId,
        send: Time,
        recv: Time,
        bytes: u64,
    ) -> std::result::Result<(), String> {
        self.counts.messages += 1;
        self.counts.bytes_sent = self.counts.bytes_sent.saturating_add(bytes);
        self.end = self.end.max(send).max(recv);
        let (t0, t1) = self.window;
        if self.spec.comm && send >= t0 && send < t1 {
            self.add_pair((src as u64) << 32 | dst as u64, 1, bytes)?;
        }
        Ok(())
    }

    fn messages(
        &mut self,
        src: LocId,
        dst: LocId,
        tally: &crate::model::matching::Tally,
    ) -> std::result::Result<(), String> {
        if tally.messages == 0 {
            return Ok(());
        }
        self.counts.messages += tally.messages;
        self.counts.bytes_sent = self.counts.bytes_sent.saturating_add(tally.bytes);
        self.end = self.end.max(tally.last);
        if self.spec.comm && tally.in_window > 0 {
            self.add_pair(
                (src as u64) << 32 | dst as u64,
                tally.in_window,
                tally.window_bytes,
            )?;
        }
        Ok(())
    }

    fn window(&self) -> (Time, Time) {
        self.window
    }

    fn counted(&mut self, what: Counted, n: u64, last: Time) {
        let c = &mut self.counts;
        match what {
            Counted::Events => c.events += n,
            Counted::Collectives => c.collectives += n,
            Counted::Communicators => c.communicators += n,
            Counted::CounterSamples => c.counter_samples += n,
        }
        if n > 0 {
            self.end = self.end.max(last);
        }
    }

    fn end_time(&self) -> Time {
        self.end
    }

    fn overlaps(&self) -> (u64, Option<(LocId, Time)>) {
        (self.overlaps, self.first_overlap)
    }
}

/// Clips one record of a location against the location's previous one
/// (`prev`: raw start and end of the previous record, end of the last
/// interval kept), as the in-memory builder does; counts an overlap and
/// keeps the lowest location's first. The start kept, or `None` when
/// nothing is left; an error for a record before the previous one.
fn clip(
    prev: &mut (Time, Time, Time),
    loc: LocId,
    start: Time,
    end: Time,
    overlaps: &mut u64,
    first: &mut Option<(LocId, Time)>,
) -> std::result::Result<Option<Time>, String> {
    let (ps, pe, kept) = *prev;
    let seen = pe > 0 || ps > 0 || kept > 0;
    if seen && (start < ps || (start == ps && end < pe)) {
        return Err(format!(
            "a state record of location {loc} starts at {start} ns, before the previous one \
             ({ps} ns): --stream needs records in time order per location (read without \
             --stream, which sorts them)"
        ));
    }
    let mut s = start;
    if seen && s < kept {
        *overlaps += 1;
        // the lowest location's first (its records come in time order)
        if first.is_none_or(|(f, _)| loc < f) {
            *first = Some((loc, s));
        }
        s = kept;
    }
    *prev = (start, end, if end > s { end } else { kept });
    Ok((end > s).then_some(s))
}

/// From this many locations a block is reduced in order of location on
/// one thread too. A location's accumulators take some 170 bytes for
/// three states (more with bins): at 4,096 locations (0.7 MB) ordering
/// costs what it saves, from 16,384 it saves (one core, `moments
/// --stream` of Paraver broadcasts: 1.00× the time at 4,096 locations,
/// 0.98× at 16,384, 0.88× at 65,536).
const SORT_MIN_LOCATIONS: usize = 4096;

/// Blocks of fewer records are reduced one by one on one thread (putting
/// them in order costs more than it saves).
const SORT_MIN_RECORDS: usize = 1024;

/// Blocks of fewer records are reduced on one thread.
const PARALLEL_MIN_RECORDS: usize = 1 << 14;

/// Records a bucket of [`ByLocation`] takes on average (or more): a
/// bucket's locations are side by side (8 of them in 320 bytes of moment
/// accumulators for 65,536 locations in blocks of 20,000 records), and
/// fewer buckets are fewer to count.
const RECORDS_A_BUCKET: usize = 4;

/// One location's busy time per bin: every `stride`th cell of a slot's
/// bin-major bins from the location's own ([`Slot::bins`]).
struct Row<'a> {
    first: *mut u64,
    stride: usize,
    len: usize,
    _cells: std::marker::PhantomData<&'a mut u64>,
}

impl<'a> Row<'a> {
    /// Location `l`'s row of `bins` in `cells` (`bins × stride` of them,
    /// bin-major, `stride` locations); empty without bins. Panics where
    /// the cells do not hold it, as a slice out of range does.
    fn of(cells: &'a mut [u64], l: usize, stride: usize, bins: usize) -> Row<'a> {
        assert!(
            bins == 0 || (l < stride && cells.len() >= bins * stride),
            "location {l}'s row of {bins} bins out of {} cells ({stride} locations)",
            cells.len()
        );
        // SAFETY: with bins, the cells l + k × stride (k < bins) lie in
        // `cells` (checked above), which the row borrows mutably
        unsafe { Row::from_raw(cells.as_mut_ptr(), l, stride, bins) }
    }

    /// [`Row::of`] from the cells' pointer.
    ///
    /// # Safety
    /// `cells` points to `bins × stride` cells (when `bins` > 0), `l` <
    /// `stride`, and no one else reads or writes location `l`'s cells
    /// while the row lives.
    unsafe fn from_raw(cells: *mut u64, l: usize, stride: usize, bins: usize) -> Row<'a> {
        Row {
            // SAFETY: `l` < `stride`: within the cells when there are bins
            first: if bins > 0 {
                unsafe { cells.add(l) }
            } else {
                cells
            },
            stride,
            len: bins,
            _cells: std::marker::PhantomData,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Adds `v` to bin `k`'s cell (`k` < [`Row::len`]).
    fn add(&mut self, k: usize, v: u64) {
        assert!(k < self.len, "bin {k} of {}", self.len);
        // SAFETY: cell l + k × stride, k < bins: within the cells, which
        // this row alone writes at location l (see the constructors)
        unsafe { *self.first.add(k * self.stride) += v }
    }
}

/// Adds the kept interval `[s, end)` of one location to its moment
/// accumulator, its time and (with bins) its row of busy time per bin.
fn accumulate(
    (t0, t1): (Time, Time),
    edges: &[Time],
    (s, end): (Time, Time),
    m: &mut MomentAcc,
    time: &mut u64,
    cursor: &mut u32,
    mut row: Row,
) {
    *time += end - s;
    let (a, b) = (s.max(t0), end.min(t1));
    if b <= a {
        return;
    }
    *m = m.merge(MomentAcc::interval(a, b));
    let bins = row.len();
    if bins == 0 {
        return;
    }
    // the bin of a: a location's starts only move forward (records come in
    // time order, clipped starts too), so its bin cursor does as well, as
    // in memory
    let mut k = *cursor as usize;
    while k + 1 < bins && edges[k + 1] <= a {
        k += 1;
    }
    *cursor = k as u32;
    let mut x = a;
    while x < b && k < bins {
        let e = b.min(edges[k + 1]);
        row.add(k, e - x);
        x = e;
        k += 1;
    }
}

/// Raw pointers to the per-location state of a reducer, for the threads of
/// [`StreamReducer::intervals`], each of which touches its own locations.
struct Shards {
    prev: *mut (Time, Time, Time),
    cursor: *mut u32,
    has_cursor: bool,
    /// Per slot: moments, time, bins.
    slots: Vec<(*mut MomentAcc, *mut u64, *mut u64)>,
}
// SAFETY: the threads write disjoint locations (see `intervals`).
unsafe impl Sync for Shards {}
unsafe impl Send for Shards {}

/// What one thread of [`StreamReducer::intervals`] found.
#[derive(Default)]
struct ShardOut {
    intervals: Vec<u64>,
    overlaps: u64,
    first_overlap: Option<(LocId, Time)>,
    end: Time,
    /// The first error, with the record's index in the block.
    error: Option<(usize, String)>,
}

impl ShardOut {
    /// Keeps the error of record `i` where it is the first in file order.
    fn note_error(&mut self, i: usize, e: String) {
        if self.error.as_ref().is_none_or(|(j, _)| i < *j) {
            self.error = Some((i, e));
        }
    }
}

/// A block's records in order of location: their indices, put in order by
/// a counting sort on the high bits of the location (stable, so a
/// location's records stay in file order), with buckets of a few
/// locations each, a bucket for about every [`RECORDS_A_BUCKET`] records.
/// Reduced in this
/// order, the records meet each accumulator array from its start to its
/// end, as the processor's prefetchers like, instead of at random.
#[derive(Default)]
struct ByLocation {
    /// Indices into the block, in order of location.
    order: Vec<u32>,
    /// Where each bucket's indices begin in `order`, and one past the
    /// end.
    starts: Vec<u32>,
    /// Bits of a location below its bucket.
    shift: u32,
}

impl ByLocation {
    /// Orders `batch`'s records by location; `false` (and nothing
    /// ordered) when one is not below `locations` or the block has
    /// `u32::MAX` records or more.
    fn order(&mut self, batch: &[RawInterval], locations: usize) -> bool {
        if batch.len() >= u32::MAX as usize || locations == 0 {
            return false;
        }
        let bits = usize::BITS - (locations - 1).leading_zeros();
        let records_bits = (batch.len() / RECORDS_A_BUCKET)
            .max(1)
            .next_power_of_two()
            .trailing_zeros();
        self.shift = bits - records_bits.min(bits);
        let buckets = ((locations - 1) >> self.shift) + 1;
        self.starts.clear();
        self.starts.resize(buckets + 1, 0);
        for r in batch {
            let l = r.loc as usize;
            if l >= locations {
                return false;
            }
            self.starts[l >> self.shift] += 1;
        }
        // each bucket's end ...
        let mut end = 0;
        for s in &mut self.starts {
            end += *s;
            *s = end;
        }
        // ... taken back one a record, from the last record: each
        // bucket's start at the end, and its records in file order
        self.order.clear();
        self.order.resize(batch.len(), 0);
        for (i, r) in batch.iter().enumerate().rev() {
            let at = &mut self.starts[(r.loc as usize) >> self.shift];
            *at -= 1;
            self.order[*at as usize] = i as u32;
        }
        true
    }

    /// Piece `t` of `n` of the ordered indices: whole buckets (so whole
    /// locations), about a `n`th of the records each.
    fn piece(&self, t: usize, n: usize) -> &[u32] {
        let len = self.order.len();
        let cut = |k: usize| -> usize {
            if k >= n {
                return len;
            }
            let want = (len as u128 * k as u128 / n as u128) as u32;
            // the first bucket start at or past the share of records
            let b = self.starts.partition_point(|&s| s < want);
            self.starts.get(b).map_or(len, |&s| s as usize)
        };
        let (from, to) = (cut(t), cut(t + 1));
        &self.order[from.min(to)..to]
    }
}

/// What a piece of a block is reduced with, besides the accumulators.
struct Run<'a> {
    batch: &'a [RawInterval],
    slot_of: &'a [(u32, usize)],
    window: (Time, Time),
    edges: &'a [Time],
    locations: usize,
}

impl Run<'_> {
    /// Reduces the records at `piece`'s indices (in order of location)
    /// into the accumulators of `sh`, and says what it found; the first
    /// error in file order among them, if any (every record is still
    /// looked at, so that the first of the whole block can be named).
    ///
    /// # Safety
    /// `sh`'s vectors hold `locations` locations (the slots' bins: `bins ×
    /// locations`) and outlive the call, and no other thread reduces a
    /// record of the same locations meanwhile.
    unsafe fn reduce(&self, sh: &Shards, piece: &[u32]) -> ShardOut {
        let bins = self.edges.len().saturating_sub(1);
        let mut o = ShardOut {
            intervals: vec![0; sh.slots.len()],
            ..Default::default()
        };
        let mut last: Option<(u32, usize)> = None;
        for &i in piece {
            let i = i as usize;
            let r = &self.batch[i];
            let l = r.loc as usize;
            if l >= self.locations {
                o.note_error(i, format!("location {} out of range", r.loc));
                continue;
            }
            let slot = match last {
                Some((k, s)) if k == r.state => s,
                _ => match self.slot_of.iter().find(|(k, _)| *k == r.state) {
                    Some(&(_, s)) => {
                        last = Some((r.state, s));
                        s
                    }
                    None => {
                        o.note_error(i, format!("state {} without accumulators", r.state));
                        continue;
                    }
                },
            };
            // SAFETY: `l < locations` (checked above), the length
            // of `prev`, of the cursors (when kept) and of every slot's
            // per-location vectors, whose bins hold `bins` cells a
            // location (`bins × locations`); location `l` is this
            // piece's alone, and the vectors outlive the call.
            let (prev, cursor, m, time, row) = unsafe {
                let (mp, tp, bp) = sh.slots[slot];
                (
                    &mut *sh.prev.add(l),
                    if sh.has_cursor {
                        Some(&mut *sh.cursor.add(l))
                    } else {
                        None
                    },
                    &mut *mp.add(l),
                    &mut *tp.add(l),
                    Row::from_raw(bp, l, self.locations, bins),
                )
            };
            match clip(
                prev,
                r.loc,
                r.start,
                r.end,
                &mut o.overlaps,
                &mut o.first_overlap,
            ) {
                Err(e) => o.note_error(i, e),
                Ok(None) => {}
                Ok(Some(s)) => {
                    o.end = o.end.max(r.end);
                    o.intervals[slot] += 1;
                    let mut no_cursor = 0u32;
                    accumulate(
                        self.window,
                        self.edges,
                        (s, r.end),
                        m,
                        time,
                        cursor.unwrap_or(&mut no_cursor),
                        row,
                    );
                }
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reducer(comm: bool) -> StreamReducer<'static> {
        StreamReducer::new(
            StreamSpec {
                bins: Some(4),
                comm,
            },
            Box::new(|_| Ok((0, 1000))),
        )
    }

    /// Feeds records `[from, to)` of a fixed list into `r`.
    fn feed(r: &mut StreamReducer, from: usize, to: usize) {
        r.begin(3, 1000).unwrap();
        let iv = [
            (0, 0, 100, 1),
            (1, 50, 400, 2),
            (0, 100, 900, 2),
            (2, 10, 20, 1),
        ];
        let ms = [
            (0, 1, 10, 30, 64),
            (1, 2, 500, 600, 8),
            (0, 1, 990, 1200, 4),
        ];
        for (i, &(l, a, b, k)) in iv.iter().enumerate() {
            if (from..to).contains(&i) {
                r.interval(l, a, b, k).unwrap();
            }
        }
        for (i, &(s, d, a, b, n)) in ms.iter().enumerate() {
            if (from..to).contains(&i) {
                r.message(s, d, a, b, n).unwrap();
            }
        }
        if from == 0 {
            r.counted(Counted::Events, 5, 1300);
            r.counted(Counted::Communicators, 2, 0);
        }
    }

    #[test]
    fn shares_sent_as_bytes_merge_to_the_whole() {
        let mut whole = reducer(true);
        feed(&mut whole, 0, 4);
        let mut first = reducer(true);
        feed(&mut first, 0, 2);
        let mut second = reducer(true);
        feed(&mut second, 2, 4);
        first
            .merge(StreamParts::from_bytes(&second.to_bytes()).unwrap())
            .unwrap();
        assert_eq!(first.totals(), whole.totals());
        assert_eq!(first.end_time(), 1300);
        let keys = [(1, 0), (2, 1)];
        assert_eq!(
            first.state_time_per_location(&keys, 2),
            whole.state_time_per_location(&keys, 2)
        );
        assert_eq!(
            whole.state_time_per_location(&keys, 2),
            ndarray::arr2(&[[100, 800], [0, 350], [10, 0]])
        );
        let t = whole.totals();
        assert_eq!((t.messages, t.bytes_sent, t.events), (3, 76, 5));
        assert_eq!((t.state_intervals, t.communicators), (4, 2));
        // pairs: only messages sent in the window [0, 1000)
        let mut a: Vec<_> = first.pairs.iter().map(|(&k, &v)| (k, v)).collect();
        let mut b: Vec<_> = whole.pairs.iter().map(|(&k, &v)| (k, v)).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(b, vec![(1, (2, 68)), (1 << 32 | 2, (1, 8))]);
        let mask = [true, true];
        assert_eq!(
            first.busy_field(&mask, &keys).unwrap().values,
            whole.busy_field(&mask, &keys).unwrap().values
        );
        // merged straight from the bytes: the same reductions, byte for byte
        let mut direct = reducer(true);
        feed(&mut direct, 0, 2);
        direct.merge_bytes(&second.to_bytes()).unwrap();
        assert_eq!(direct.to_bytes(), first.to_bytes());
    }

    #[test]
    fn damaged_bytes_are_an_error_at_every_cut() {
        let mut r = reducer(true);
        feed(&mut r, 0, 4);
        let bytes = r.to_bytes();
        assert!(StreamParts::from_bytes(&bytes).is_ok());
        for cut in 0..bytes.len() {
            assert!(
                StreamParts::from_bytes(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
            assert!(
                reducer(true).merge_bytes(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        // a huge count never allocates: bounded by the bytes that follow
        let mut huge = bytes.clone();
        let at = bytes.len() - 8 * (1 + 3 * r.pairs.len());
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(StreamParts::from_bytes(&huge).is_err());
        assert!(reducer(true).merge_bytes(&huge).is_err());
    }

    /// Records of `locs` locations in time order per location, with
    /// overlaps and empties, interleaved across locations; `bad` puts one
    /// record before its location's previous one.
    fn records(n: usize, locs: usize, bad: Option<usize>) -> Vec<RawInterval> {
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15u64);
        let mut rnd = move |m: u64| rng.below(m);
        let (mut t, mut last, mut last_end) =
            (vec![0u64; locs], vec![0u64; locs], vec![0u64; locs]);
        (0..n)
            .map(|i| {
                let l = rnd(locs as u64) as usize;
                // sometimes back into the previous interval (an overlap),
                // never before the previous start
                let start = t[l].saturating_sub(rnd(4) * 3).max(last[l]);
                let mut end = start + rnd(40);
                if start == last[l] {
                    end = end.max(last_end[l]);
                }
                t[l] = t[l].max(end);
                last[l] = start;
                last_end[l] = end;
                let start = if bad == Some(i) { 0 } else { start };
                RawInterval {
                    loc: l as LocId,
                    state: 1 + rnd(3) as u32,
                    start,
                    end: if bad == Some(i) { 1 } else { end },
                }
            })
            .collect()
    }

    fn reduced(
        batch: &[RawInterval],
        locs: usize,
        blocks: bool,
        threads: usize,
    ) -> (StreamReducer<'static>, Result<()>) {
        let mut r = StreamReducer::new(
            StreamSpec {
                bins: Some(7),
                comm: false,
            },
            Box::new(|_| Ok((100, 900_000))),
        );
        r.begin(locs, 1_000_000).unwrap();
        let pool = crate::test_pool::pool(threads);
        let res = pool.install(|| {
            if blocks {
                batch
                    .chunks(20_000)
                    .try_for_each(|c| r.intervals(c))
                    .map_err(Error::Invalid)
            } else {
                batch
                    .iter()
                    .try_for_each(|x| r.interval(x.loc, x.start, x.end, x.state))
                    .map_err(Error::Invalid)
            }
        });
        (r, res)
    }

    #[test]
    fn blocks_reduced_on_several_threads_equal_one_by_one() {
        // blocks put in order of location and cut into pieces of whole
        // locations for 4 threads: 37 locations, 5 (fewer buckets than
        // threads), 5,000 (buckets of several locations)
        for locs in [37, 5, 5000] {
            blocks_equal_one_by_one(locs, 4);
        }
    }

    #[test]
    fn blocks_in_order_of_location_on_one_thread_equal_one_by_one() {
        // from SORT_MIN_LOCATIONS locations one thread orders blocks too
        blocks_equal_one_by_one(SORT_MIN_LOCATIONS + 3, 1);
    }

    #[test]
    fn pieces_of_the_order_are_whole_locations_covering_the_block() {
        let locs = 5000;
        let batch = records(30_000, locs, None);
        let mut by = ByLocation::default();
        assert!(by.order(&batch, locs));
        // stable: a location's records in file order, locations rising
        let key = |&i: &u32| (batch[i as usize].loc >> by.shift, i);
        assert!(by.order.windows(2).all(|w| key(&w[0]) < key(&w[1])));
        for n in [1, 2, 3, 7, 16] {
            let pieces: Vec<&[u32]> = (0..n).map(|t| by.piece(t, n)).collect();
            let all: Vec<u32> = pieces.concat();
            assert_eq!(all, by.order, "{n} pieces cover the order once");
            for w in pieces.windows(2) {
                if let (Some(a), Some(b)) = (w[0].last(), w[1].first()) {
                    let (la, lb) = (batch[*a as usize].loc, batch[*b as usize].loc);
                    assert!(la >> by.shift < lb >> by.shift, "a bucket split");
                }
            }
            let most = pieces.iter().map(|p| p.len()).max().unwrap_or(0);
            assert!(most <= batch.len() / n + 64, "{n} pieces of about as many");
        }
        // a location out of range orders nothing
        let mut bad = batch.clone();
        bad[7].loc = locs as LocId;
        assert!(!by.order(&bad, locs));
    }

    fn blocks_equal_one_by_one(locs: usize, threads: usize) {
        let batch = records(70_000, locs, None);
        let (a, ra) = reduced(&batch, locs, false, threads);
        let (b, rb) = reduced(&batch, locs, true, threads);
        assert!(ra.is_ok() && rb.is_ok(), "{ra:?} {rb:?}");
        assert_eq!(a.overlaps(), b.overlaps());
        assert!(a.overlaps().0 > 100, "overlaps exercised");
        assert_eq!(a.end_time(), b.end_time());
        assert_eq!(a.records(), b.records());
        let keys = [(1, 0), (2, 1), (3, 2)];
        assert_eq!(
            a.state_time_per_location(&keys, 3),
            b.state_time_per_location(&keys, 3)
        );
        let mask = [true, false, true];
        assert_eq!(
            a.busy_field(&mask, &keys).unwrap().values,
            b.busy_field(&mask, &keys).unwrap().values
        );
        for (x, y) in a.moments(&mask, &keys).iter().zip(b.moments(&mask, &keys)) {
            assert_eq!(format!("{x:?}"), format!("{y:?}"));
        }
        // the first record out of order, in file order, is the one named
        let bad = records(70_000, locs, Some(50_000));
        let (_, ra) = reduced(&bad, locs, false, threads);
        let (_, rb) = reduced(&bad, locs, true, threads);
        let (ea, eb) = (ra.unwrap_err().to_string(), rb.unwrap_err().to_string());
        assert_eq!(ea, eb);
        assert!(ea.contains("time order"), "{ea}");
    }

    #[test]
    fn without_comm_no_matrix_is_kept() {
        let mut r = reducer(false);
        feed(&mut r, 0, 4);
        assert!(r.pairs.is_empty());
        assert_eq!(r.totals().messages, 3);
    }
}
