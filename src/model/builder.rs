//! Building a [`Trace`] from the raw records of a reader: sorting into the
//! columnar layout, validation and repair.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::path::PathBuf;

use rayon::prelude::*;

pub(crate) use super::event_block::{CounterBlock, EventBlock, Staged};
use super::{
    Collectives, Communicator, CounterDef, Counters, EventTypes, Events, Format, Intervals, LocId,
    Locations, Messages, StateId, StateTable, Time, TimeUnit, Trace, TraceMeta, split_at_bounds,
};
use crate::diagnostics::{Diagnostics, Position};
use crate::error::Result;

/// Location id of events that belong to no location (global markers).
pub const GLOBAL: LocId = LocId::MAX;

/// A state record as read: `[start, end)` of location `loc` in `state`
/// (a state id, or the format's own state value before states are made).
#[derive(Debug, Clone, Copy)]
pub struct RawInterval {
    pub loc: LocId,
    pub state: StateId,
    pub start: Time,
    pub end: Time,
}

/// A block of state records as a reader hands it over: records as read;
/// grouped by location (columns without the location, 20 bytes a record
/// instead of 24, and a run per location), which a reader makes in its
/// parsing threads when a block has many records per location; or packed
/// (16 bytes a record: times as 32-bit offsets), which the builder makes
/// of any block of records whose times allow it. Raw blocks are held until
/// the model is built, beside the other raw records: at 65,536 locations
/// of few records each, where blocks cannot be grouped, packing them is
/// what keeps a read's peak near the model's size.
#[derive(Debug, Clone)]
pub(crate) enum IntervalBlock {
    Records(Vec<RawInterval>),
    Grouped(GroupedIntervals),
    Packed(PackedIntervals),
}

/// A state record of a packed block: its start as an offset from the
/// block's base, and its length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackedInterval {
    loc: LocId,
    state: StateId,
    start: u32,
    len: u32,
}

const _: () = assert!(std::mem::size_of::<PackedInterval>() == 16);

/// Records whose starts lie within `u32::MAX` of the earliest (`base`) and
/// whose lengths fit in `u32` (in the trace's time unit: 4.29 s of
/// nanoseconds), in their order.
#[derive(Debug, Clone, Default)]
pub(crate) struct PackedIntervals {
    base: Time,
    recs: Vec<PackedInterval>,
}

/// The intervals of one location gathered as they come, in order, into a
/// block of its own: what [`IntervalBlock::of_location`] makes of their
/// list, without the list (24 bytes an interval, beside the block).
pub(crate) struct LocationBlock {
    loc: LocId,
    times: GroupedTimes,
    state: Vec<StateId>,
}

impl LocationBlock {
    /// A block for intervals of `loc` within `[first, last]`, about
    /// `capacity` of them: packed against `first` where that span allows.
    pub(crate) fn new(loc: LocId, (first, last): (Time, Time), capacity: usize) -> LocationBlock {
        let times = if last.saturating_sub(first) <= u32::MAX as Time {
            GroupedTimes::Packed {
                base: first,
                start: Vec::with_capacity(capacity),
                len: Vec::with_capacity(capacity),
            }
        } else {
            GroupedTimes::Full {
                start: Vec::with_capacity(capacity),
                end: Vec::with_capacity(capacity),
            }
        };
        LocationBlock {
            loc,
            times,
            state: Vec::with_capacity(capacity),
        }
    }

    /// Adds the intervals `[start, end)` of `v`, in order (within the
    /// block's span, `start <= end`), a column at a time.
    pub(crate) fn extend(&mut self, v: &[(Time, Time, StateId)]) {
        match &mut self.times {
            GroupedTimes::Packed { base, start, len } => {
                let base = *base;
                start.extend(v.iter().map(|r| r.0.saturating_sub(base) as u32));
                len.extend(v.iter().map(|r| r.1.saturating_sub(r.0) as u32));
            }
            GroupedTimes::Full { start, end } => {
                start.extend(v.iter().map(|r| r.0));
                end.extend(v.iter().map(|r| r.1));
            }
        }
        self.state.extend(v.iter().map(|r| r.2));
    }

    /// The block (none for no intervals).
    pub(crate) fn finish(mut self) -> Option<IntervalBlock> {
        let mut n = self.state.len();
        if n == 0 {
            return None;
        }
        self.times.shrink_to_fit();
        self.state.shrink_to_fit();
        // a run counts at most u32::MAX records (a block's runs may name
        // a location more than once)
        let mut runs = Vec::with_capacity(n.div_ceil(u32::MAX as usize));
        while n > 0 {
            let k = n.min(u32::MAX as usize);
            runs.push((self.loc, k as u32));
            n -= k;
        }
        Some(IntervalBlock::Grouped(GroupedIntervals {
            runs,
            times: self.times,
            state: self.state,
        }))
    }
}

impl PackedIntervals {
    /// `v` packed, unless a record ends before it starts or lies too far
    /// from the earliest start.
    fn pack(v: &[RawInterval]) -> Option<PackedIntervals> {
        let base = packed_base(v.iter().map(|r| (r.start, r.end)))?;
        let recs = v.iter().map(|r| PackedInterval::of(r, base)).collect();
        Some(PackedIntervals { base, recs })
    }
}

/// The base records of these `(start, end)` times pack against: the
/// earliest start, when every start lies within `u32::MAX` of it and every
/// length fits in `u32` (none for no records).
fn packed_base(mut times: impl Iterator<Item = (Time, Time)> + Clone) -> Option<Time> {
    let base = times.clone().map(|t| t.0).min()?;
    times
        .all(|(s, e)| s - base <= u32::MAX as Time && e >= s && e - s <= u32::MAX as Time)
        .then_some(base)
}

impl PackedInterval {
    /// `r` against `base` (its times checked by [`packed_base`]).
    #[inline(always)]
    fn of(r: &RawInterval, base: Time) -> PackedInterval {
        PackedInterval {
            loc: r.loc,
            state: r.state,
            start: (r.start - base) as u32,
            len: (r.end - r.start) as u32,
        }
    }
}

impl RawRow for PackedInterval {
    #[inline(always)]
    fn interval(&self, base: Time) -> RawInterval {
        let start = base + self.start as Time;
        RawInterval {
            loc: self.loc,
            state: self.state,
            start,
            end: start + self.len as Time,
        }
    }
}

impl RawRow for RawInterval {
    #[inline(always)]
    fn interval(&self, _base: Time) -> RawInterval {
        *self
    }
}

/// A raw record of a block of records (as read, or packed against the
/// block's base time), as the bucketing reads it.
trait RawRow: Copy + Send + Sync {
    fn interval(&self, base: Time) -> RawInterval;
}

/// Records grouped by location, in their order within each location.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupedIntervals {
    /// (location, records): by increasing location, except from
    /// [`IntervalBlock::of_runs`], whose runs come in any order (a
    /// location may have several).
    pub runs: Vec<(LocId, u32)>,
    pub times: GroupedTimes,
    pub state: Vec<StateId>,
}

impl GroupedIntervals {
    /// The intervals `(start, end, state)` of `runs` (location, intervals),
    /// one run's after another.
    fn of_flat(runs: Vec<(LocId, u32)>, flat: &[(Time, Time, StateId)]) -> GroupedIntervals {
        GroupedIntervals {
            runs,
            times: GroupedTimes::of(flat.iter().map(|r| (r.0, r.1))),
            state: flat.iter().map(|r| r.2).collect(),
        }
    }
}

/// The times of a grouped block: packed (12 bytes a record with the
/// state instead of 20) when every record allows it, as in
/// [`PackedIntervals`].
#[derive(Debug, Clone)]
pub(crate) enum GroupedTimes {
    Full {
        start: Vec<Time>,
        end: Vec<Time>,
    },
    Packed {
        base: Time,
        start: Vec<u32>,
        len: Vec<u32>,
    },
}

impl Default for GroupedTimes {
    fn default() -> Self {
        GroupedTimes::Full {
            start: Vec::new(),
            end: Vec::new(),
        }
    }
}

impl GroupedTimes {
    /// The `(start, end)` times in order, packed where they allow it.
    fn of(times: impl ExactSizeIterator<Item = (Time, Time)> + Clone) -> GroupedTimes {
        match packed_base(times.clone()) {
            Some(base) => GroupedTimes::Packed {
                base,
                start: times.clone().map(|(s, _)| (s - base) as u32).collect(),
                len: times.map(|(s, e)| (e - s) as u32).collect(),
            },
            None => GroupedTimes::Full {
                start: times.clone().map(|t| t.0).collect(),
                end: times.map(|t| t.1).collect(),
            },
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            GroupedTimes::Full { start, end } => {
                start.shrink_to_fit();
                end.shrink_to_fit();
            }
            GroupedTimes::Packed { start, len, .. } => {
                start.shrink_to_fit();
                len.shrink_to_fit();
            }
        }
    }
}

impl Default for IntervalBlock {
    fn default() -> Self {
        IntervalBlock::Records(Vec::new())
    }
}

impl IntervalBlock {
    /// `v` grouped by location (stable) when it has at least 4 records per
    /// location of `0..nloc` on average and all its locations are below
    /// `nloc`, with `v` given back (its records copied into columns, for
    /// the caller to use again); otherwise as it is.
    pub(crate) fn group(
        v: Vec<RawInterval>,
        nloc: usize,
    ) -> (IntervalBlock, Option<Vec<RawInterval>>) {
        match Self::grouped(&v, nloc) {
            Some(g) => (IntervalBlock::Grouped(g), Some(v)),
            None => Self::pack(v),
        }
    }

    /// `v` packed where its times allow, with `v` given back (its records
    /// copied, for the caller to use again); otherwise as it is.
    pub(crate) fn pack(v: Vec<RawInterval>) -> (IntervalBlock, Option<Vec<RawInterval>>) {
        match PackedIntervals::pack(&v) {
            Some(p) => (IntervalBlock::Packed(p), Some(v)),
            None => (IntervalBlock::Records(v), None),
        }
    }

    /// `v` grouped by location, unless it has fewer than 4 records per
    /// location or a location outside `0..nloc`.
    fn grouped(v: &[RawInterval], nloc: usize) -> Option<GroupedIntervals> {
        if nloc == 0 || v.len() / 4 < nloc || v.len() > u32::MAX as usize {
            return None;
        }
        let mut count = vec![0u32; nloc];
        for r in v {
            *count.get_mut(r.loc as usize)? += 1;
        }
        let mut runs = Vec::new();
        let mut at = 0u32;
        for (l, c) in count.iter_mut().enumerate() {
            if *c > 0 {
                runs.push((l as LocId, *c));
            }
            let k = *c;
            *c = at;
            at += k;
        }
        let n = v.len();
        let mut state = vec![0; n];
        let times = match packed_base(v.iter().map(|r| (r.start, r.end))) {
            Some(base) => {
                let (mut start, mut len) = (vec![0u32; n], vec![0u32; n]);
                for r in v {
                    let k = &mut count[r.loc as usize];
                    let i = *k as usize;
                    start[i] = (r.start - base) as u32;
                    len[i] = (r.end - r.start) as u32;
                    state[i] = r.state;
                    *k += 1;
                }
                GroupedTimes::Packed { base, start, len }
            }
            None => {
                let (mut start, mut end) = (vec![0; n], vec![0; n]);
                for r in v {
                    let k = &mut count[r.loc as usize];
                    let i = *k as usize;
                    start[i] = r.start;
                    end[i] = r.end;
                    state[i] = r.state;
                    *k += 1;
                }
                GroupedTimes::Full { start, end }
            }
        };
        Some(GroupedIntervals { runs, times, state })
    }

    /// A copy of `v`, of exactly its size, as runs of consecutive records
    /// of one location (which need not be sorted or distinct) where these
    /// average at least 4 records; otherwise as records.
    pub(crate) fn of_runs(v: &[RawInterval]) -> IntervalBlock {
        let mut runs: Vec<(LocId, u32)> = Vec::new();
        for r in v {
            match runs.last_mut() {
                Some((l, k)) if *l == r.loc && *k < u32::MAX => *k += 1,
                _ => {
                    if (runs.len() + 1) * 4 > v.len() {
                        return match PackedIntervals::pack(v) {
                            Some(p) => IntervalBlock::Packed(p),
                            None => IntervalBlock::Records(v.to_vec()),
                        };
                    }
                    runs.push((r.loc, 1));
                }
            }
        }
        IntervalBlock::Grouped(GroupedIntervals {
            runs,
            times: GroupedTimes::of(v.iter().map(|r| (r.start, r.end))),
            state: v.iter().map(|r| r.state).collect(),
        })
    }

    /// The intervals `(start, end, state)` of `runs` (location, intervals:
    /// the first run's intervals first) as one block: what
    /// [`Self::of_runs`] makes of them as records, without the list of
    /// records (each location given once a run, where the records give it
    /// once each).
    pub(crate) fn of_flat_runs(
        runs: &[(LocId, u32)],
        flat: &[(Time, Time, StateId)],
    ) -> IntervalBlock {
        // consecutive runs of one location as one
        let mut merged: Vec<(LocId, u32)> = Vec::with_capacity(runs.len());
        for &(loc, n) in runs.iter().filter(|r| r.1 > 0) {
            match merged.last_mut() {
                Some((l, k)) if *l == loc && k.checked_add(n).is_some() => *k += n,
                _ => merged.push((loc, n)),
            }
        }
        debug_assert_eq!(runs.iter().map(|r| r.1 as usize).sum::<usize>(), flat.len());
        if merged.len() * 4 > flat.len() {
            // few intervals a location: as records (packed where they fit)
            let locs = runs
                .iter()
                .flat_map(|&(loc, n)| std::iter::repeat_n(loc, n as usize));
            let v: Vec<RawInterval> = locs
                .zip(flat)
                .map(|(loc, &(start, end, state))| RawInterval {
                    loc,
                    state,
                    start,
                    end,
                })
                .collect();
            return IntervalBlock::of_runs(&v);
        }
        IntervalBlock::Grouped(GroupedIntervals::of_flat(merged, flat))
    }

    /// The intervals `(start, end, state)` of one location, as one run.
    pub(crate) fn of_location(loc: LocId, flat: &[(Time, Time, StateId)]) -> IntervalBlock {
        if flat.len() > u32::MAX as usize {
            let v = flat
                .iter()
                .map(|&(start, end, state)| RawInterval {
                    loc,
                    state,
                    start,
                    end,
                })
                .collect();
            return IntervalBlock::Records(v);
        }
        let runs = if flat.is_empty() {
            Vec::new()
        } else {
            vec![(loc, flat.len() as u32)]
        };
        IntervalBlock::Grouped(GroupedIntervals::of_flat(runs, flat))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            IntervalBlock::Records(v) => v.len(),
            IntervalBlock::Grouped(g) => g.state.len(),
            IntervalBlock::Packed(p) => p.recs.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes its records take (their rows; what freeing it frees).
    fn bytes(&self) -> usize {
        match self {
            IntervalBlock::Records(v) => std::mem::size_of_val(v.as_slice()),
            IntervalBlock::Grouped(g) => {
                let times = match &g.times {
                    GroupedTimes::Full { start, end } => {
                        std::mem::size_of_val(start.as_slice())
                            + std::mem::size_of_val(end.as_slice())
                    }
                    GroupedTimes::Packed { start, len, .. } => {
                        std::mem::size_of_val(start.as_slice())
                            + std::mem::size_of_val(len.as_slice())
                    }
                };
                std::mem::size_of_val(g.runs.as_slice())
                    + times
                    + std::mem::size_of_val(g.state.as_slice())
            }
            IntervalBlock::Packed(p) => std::mem::size_of_val(p.recs.as_slice()),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            IntervalBlock::Records(v) => v.shrink_to_fit(),
            IntervalBlock::Grouped(g) => {
                g.runs.shrink_to_fit();
                g.times.shrink_to_fit();
                g.state.shrink_to_fit();
            }
            IntervalBlock::Packed(p) => p.recs.shrink_to_fit(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RawEvent {
    pub time: Time,
    pub loc: LocId,
    pub kind: u32,
    pub value: i64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RawMessage {
    pub send: Time,
    pub recv: Time,
    pub bytes: u64,
    pub tag: i64,
    pub src: LocId,
    pub dst: LocId,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RawCounter {
    pub time: Time,
    pub value: f64,
    pub loc: LocId,
    pub counter: u32,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RawCollective {
    pub begin: Time,
    pub end: Time,
    pub sent: u64,
    pub received: u64,
    pub comm: i64,
    pub root: i64,
    pub loc: LocId,
    pub op: u32,
}

/// Options of [`TraceBuilder::finish`].
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildOptions {
    /// Report state records whose start goes back in time on their location
    /// (in the order they were added) as repaired damage. Formats whose
    /// records are not required to be in time order leave this off.
    pub warn_unsorted: bool,
}

/// Collects raw records and tables, then builds the columnar [`Trace`].
#[derive(Debug)]
pub struct TraceBuilder {
    pub(crate) format: Format,
    pub(crate) source: PathBuf,
    pub(crate) time_unit: TimeUnit,
    pub(crate) origin_ns: i64,
    pub(crate) declared_end: Time,
    pub locations: Locations,
    pub states: StateTable,
    pub event_types: EventTypes,
    pub counter_defs: Vec<CounterDef>,
    /// `counter_defs` by name (interning in O(1)).
    counter_index: HashMap<String, u32>,
    pub collective_ops: Vec<String>,
    /// `collective_ops` by name.
    collective_index: HashMap<String, u32>,
    pub communicators: Vec<Communicator>,
    pub(crate) intervals: Vec<RawInterval>,
    /// Intervals added a block at a time ([`TraceBuilder::add_intervals`],
    /// [`TraceBuilder::add_interval_block`]), kept as they came: never
    /// copied into one growing vector.
    pub(crate) interval_chunks: Vec<IntervalBlock>,
    pub(crate) events: Vec<RawEvent>,
    /// Events added a block at a time ([`TraceBuilder::add_event_block`]),
    /// each in the fewest bytes; before `events` in the order of records.
    pub(crate) event_blocks: Vec<EventBlock>,
    pub(crate) messages: Vec<RawMessage>,
    pub(crate) counters: Vec<RawCounter>,
    /// Counter samples added a block at a time
    /// ([`TraceBuilder::add_counter_block`]); before `counters` in the
    /// order of records.
    pub(crate) counter_blocks: Vec<CounterBlock>,
    pub(crate) collectives: Vec<RawCollective>,
    pub(crate) ignored: Vec<(String, u64)>,
    pub diagnostics: Diagnostics,
}

impl TraceBuilder {
    pub fn new(
        format: Format,
        source: impl Into<PathBuf>,
        time_unit: TimeUnit,
        strict: bool,
    ) -> Self {
        TraceBuilder {
            format,
            source: source.into(),
            time_unit,
            origin_ns: 0,
            declared_end: 0,
            locations: Locations::default(),
            states: StateTable::new(),
            event_types: EventTypes::default(),
            counter_defs: Vec::new(),
            counter_index: HashMap::new(),
            collective_ops: Vec::new(),
            collective_index: HashMap::new(),
            communicators: Vec::new(),
            intervals: Vec::new(),
            interval_chunks: Vec::new(),
            events: Vec::new(),
            event_blocks: Vec::new(),
            messages: Vec::new(),
            counters: Vec::new(),
            counter_blocks: Vec::new(),
            collectives: Vec::new(),
            ignored: Vec::new(),
            diagnostics: Diagnostics::new(strict),
        }
    }

    /// Sets the absolute time (ns in the source clock) of time 0.
    pub fn set_origin(&mut self, origin_ns: i64) {
        self.origin_ns = origin_ns;
    }

    /// Sets the end time the file declares (Paraver header).
    pub fn set_declared_end(&mut self, end: Time) {
        self.declared_end = end;
    }

    /// Adds a state interval `[start, end)`; empty intervals are dropped.
    pub fn interval(&mut self, loc: LocId, start: Time, end: Time, state: StateId) {
        self.intervals.push(RawInterval {
            loc,
            state,
            start,
            end,
        });
    }

    /// ", the first at location NAME, T ns from the trace start" for
    /// repair messages of records the builder reorders (it keeps no line
    /// numbers).
    fn where_(&self, first: Option<(usize, Time)>) -> String {
        match first {
            Some((l, t)) => format!(
                ", the first at location '{}', {t} ns from the trace start",
                self.locations
                    .get(l as LocId)
                    .map_or("?", |x| x.name.as_str()),
            ),
            None => String::new(),
        }
    }

    /// Reports `overlaps` state intervals clipped where they overlapped an
    /// earlier interval of their location, the first at the lowest such
    /// location (index, time); an error in strict mode.
    pub(crate) fn overlaps_clipped(
        &mut self,
        overlaps: u64,
        first: Option<(usize, Time)>,
    ) -> Result<()> {
        let at = self.where_(first);
        let src = self.source.clone();
        self.diagnostics
            .repair("overlapping-states", &src, Position::none(), overlaps, || {
                format!("{overlaps} state interval(s) overlap an earlier interval of the same location{at}; clipped")
            })
    }

    /// Adds an instant event; `loc` may be [`GLOBAL`].
    pub fn event(&mut self, loc: LocId, time: Time, kind: u32, value: i64) {
        self.events.push(RawEvent {
            time,
            loc,
            kind,
            value,
        });
    }

    /// Adds a message.
    pub fn message(
        &mut self,
        src: LocId,
        dst: LocId,
        send: Time,
        recv: Time,
        bytes: u64,
        tag: i64,
    ) {
        self.messages.push(RawMessage {
            send,
            recv,
            bytes,
            tag,
            src,
            dst,
        });
    }

    /// Adds messages made in bulk (a reader's matched pairs), in any
    /// order: the build sorts them. The first list is taken as it is.
    pub(crate) fn add_messages(&mut self, v: Vec<RawMessage>) {
        append(&mut self.messages, v);
    }

    /// Adds events, in order after those added before (`v` taken as the
    /// list when there is none yet: no copy).
    #[cfg(test)]
    pub(crate) fn add_events(&mut self, v: Vec<RawEvent>) {
        append(&mut self.events, v);
    }

    /// Adds a block of events, in order after the blocks added before (and
    /// before the events added one at a time or as a list).
    pub(crate) fn add_event_block(&mut self, b: EventBlock) {
        if b.len() > 0 {
            self.event_blocks.push(b);
        }
    }

    /// Adds a block of counter samples, in order after the blocks added
    /// before (and before the samples added one at a time or as a list).
    pub(crate) fn add_counter_block(&mut self, b: CounterBlock) {
        if b.len() > 0 {
            self.counter_blocks.push(b);
        }
    }

    /// The location of every raw event (the global ones included).
    pub(crate) fn raw_event_locations(&self, mut f: impl FnMut(LocId)) {
        for b in &self.event_blocks {
            b.each_location(&mut f);
        }
        self.events.iter().for_each(|e| f(e.loc));
    }

    /// Maps the type of every raw event with `f`.
    pub(crate) fn map_raw_event_kinds(&mut self, f: impl Fn(u32) -> u32 + Sync) {
        self.event_blocks
            .par_iter_mut()
            .for_each(|b| b.map_kinds(&f));
        self.events.par_iter_mut().for_each(|e| e.kind = f(e.kind));
    }

    /// Adds counter samples, in order after those added before (`v` taken
    /// as the list when there is none yet: no copy).
    #[cfg(test)]
    pub(crate) fn add_counters(&mut self, v: Vec<RawCounter>) {
        append(&mut self.counters, v);
    }

    /// Adds a counter sample.
    pub fn counter(&mut self, loc: LocId, counter: u32, time: Time, value: f64) {
        self.counters.push(RawCounter {
            time,
            value,
            loc,
            counter,
        });
    }

    /// Interns a counter definition by name.
    pub fn counter_def(&mut self, name: &str, unit: &str) -> u32 {
        if let Some(&i) = self.counter_index.get(name) {
            return i;
        }
        self.counter_defs.push(CounterDef {
            name: name.to_string(),
            unit: unit.to_string(),
        });
        let i = (self.counter_defs.len() - 1) as u32;
        self.counter_index.insert(name.to_string(), i);
        i
    }

    /// Interns a collective operation name.
    pub fn collective_op(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.collective_index.get(name) {
            return i;
        }
        self.collective_ops.push(name.to_string());
        let i = (self.collective_ops.len() - 1) as u32;
        self.collective_index.insert(name.to_string(), i);
        i
    }

    /// Adds a participation in a collective operation.
    #[allow(clippy::too_many_arguments)]
    pub fn collective(
        &mut self,
        loc: LocId,
        begin: Time,
        end: Time,
        comm: i64,
        op: u32,
        sent: u64,
        received: u64,
        root: i64,
    ) {
        self.collectives.push(RawCollective {
            begin,
            end,
            sent,
            received,
            comm,
            root,
            loc,
            op,
        });
    }

    /// Counts records of a kind the model does not hold.
    pub fn ignore(&mut self, kind: &str, count: u64) {
        if let Some(e) = self.ignored.iter_mut().find(|(k, _)| k == kind) {
            e.1 += count;
        } else {
            self.ignored.push((kind.to_string(), count));
        }
    }

    /// Adds a block of state intervals (a parsed block of a file), in
    /// order after those added before.
    #[cfg(test)]
    pub(crate) fn add_intervals(&mut self, chunk: Vec<RawInterval>) {
        self.add_interval_block(IntervalBlock::Records(chunk));
    }

    /// Adds a block of state intervals in either form, in order after those
    /// added before.
    pub(crate) fn add_interval_block(&mut self, mut block: IntervalBlock) {
        if block.is_empty() {
            return;
        }
        if !self.intervals.is_empty() {
            let single = std::mem::take(&mut self.intervals);
            self.interval_chunks.push(IntervalBlock::Records(single));
        }
        // kept until the model is built: packed where it can be, else
        // without its growth slack (a shrink in place, no copy)
        if let IntervalBlock::Records(v) = block {
            block = IntervalBlock::pack(v).0;
        }
        block.shrink_to_fit();
        self.interval_chunks.push(block);
    }

    /// The location of every raw interval so far (those of a grouped block
    /// once per run).
    pub(crate) fn raw_locations(&self) -> impl Iterator<Item = LocId> + '_ {
        self.interval_chunks
            .iter()
            .flat_map(|b| -> Box<dyn Iterator<Item = LocId> + '_> {
                match b {
                    IntervalBlock::Records(v) => Box::new(v.iter().map(|r| r.loc)),
                    IntervalBlock::Grouped(g) => Box::new(g.runs.iter().map(|r| r.0)),
                    IntervalBlock::Packed(p) => Box::new(p.recs.iter().map(|r| r.loc)),
                }
            })
            .chain(self.intervals.iter().map(|r| r.loc))
    }

    /// Renumbers the location of every raw record (intervals, events but
    /// the global ones, messages, counters, collectives) with `f` (the
    /// runs of a grouped block need not stay in the order of locations).
    pub(crate) fn renumber_raw_locations(&mut self, f: impl Fn(&mut LocId) + Sync) {
        each_block(&mut self.interval_chunks, |b, par| match b {
            IntervalBlock::Records(v) => for_each(v, par, |r| f(&mut r.loc)),
            IntervalBlock::Grouped(g) => g.runs.iter_mut().for_each(|r| f(&mut r.0)),
            IntervalBlock::Packed(p) => for_each(&mut p.recs, par, |r| f(&mut r.loc)),
        });
        self.intervals.par_iter_mut().for_each(|r| f(&mut r.loc));
        self.events
            .par_iter_mut()
            .filter(|r| r.loc != GLOBAL)
            .for_each(|r| f(&mut r.loc));
        self.event_blocks.par_iter_mut().for_each(|b| {
            b.map_locations(|mut l| {
                if l != GLOBAL {
                    f(&mut l);
                }
                l
            })
        });
        self.messages.par_iter_mut().for_each(|m| {
            f(&mut m.src);
            f(&mut m.dst);
        });
        self.counters.par_iter_mut().for_each(|c| f(&mut c.loc));
        self.counter_blocks.par_iter_mut().for_each(|b| {
            b.rows_mut().map_locations(|mut l| {
                f(&mut l);
                l
            })
        });
        self.collectives.par_iter_mut().for_each(|c| f(&mut c.loc));
    }

    /// Maps the state of every raw interval with `f`.
    pub(crate) fn map_raw_states(&mut self, f: impl Fn(StateId) -> StateId + Sync) {
        each_block(&mut self.interval_chunks, |b, par| match b {
            IntervalBlock::Records(v) => for_each(v, par, |r| r.state = f(r.state)),
            IntervalBlock::Grouped(g) => for_each(&mut g.state, par, |s| *s = f(*s)),
            IntervalBlock::Packed(p) => for_each(&mut p.recs, par, |r| r.state = f(r.state)),
        });
        self.intervals
            .par_iter_mut()
            .for_each(|r| r.state = f(r.state));
    }

    /// Number of state records collected so far.
    pub fn num_raw_intervals(&self) -> usize {
        self.intervals.len()
            + self
                .interval_chunks
                .iter()
                .map(IntervalBlock::len)
                .sum::<usize>()
    }

    /// Sorts, validates and repairs, and returns the trace.
    ///
    /// The tables whose records take less room in the model than as they
    /// came (events and counter samples: 24 bytes a record, 20 in the
    /// columns; messages) are built first, the intervals (12 to 16 bytes
    /// a record in their blocks, 20 in the columns) last: each table's
    /// records and columns then sit beside the others' smaller form (the
    /// build of a Chrome trace of 1.2 M slices and 2.4 M counter samples
    /// peaked at 1.33x its model with the intervals first, at 1.19x with
    /// them last).
    pub fn finish(mut self, opts: BuildOptions) -> Result<Trace> {
        let nloc = self.locations.len();
        {
            let _step = crate::phases::span("build: memory given back");
            // the raw records grew by doubling: up to half of each is
            // spare room (32 MB of messages at 65,536 PICL processors),
            // given back before the columns come (a large block shrinks
            // in place)
            self.messages.shrink_to_fit();
            self.events.shrink_to_fit();
            self.counters.shrink_to_fit();
            self.collectives.shrink_to_fit();
            // the blocks freed while reading leave before the columns come,
            // and so does the read's code (the build runs little of it)
            crate::memory::return_freed_memory();
            crate::memory::unmap_code();
        }
        let (events, t_events) = {
            let _phase = crate::phases::span("build: events");
            self.events_by_location(nloc)
        };
        let (messages, t_messages) = {
            let _phase = crate::phases::span("build: messages");
            self.messages_in_order()
        };
        let (counters, t_counters) = {
            let _phase = crate::phases::span("build: counters");
            self.counters_by_location(nloc)
        };
        let (intervals, t_intervals) = {
            let _phase = crate::phases::span("build: intervals");
            self.intervals_by_location(nloc, opts)?
        };
        let mut max_time = [t_events, t_messages, t_counters, t_intervals]
            .into_iter()
            .max()
            .unwrap_or(0);
        let _phase = crate::phases::span("build: collectives");
        let mut co = std::mem::take(&mut self.collectives);
        co.par_sort_by_key(|c| (c.begin, c.loc));
        let mut collectives = Collectives {
            ops: std::mem::take(&mut self.collective_ops),
            ..Default::default()
        };
        for c in &co {
            collectives.loc.push(c.loc);
            collectives.begin.push(c.begin);
            collectives.end.push(c.end);
            collectives.comm.push(c.comm);
            collectives.op.push(c.op);
            collectives.sent.push(c.sent);
            collectives.received.push(c.received);
            collectives.root.push(c.root);
            max_time = max_time.max(c.end);
        }

        Ok(Trace {
            meta: TraceMeta {
                format: self.format,
                source: self.source,
                time_unit: self.time_unit,
                origin_ns: self.origin_ns,
                span: max_time.max(self.declared_end),
                ignored: self.ignored,
                diagnostics: self.diagnostics,
            },
            locations: self.locations,
            states: self.states,
            intervals,
            event_types: self.event_types,
            events,
            messages,
            counters,
            collectives,
            communicators: self.communicators,
        })
    }

    /// The state intervals as columns by location, each location's sorted,
    /// overlaps clipped and empty intervals dropped (repairs reported);
    /// and the latest time.
    fn intervals_by_location(
        &mut self,
        nloc: usize,
        opts: BuildOptions,
    ) -> Result<(Intervals, Time)> {
        let src = self.source.clone();
        // bucket by location (stable, O(N)), in parallel, freeing the raw
        // blocks as they are copied: records mostly arrive in time order,
        // so each location's run is usually sorted
        let single = std::mem::take(&mut self.intervals);
        let mut blocks = std::mem::take(&mut self.interval_chunks);
        blocks.push(IntervalBlock::Records(single));
        let n_raw: usize = blocks.iter().map(IntervalBlock::len).sum();
        let step = crate::phases::span("build: intervals: bucketed");
        let (mut offsets, mut start, mut end, mut state) =
            bucket_by_location(blocks, nloc, (n_raw / 32).max(256 << 10));
        drop(step);
        let step = crate::phases::span("build: intervals: runs sorted and clipped");
        // per location, in parallel, a chunk of locations at a time: sort
        // the runs that are not in order (counting them), clip overlaps and
        // drop empty intervals, keeping each location's result at the front
        // of its run. Only the intervals kept per location outlive a chunk
        // (a list of every location's slices and results took 112 bytes a
        // location, 7 MB at 65,536, at a read's peak)
        let mut kept: Vec<usize> = Vec::with_capacity(nloc);
        let (mut unsorted, mut overlaps, mut max_time) = (0u64, 0u64, 0 as Time);
        let (mut first_unsorted, mut first_overlap) = (None, None);
        {
            let (mut s, mut e, mut st) = (&mut start[..], &mut end[..], &mut state[..]);
            let mut l0 = 0;
            while l0 < nloc {
                let l1 = (l0 + RUN_CHUNK).min(nloc);
                let mut slices = Vec::with_capacity(l1 - l0);
                for l in l0..l1 {
                    let k = (offsets[l + 1] - offsets[l]) as usize;
                    let (s0, s1) = std::mem::take(&mut s).split_at_mut(k);
                    let (e0, e1) = std::mem::take(&mut e).split_at_mut(k);
                    let (t0, t1) = std::mem::take(&mut st).split_at_mut(k);
                    slices.push((s0, e0, t0));
                    (s, e, st) = (s1, e1, t1);
                }
                let runs: Vec<Run> = slices
                    .into_par_iter()
                    .map(|(s, e, st)| clean_run(s, e, st))
                    .collect();
                for (l, r) in (l0..).zip(&runs) {
                    kept.push(r.kept);
                    unsorted += r.unsorted;
                    overlaps += r.overlaps;
                    max_time = max_time.max(r.max_time);
                    if first_unsorted.is_none() {
                        first_unsorted = r.first_unsorted.map(|t| (l, t));
                    }
                    if first_overlap.is_none() {
                        first_overlap = r.first_overlap.map(|t| (l, t));
                    }
                }
                l0 = l1;
            }
        }
        drop(step);
        if opts.warn_unsorted {
            let at = self.where_(first_unsorted);
            self.diagnostics.repair("unsorted", &src, Position::none(), unsorted, || {
                format!("{unsorted} state record(s) start before an earlier record of the same location{at}; sorted by time")
            })?;
        }
        // compact: only when some location dropped intervals
        if kept
            .iter()
            .enumerate()
            .any(|(l, &k)| k as u64 != offsets[l + 1] - offsets[l])
        {
            let mut w = 0usize;
            for (l, &k) in kept.iter().enumerate() {
                let a = offsets[l] as usize;
                start.copy_within(a..a + k, w);
                end.copy_within(a..a + k, w);
                state.copy_within(a..a + k, w);
                offsets[l] = w as u64;
                w += k;
            }
            offsets[nloc] = w as u64;
            start.truncate(w);
            end.truncate(w);
            state.truncate(w);
        }
        drop(kept);
        self.overlaps_clipped(overlaps, first_overlap)?;
        Ok((
            Intervals::from_columns(offsets, start, end, state),
            max_time,
        ))
    }

    /// The events as columns by location (global last), then time,
    /// stable; and the latest time.
    fn events_by_location(&mut self, nloc: usize) -> (Events, Time) {
        if !self.event_blocks.is_empty() {
            return self.events_of_blocks(nloc);
        }
        let mut ev = std::mem::take(&mut self.events);
        let key = |l: LocId| if l == GLOBAL { nloc } else { l as usize };
        ev.retain(|e| key(e.loc) <= nloc);
        let columns = |e: &RawEvent| ((e.time, e.kind, e.value), e.time);
        let ((time, kind, value), offsets, latest) =
            if ev.is_sorted_by_key(|e| (key(e.loc), e.time)) {
                let offsets = offsets_of(ev.iter().map(|e| key(e.loc)), nloc + 1);
                let (c, latest) = into_three_columns(ev, columns);
                (c, offsets, latest)
            } else {
                bucket_into_three_columns(ev, nloc + 1, |e| key(e.loc), columns, |t, _| *t, None)
            };
        let events = Events {
            offsets,
            time,
            kind,
            value,
        };
        (events, latest)
    }

    /// [`TraceBuilder::events_by_location`] of events added in blocks
    /// (and any added one at a time after them): the blocks unpacked one at
    /// a time, from the last, into the columns by location, each freed
    /// once moved (the columns fill as the blocks go).
    fn events_of_blocks(&mut self, nloc: usize) -> (Events, Time) {
        let mut blocks = std::mem::take(&mut self.event_blocks);
        let rest = std::mem::take(&mut self.events);
        blocks.extend(rest.chunks(1 << 16).map(EventBlock::pack));
        drop(rest);
        let key = |l: LocId| if l == GLOBAL { nloc } else { l as usize };
        // slot `s`'s count at `offsets[s + 1]`, then the sums; a location
        // past the table's (none reads so) is counted past the slots and
        // left out
        let mut offsets = vec![0u64; nloc + 3];
        for b in &blocks {
            b.each_location(|l| offsets[key(l).min(nloc + 1) + 1] += 1);
        }
        offsets.pop();
        counts_into_offsets(&mut offsets);
        let columns = |e: &RawEvent| ((e.time, e.kind, e.value), e.time);
        let batches = |put: &mut dyn FnMut(&[RawEvent]) -> Time| {
            drain_blocks(
                blocks,
                EventBlock::row_bytes,
                |b, out| b.unpack_into(out),
                |e| key(e.loc) <= nloc,
                put,
            )
        };
        let ((time, kind, value), offsets, latest) = bucket_batches_into_three_columns(
            offsets,
            batches,
            |e| key(e.loc),
            columns,
            |t, _| *t,
            None,
        );
        let events = Events {
            offsets,
            time,
            kind,
            value,
        };
        (events, latest)
    }

    /// The messages as columns in their order; and the latest time.
    fn messages_in_order(&mut self) -> (Messages, Time) {
        // messages: by send time, receive time, sender, receiver, bytes,
        // tag (a total order: sorted in place, without a copy)
        let mut ms = std::mem::take(&mut self.messages);
        let by = |m: &RawMessage| (m.send, m.recv, m.src, m.dst, m.bytes, m.tag);
        let step = crate::phases::span("build: messages: sorted");
        if !ms.is_sorted_by_key(by) {
            super::nearly_sorted::par_sort_nearly_sorted_by_key(&mut ms, by);
        }
        drop(step);
        let n = ms.len();
        let (mut sender, mut receiver) = (Unfilled::huge(n), Unfilled::huge(n));
        let (mut send_time, mut recv_time) = (Unfilled::huge(n), Unfilled::huge(n));
        let (mut bytes, mut tag) = (Unfilled::huge(n), Unfilled::huge(n));
        let latest = into_columns(ms, |r, at| {
            (
                r.par_chunks(COLUMN_CHUNK),
                sender.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
                receiver.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
                send_time.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
                recv_time.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
                bytes.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
                tag.rows(at).par_chunks_mut(COLUMN_CHUNK),
            )
                .into_par_iter()
                .map(|(r, src, dst, send, recv, bytes, tag)| {
                    let mut t = 0;
                    for (i, m) in r.iter().enumerate() {
                        src[i].write(m.src);
                        dst[i].write(m.dst);
                        send[i].write(m.send);
                        recv[i].write(m.recv);
                        bytes[i].write(m.bytes);
                        tag[i].write(m.tag);
                        t = t.max(m.recv).max(m.send);
                    }
                    t
                })
                .max()
                .unwrap_or(0)
        });
        // SAFETY: as in `into_three_columns`, every row of 0..n was written
        let messages = unsafe {
            Messages {
                sender: sender.filled(),
                receiver: receiver.filled(),
                send_time: send_time.filled(),
                recv_time: recv_time.filled(),
                bytes: bytes.filled(),
                tag: tag.filled(),
            }
        };
        (messages, latest)
    }

    /// The counter samples as columns by location, counter and time,
    /// stable; and the latest time.
    fn counters_by_location(&mut self, nloc: usize) -> (Counters, Time) {
        if !self.counter_blocks.is_empty() {
            return self.counters_of_blocks(nloc);
        }
        // counters: by location, counter, time, stable; a location beyond
        // the trace's is left out
        let mut cs = std::mem::take(&mut self.counters);
        cs.retain(|c| (c.loc as usize) < nloc);
        let columns = |c: &RawCounter| ((c.counter, c.time, c.value), c.time);
        let ((counter, time, value), offsets, latest) =
            if cs.is_sorted_by_key(|c| (c.loc, c.counter, c.time)) {
                let offsets = offsets_of(cs.iter().map(|c| c.loc as usize), nloc);
                let (c, latest) = into_three_columns(cs, columns);
                (c, offsets, latest)
            } else {
                // by location and counter where that takes less room: then
                // each slot's samples come in time order, and a location's
                // counters interleaved in the file need no sort after the
                // move (sorted, a location's order is sorted, 6 bytes a
                // row with the sort's buffer, and each column put in it
                // through a copy, on each thread); but
                // each slot has a page of each column partly written while
                // the records move (512 slots: 6 MiB)
                let kinds = cs.iter().map(|c| c.counter as usize + 1).max().unwrap_or(1);
                // (weighed only where there are several counters)
                let largest = || {
                    offsets_of(cs.iter().map(|c| c.loc as usize), nloc)
                        .windows(2)
                        .map(|w| (w[1] - w[0]) as usize)
                        .max()
                        .unwrap_or(0)
                };
                match fine_counter_slots(nloc, kinds, largest) {
                    Some(fine) => {
                        let (c, fine_offsets, latest) = bucket_into_three_columns(
                            cs,
                            fine,
                            |c| c.loc as usize * kinds + c.counter as usize,
                            columns,
                            |k, t| (*k, *t),
                            None,
                        );
                        let offsets = fine_offsets.iter().copied().step_by(kinds).collect();
                        (c, offsets, latest)
                    }
                    _ => bucket_into_three_columns(
                        cs,
                        nloc,
                        |c| c.loc as usize,
                        columns,
                        |k, t| (*k, *t),
                        Some((kinds, counter_group)),
                    ),
                }
            };
        let counters = Counters {
            defs: std::mem::take(&mut self.counter_defs),
            offsets,
            counter,
            time,
            value,
        };
        (counters, latest)
    }

    /// [`TraceBuilder::counters_by_location`] of samples added in blocks
    /// (and any added one at a time after them), as
    /// [`TraceBuilder::events_of_blocks`] builds the events.
    fn counters_of_blocks(&mut self, nloc: usize) -> (Counters, Time) {
        let mut blocks = std::mem::take(&mut self.counter_blocks);
        let rest = std::mem::take(&mut self.counters);
        blocks.extend(rest.chunks(1 << 16).map(CounterBlock::pack));
        drop(rest);
        // the samples of each location (at `per_loc[l + 1]`; those past
        // the table's counted past it), and the counters
        let mut per_loc = vec![0u64; nloc + 2];
        let mut kinds = 1;
        for b in &blocks {
            b.each_location_counter(|l, c| {
                let l = (l as usize).min(nloc);
                per_loc[l + 1] += 1;
                if l < nloc {
                    kinds = kinds.max(c as usize + 1);
                }
            });
        }
        per_loc.pop();
        let largest = || per_loc.iter().copied().max().unwrap_or(0) as usize;
        let fine = fine_counter_slots(nloc, kinds, largest);
        let offsets = match fine {
            Some(fine) => {
                drop(per_loc);
                let mut offsets = vec![0u64; fine + 1];
                for b in &blocks {
                    b.each_location_counter(|l, c| {
                        if (l as usize) < nloc {
                            offsets[l as usize * kinds + c as usize + 1] += 1;
                        }
                    });
                }
                counts_into_offsets(&mut offsets);
                offsets
            }
            None => {
                counts_into_offsets(&mut per_loc);
                per_loc
            }
        };
        let columns = |c: &RawCounter| ((c.counter, c.time, c.value), c.time);
        let batches = |put: &mut dyn FnMut(&[RawCounter]) -> Time| {
            let mut buf = Vec::new();
            drain_blocks(
                blocks,
                CounterBlock::row_bytes,
                |b, out| b.unpack_into(out, &mut buf),
                |c| (c.loc as usize) < nloc,
                put,
            )
        };
        let slot = |c: &RawCounter| match fine {
            Some(_) => c.loc as usize * kinds + c.counter as usize,
            None => c.loc as usize,
        };
        let ((counter, time, value), offsets, latest) = bucket_batches_into_three_columns(
            offsets,
            batches,
            slot,
            columns,
            |k, t| (*k, *t),
            fine.is_none()
                .then_some((kinds, counter_group as fn(&u32) -> usize)),
        );
        let offsets = match fine {
            Some(_) => offsets.iter().copied().step_by(kinds).collect(),
            None => offsets,
        };
        let counters = Counters {
            defs: std::mem::take(&mut self.counter_defs),
            offsets,
            counter,
            time,
            value,
        };
        (counters, latest)
    }
}

/// A counter sample's group before its slot's rows are sorted (by
/// counter, then time): its counter.
fn counter_group(counter: &u32) -> usize {
    *counter as usize
}

/// The slots of (location, counter) (their number) where bucketing the
/// samples by them takes less room than by location and sorting each
/// location's (`largest`: the most samples of a location); `None` where
/// not, or with one counter.
///
/// By location and counter, each slot's samples come in time order, and a
/// location's counters interleaved in the file need no sort after the
/// move (sorted, a location's order is sorted, 6 bytes a row with the
/// sort's buffer, and each column put in it through a copy, on each
/// thread); but each slot has a page of each column partly written while
/// the records move (512 slots: 6 MiB).
fn fine_counter_slots(nloc: usize, kinds: usize, largest: impl FnOnce() -> usize) -> Option<usize> {
    let page = 3 * 4096;
    let fine = nloc.checked_mul(kinds)?;
    if kinds < 2 {
        return None;
    }
    let sorting = nloc.saturating_mul(page).saturating_add(
        (rayon::current_num_threads().clamp(1, nloc.max(1)))
            .saturating_mul(largest())
            .saturating_mul(6 + std::mem::size_of::<Time>()),
    );
    (fine.saturating_mul(page) < sorting).then_some(fine)
}

/// Hands the records of `blocks` to `put` a block at a time, from the last
/// block to the first, each unpacked (`unpack`) and freed before its
/// records (those `keep` keeps) are put; the latest time `put` returns.
/// The freed blocks go back to the system as the columns grow (in the
/// reading threads' heaps, they stayed resident beside the columns: 1.6x
/// the model of a trace that is mostly events), each time a sixteenth of
/// them (at least 1 MiB) is freed: at most sixteen trims, 13 ms each at 16
/// threads.
fn drain_blocks<B, R>(
    mut blocks: Vec<B>,
    bytes: impl Fn(&B) -> usize,
    mut unpack: impl FnMut(&B, &mut Vec<R>),
    keep: impl Fn(&R) -> bool,
    put: &mut dyn FnMut(&[R]) -> Time,
) -> Time {
    let total: usize = blocks.iter().map(&bytes).sum();
    let trim_at = (total / 16).max(1 << 20);
    let (mut buf, mut latest, mut freed) = (Vec::new(), 0, 0);
    while let Some(b) = blocks.pop() {
        unpack(&b, &mut buf);
        freed += bytes(&b);
        drop(b);
        buf.retain(&keep);
        latest = latest.max(put(&buf));
        if freed >= trim_at {
            crate::memory::return_freed_memory();
            freed = 0;
        }
    }
    latest
}

/// `v` after the records of `list`: taken as the list when that is empty
/// (no copy), else copied on ([`append_mapped`]).
fn append<T: Copy>(list: &mut Vec<T>, v: Vec<T>) {
    if list.is_empty() {
        *list = v;
    } else {
        append_mapped(list, v, |x| *x);
    }
}

/// `f` of each record of `v` after the records of `list`, `v` freed as it
/// goes: copied from its last record to its first in steps
/// ([`into_columns`]), so that `v` and its copy do not coexist beyond a
/// step (copied from the front, all of `v` stayed until the end beside
/// the grown list: a Chrome read by two ranges peaked there with one
/// range's counter samples, a third of its model, on top).
pub(crate) fn append_mapped<T, U>(list: &mut Vec<U>, v: Vec<T>, f: impl Fn(&T) -> U) {
    let (base, n) = (list.len(), v.len());
    list.reserve_exact(n);
    let rows = &mut list.spare_capacity_mut()[..n];
    into_columns(v, |r, at| {
        for (row, x) in rows[at].iter_mut().zip(r) {
            row.write(f(x));
        }
        0
    });
    // SAFETY: `into_columns` hands every row of 0..n over once, and each
    // was written
    unsafe { list.set_len(base + n) };
}

/// A column of `n` rows, each written once before it is read
/// ([`into_columns`]). Not zeroed first: a zeroed allocation carved out of
/// freed heap memory is written through at once (resident beside the
/// records it is to be filled from); this one becomes resident as it is
/// written.
struct Unfilled<T> {
    v: Vec<T>,
    n: usize,
}

impl<T> Unfilled<T> {
    fn new(n: usize) -> Self {
        Unfilled {
            v: Vec::with_capacity(n),
            n,
        }
    }

    /// [`Unfilled::new`] backed by huge pages where large
    /// ([`crate::memory::prefer_huge_pages`]), for a column written in
    /// steps of consecutive rows: a page is then resident at most a step
    /// ahead of its rows, and faults once where 512 pages of 4 KiB did.
    fn huge(n: usize) -> Self {
        let c = Unfilled::new(n);
        crate::memory::prefer_huge_pages(&c.v);
        c
    }

    /// Rows `at`, to be written.
    fn rows(&mut self, at: Range<usize>) -> &mut [MaybeUninit<T>] {
        &mut self.v.spare_capacity_mut()[at]
    }

    /// The column.
    ///
    /// # Safety
    /// Every row of `0..n` was written through [`Self::rows`].
    unsafe fn filled(mut self) -> Vec<T> {
        unsafe { self.v.set_len(self.n) };
        self.v
    }
}

/// Where each of `slots` slots' records start, and their end (one entry
/// more), for records of the slots `of` gives, in order.
fn offsets_of(of: impl Iterator<Item = usize>, slots: usize) -> Vec<u64> {
    let mut offsets = vec![0u64; slots + 1];
    for i in of {
        offsets[i + 1] += 1;
    }
    counts_into_offsets(&mut offsets);
    offsets
}

/// Each slot's count (at `offsets[s + 1]`, `offsets[0]` 0) made where
/// its rows start, in place.
fn counts_into_offsets(offsets: &mut [u64]) {
    for s in 1..offsets.len() {
        offsets[s] += offsets[s - 1];
    }
}

/// Three columns of one length.
type ThreeColumns<A, B, C> = (Vec<A>, Vec<B>, Vec<C>);

/// The records of `v` as three columns, each record's values and time
/// given by `f` (through [`into_columns`]: the records freed in steps, the
/// rows written in parallel); and the latest time.
fn into_three_columns<R, A, B, C>(
    v: Vec<R>,
    f: impl Fn(&R) -> ((A, B, C), Time) + Sync,
) -> (ThreeColumns<A, B, C>, Time)
where
    R: Sync,
    A: Send,
    B: Send,
    C: Send,
{
    let n = v.len();
    let (mut a, mut b, mut c) = (Unfilled::huge(n), Unfilled::huge(n), Unfilled::huge(n));
    // in parallel, each step's records split among the threads
    let latest = into_columns(v, |r, at| {
        (
            r.par_chunks(COLUMN_CHUNK),
            a.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
            b.rows(at.clone()).par_chunks_mut(COLUMN_CHUNK),
            c.rows(at).par_chunks_mut(COLUMN_CHUNK),
        )
            .into_par_iter()
            .map(|(r, a, b, c)| {
                let mut t = 0;
                for (i, rec) in r.iter().enumerate() {
                    let ((x, y, z), time) = f(rec);
                    a[i].write(x);
                    b[i].write(y);
                    c[i].write(z);
                    t = t.max(time);
                }
                t
            })
            .max()
            .unwrap_or(0)
    });
    // SAFETY: `into_columns` hands every row of 0..n over once, and every
    // row handed over is written in each column (the chunks of records and
    // of rows have one length)
    let columns = unsafe { (a.filled(), b.filled(), c.filled()) };
    (columns, latest)
}

/// Rows of a slot out of order grouped by a small key of their first
/// column before they are sorted: the number of groups and each row's
/// group, that key's order (`None`: sorted as they are).
type Groups<A> = Option<(usize, fn(&A) -> usize)>;

/// The records of `v` as three columns (each record's values and time
/// given by `f`) ordered by their slot (`slot`, below `slots`) and within
/// a slot by `within` of its first two values, both stably: what a stable
/// sort by (slot, within) then [`into_three_columns`] give, without the
/// sort's copy of every record (rayon's merge sort takes a buffer as large
/// as the records: an event-heavy Paraver read peaked at 698 MiB in that
/// sort for 405 before it). The records go from the last to the first,
/// each to the last row still free of its slot, and are freed a step at a
/// time as they go ([`into_columns`]); then each slot whose rows are out of
/// order is sorted on its own (in parallel, slot by slot). Returns the
/// columns, the slots' offsets (one entry more) and the latest time.
fn bucket_into_three_columns<R, A, B, C, W>(
    v: Vec<R>,
    slots: usize,
    slot: impl Fn(&R) -> usize + Sync,
    f: impl Fn(&R) -> ((A, B, C), Time) + Sync,
    within: impl Fn(&A, &B) -> W + Sync,
    groups: Groups<A>,
) -> (ThreeColumns<A, B, C>, Vec<u64>, Time)
where
    R: Sync,
    A: Copy + Send,
    B: Copy + Send,
    C: Copy + Send,
    W: Ord,
{
    let offsets = offsets_of(v.iter().map(&slot), slots);
    let batches = |put: &mut dyn FnMut(&[R]) -> Time| into_columns(v, |r, _| put(r));
    bucket_batches_into_three_columns(offsets, batches, slot, f, within, groups)
}

/// [`bucket_into_three_columns`] of records that `batches` hands to its
/// argument a batch at a time, from the last batch to the first (each
/// batch's records in their order), into slots of `offsets` rows (one
/// entry more than slots): a batch's rows go from the back of their slots'
/// rows down.
fn bucket_batches_into_three_columns<R, A, B, C, W>(
    offsets: Vec<u64>,
    batches: impl FnOnce(&mut dyn FnMut(&[R]) -> Time) -> Time,
    slot: impl Fn(&R) -> usize + Sync,
    f: impl Fn(&R) -> ((A, B, C), Time) + Sync,
    within: impl Fn(&A, &B) -> W + Sync,
    groups: Groups<A>,
) -> (ThreeColumns<A, B, C>, Vec<u64>, Time)
where
    R: Sync,
    A: Copy + Send,
    B: Copy + Send,
    C: Copy + Send,
    W: Ord,
{
    let n = offsets.last().copied().unwrap_or(0) as usize;
    let (mut a, mut b, mut c) = (Unfilled::new(n), Unfilled::new(n), Unfilled::new(n));
    let latest = {
        // the slots in runs of about equal records, a run a thread: each
        // reads every record of a step and moves those of its slots, to
        // rows of its own (with one thread, or one slot, one run)
        let runs = slot_runs(&offsets, rayon::current_num_threads());
        let rows: Vec<usize> = runs.iter().map(|&s| offsets[s] as usize).collect();
        let (ra, rb, rc) = (
            split_at_bounds(a.rows(0..n), &rows),
            split_at_bounds(b.rows(0..n), &rows),
            split_at_bounds(c.rows(0..n), &rows),
        );
        let mut moves: Vec<SlotRun<A, B, C>> = runs
            .windows(2)
            .zip(ra.into_iter().zip(rb).zip(rc))
            .map(|(w, ((a, b), c))| SlotRun {
                slots: w[0]..w[1],
                // where each slot's next record (from the back) goes,
                // within the run's rows
                free: (w[0]..w[1])
                    .map(|s| offsets[s + 1] - offsets[w[0]])
                    .collect(),
                a,
                b,
                c,
            })
            .collect();
        let (slot, f) = (&slot, &f);
        batches(&mut |r: &[R]| {
            moves
                .par_iter_mut()
                .map(|m| {
                    let mut t = 0;
                    for rec in r.iter().rev() {
                        let s = slot(rec);
                        if !m.slots.contains(&s) {
                            continue;
                        }
                        let at = &mut m.free[s - m.slots.start];
                        *at -= 1;
                        let i = *at as usize;
                        let ((x, y, z), time) = f(rec);
                        m.a[i].write(x);
                        m.b[i].write(y);
                        m.c[i].write(z);
                        t = t.max(time);
                    }
                    t
                })
                .max()
                .unwrap_or(0)
        })
    };
    // SAFETY: every record went to a row of its own: slot `s`'s rows are
    // `offsets[s]..offsets[s + 1]`, as many as its records, each taken
    // once from the end down
    let (mut a, mut b, mut c) = unsafe { (a.filled(), b.filled(), c.filled()) };
    let bounds: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
    let (ra, rb, rc) = (
        split_at_bounds(&mut a, &bounds),
        split_at_bounds(&mut b, &bounds),
        split_at_bounds(&mut c, &bounds),
    );
    (ra, rb, rc).into_par_iter().for_each(|(a, b, c)| {
        if a.len() < 2 || (1..a.len()).all(|i| within(&a[i - 1], &b[i - 1]) <= within(&a[i], &b[i]))
        {
            return;
        }
        // the rows' order sorted (4 bytes a row, the stable sort's buffer
        // half that), then each column put in it through one copy: the
        // rows copied whole and sorted took 36 bytes a row of 20
        let Ok(n) = u32::try_from(a.len()) else {
            let mut rows: Vec<(A, B, C)> = (0..a.len()).map(|i| (a[i], b[i], c[i])).collect();
            rows.sort_by_key(|p| within(&p.0, &p.1));
            for (i, (x, y, z)) in rows.into_iter().enumerate() {
                (a[i], b[i], c[i]) = (x, y, z);
            }
            return;
        };
        // (grouped first where the order begins with a small key: each
        // group's rows in time order, as a location's interleaved
        // counters come, leave the sort one run to find, not n log n
        // comparisons through the rows)
        let mut order: Vec<u32> = match groups {
            Some((g, key)) if g > 1 => {
                let mut at = vec![0u32; g + 1];
                for x in a.iter() {
                    at[key(x).min(g - 1) + 1] += 1;
                }
                for k in 0..g {
                    at[k + 1] += at[k];
                }
                let mut order = vec![0u32; a.len()];
                for (i, x) in (0..n).zip(a.iter()) {
                    let k = key(x).min(g - 1);
                    order[at[k] as usize] = i;
                    at[k] += 1;
                }
                order
            }
            _ => (0..n).collect(),
        };
        order.sort_by_key(|&i| within(&a[i as usize], &b[i as usize]));
        in_order(a, &order);
        in_order(b, &order);
        in_order(c, &order);
    });
    ((a, b, c), offsets, latest)
}

/// `column` with its rows put in `order` (row `k` becomes the row
/// `order[k]` was).
fn in_order<T: Copy>(column: &mut [T], order: &[u32]) {
    let v: Vec<T> = order.iter().map(|&i| column[i as usize]).collect();
    column.copy_from_slice(&v);
}

/// A run of slots and the rows of the three columns they take, for
/// [`bucket_into_three_columns`]'s move.
struct SlotRun<'a, A, B, C> {
    slots: Range<usize>,
    /// Per slot of the run, the row (within the run's) its next record
    /// from the back goes to.
    free: Vec<u64>,
    a: &'a mut [MaybeUninit<A>],
    b: &'a mut [MaybeUninit<B>],
    c: &'a mut [MaybeUninit<C>],
}

/// The slots (`offsets`: where each slot's records start, one entry more)
/// cut into at most `parts` runs of consecutive slots of about equal
/// records: the runs' bounds, from 0 to the number of slots.
fn slot_runs(offsets: &[u64], parts: usize) -> Vec<usize> {
    let slots = offsets.len().saturating_sub(1);
    let n = offsets.last().copied().unwrap_or(0);
    let parts = parts.clamp(1, slots.max(1)) as u64;
    let mut bounds = vec![0];
    for k in 1..parts {
        // the first slot whose records start at or past k / parts of all
        let at = offsets
            .partition_point(|&o| o.saturating_mul(parts) < k.saturating_mul(n))
            .min(slots);
        if at > *bounds.last().unwrap_or(&0) {
            bounds.push(at);
        }
    }
    if *bounds.last().unwrap_or(&0) < slots || bounds.len() == 1 {
        bounds.push(slots);
    }
    bounds
}

/// Locations whose runs are cleaned together in [`TraceBuilder::finish`].
const RUN_CHUNK: usize = 4096;

/// Records handed to a thread at a time by the callers of
/// [`into_columns`].
const COLUMN_CHUNK: usize = 16 << 10;

/// Hands the records of `v` to `put` with the rows they go to (columns
/// allocated zeroed), from the last to the first, in steps after which the
/// records handed over are freed: the records and the columns they go to
/// do not coexist beyond one step. `put` returns the latest time of its
/// records; the latest of all is returned.
fn into_columns<T>(mut v: Vec<T>, mut put: impl FnMut(&[T], Range<usize>) -> Time) -> Time {
    // each step is a transient beside the columns, at the read's peak: a
    // 64th of the records, or a chunk per thread (up to 8) to keep the
    // threads busy
    let step = (v.len() / 64).max(COLUMN_CHUNK * rayon::current_num_threads().clamp(1, 8));
    let (mut hi, mut latest) = (v.len(), 0);
    while hi > 0 {
        let lo = hi.saturating_sub(step);
        latest = latest.max(put(&v[lo..hi], lo..hi));
        v.truncate(lo);
        v.shrink_to_fit();
        hi = lo;
    }
    latest
}

/// What cleaning one location's run of intervals found.
struct Run {
    /// Intervals kept (at the front of the run).
    kept: usize,
    unsorted: u64,
    first_unsorted: Option<Time>,
    overlaps: u64,
    first_overlap: Option<Time>,
    max_time: Time,
}

/// Sorts one location's intervals when they are out of order, clips
/// overlaps with the previous interval kept and drops empty intervals,
/// compacting to the front of the slices.
fn clean_run(start: &mut [Time], end: &mut [Time], state: &mut [StateId]) -> Run {
    let n = start.len();
    let back = (1..n).filter(|&i| start[i] < start[i - 1]).count() as u64;
    let first_unsorted = (1..n).find(|&i| start[i] < start[i - 1]).map(|i| start[i]);
    let out_of_order = back > 0 || (1..n).any(|i| start[i] == start[i - 1] && end[i] < end[i - 1]);
    if out_of_order {
        let mut scratch: Vec<(Time, Time, StateId)> =
            (0..n).map(|i| (start[i], end[i], state[i])).collect();
        scratch.sort_unstable();
        for (k, &(s0, e0, st)) in scratch.iter().enumerate() {
            start[k] = s0;
            end[k] = e0;
            state[k] = st;
        }
    }
    let mut run = Run {
        kept: 0,
        unsorted: back,
        first_unsorted,
        overlaps: 0,
        first_overlap: None,
        max_time: 0,
    };
    let mut prev_end: Option<Time> = None;
    let mut w = 0usize;
    for i in 0..n {
        let mut s0 = start[i];
        if let Some(pe) = prev_end
            && s0 < pe
        {
            run.overlaps += 1;
            run.first_overlap.get_or_insert(s0);
            s0 = pe;
        }
        if end[i] <= s0 {
            continue;
        }
        start[w] = s0;
        end[w] = end[i];
        state[w] = state[i];
        prev_end = Some(end[i]);
        run.max_time = run.max_time.max(end[i]);
        w += 1;
    }
    run.kept = w;
    run
}

/// The raw intervals (blocks of them, in order) as columns grouped by
/// location (stable within a location): CSR offsets and the start, end and
/// state columns. The columns are allocated zeroed (untouched: their pages
/// become resident as they are written) and the blocks freed as they are
/// copied, so that the raw records and the columns do not coexist: see
/// [`bucket`] (batches of at least `batch_len` records: 1/32 of them when
/// building).
fn bucket_by_location(
    blocks: Vec<IntervalBlock>,
    nloc: usize,
    batch_len: usize,
) -> (Vec<u64>, Vec<Time>, Vec<Time>, Vec<StateId>) {
    let n: usize = blocks.iter().map(IntervalBlock::len).sum();
    // locations of few records each (a location's run of a column within
    // a few pages) go through slabs
    let slabs = if nloc >= 64 && n / nloc < SLAB_BELOW {
        SLABS
    } else {
        1
    };
    bucket(blocks, nloc, batch_len, slabs)
}

/// The bytes of raw records a bucketing frees between two give-backs of
/// freed memory (0: after every step): with several threads and at least
/// [`BUCKET_TRIMS_FROM`] bytes of records, a [`BUCKET_TRIMS`]th of them.
///
/// A give-back (`malloc_trim`) walks every arena's free chunks and advises
/// the kernel of each one's pages, and each advice that drops pages
/// flushes the TLB of every core running the process's threads: on 16
/// cores the trims took 0.86-0.91 s beside a 1.1 s bucketing of a 3 GB
/// Paraver trace (H200, 2026-12-04), for some 64 steps (up to 32 batches
/// and 32 slabs). Fewer of them, each giving back more, hold at most a
/// step more resident: an eighth of the records, some 6 % of the model.
/// (Records that pass through slabs are freed twice, as blocks split into
/// pieces and as pieces: some 16 give-backs then.)
/// On the 2-core machine at 16 threads, a 1.52 GB Paraver trace (25.2 M
/// records of 16 bytes) gave back 17 times instead of 65, bucketed in 1.05 s
/// instead of 1.46 and read in 0.87× the time, for 37 MiB more at its
/// peak (1.12× its model against 1.07×). Below [`BUCKET_TRIMS_FROM`] the
/// steps are cheap and the model small beside the process's own memory:
/// Chrome traces of 37 and 48 MB of records (102 and 141 MB of model)
/// took the same time so, with 2-4 MiB more at their peak (1.30 to 1.32×
/// the model on 16 threads). On one thread a trim flushes no other core.
fn bucket_trim_step(raw_bytes: usize, threads: usize) -> usize {
    if threads < 2 || raw_bytes < BUCKET_TRIMS_FROM {
        0
    } else {
        raw_bytes / BUCKET_TRIMS
    }
}

/// Records of at least this many bytes are bucketed with
/// [`BUCKET_TRIMS`] give-backs on several threads ([`bucket_trim_step`]).
const BUCKET_TRIMS_FROM: usize = 64 << 20;
/// The give-backs of a bucketing of large records on several threads.
const BUCKET_TRIMS: usize = 8;

/// Locations with fewer records than this on average are bucketed through
/// [`SLABS`] slabs.
const SLAB_BELOW: usize = 4096;
/// Slabs of locations, when bucketing goes through them.
const SLABS: usize = 32;

/// [`bucket_by_location`] with `slabs` slabs of locations (1: none).
///
/// Without slabs the blocks are copied straight to the columns in batches
/// of consecutive blocks, each counted and scattered in parallel parts and
/// then freed. That keeps the columns' resident part in step with the
/// records freed only while a batch writes a small part of each
/// location's run: with many locations of few records each (65,536 of
/// 384 intervals: 3 KiB of a column), the first batch already touches
/// every page of the columns, which are then resident beside nearly all
/// the raw records (1.7× the model at the peak). With slabs, the records
/// are first moved, batch by batch, into pieces per slab of consecutive
/// locations of about equal records (the blocks freed as they go); then
/// each slab is scattered to its own range of the columns and its pieces
/// freed, so the columns become resident a slab at a time, as the records
/// leave.
fn bucket(
    blocks: Vec<IntervalBlock>,
    nloc: usize,
    batch_len: usize,
    slabs: usize,
) -> (Vec<u64>, Vec<Time>, Vec<Time>, Vec<StateId>) {
    let n: usize = blocks.iter().map(IntervalBlock::len).sum();
    // a vector of counts per thread, not per piece of rayon's split (at
    // 65,536 locations each is 512 KiB, and the pieces of a fold over many
    // small blocks numbered dozens at 16 threads)
    let per = blocks
        .len()
        .div_ceil(rayon::current_num_threads().max(1))
        .max(1);
    let counts = blocks
        .par_chunks(per)
        .map(|some| {
            let mut v = vec![0u64; nloc];
            for b in some {
                match b {
                    IntervalBlock::Records(rs) => {
                        for r in rs {
                            v[r.loc as usize] += 1;
                        }
                    }
                    IntervalBlock::Grouped(g) => {
                        for &(l, k) in &g.runs {
                            v[l as usize] += k as u64;
                        }
                    }
                    IntervalBlock::Packed(p) => {
                        for r in &p.recs {
                            v[r.loc as usize] += 1;
                        }
                    }
                }
            }
            v
        })
        .reduce(
            || vec![0u64; nloc],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    let mut offsets = vec![0u64; nloc + 1];
    for l in 0..nloc {
        offsets[l + 1] = offsets[l] + counts[l];
    }
    drop(counts);
    // where each location's next record goes
    let mut next: Vec<u64> = offsets[..nloc].to_vec();
    // not zeroed: each becomes resident as it is written
    let mut start: Vec<Time> = Vec::with_capacity(n);
    let mut end: Vec<Time> = Vec::with_capacity(n);
    let mut state: Vec<StateId> = Vec::with_capacity(n);
    let dst = Columns {
        start: start.as_mut_ptr(),
        end: end.as_mut_ptr(),
        state: state.as_mut_ptr(),
    };
    // what each step frees is given back beside the next, after every
    // step or once a share of the records was freed since the last time
    let raw_bytes: usize = blocks.iter().map(IntervalBlock::bytes).sum();
    let mut give_back =
        crate::memory::GiveBack::every(bucket_trim_step(raw_bytes, rayon::current_num_threads()));
    let mut due = false;
    let mut blocks = std::collections::VecDeque::from(blocks);
    let mut next_batch = || {
        let mut batch = Vec::new();
        let mut len = 0usize;
        while len < batch_len
            && let Some(b) = blocks.pop_front()
        {
            len += b.len();
            batch.push(b);
        }
        batch
    };
    if slabs > 1 {
        // a location's slab: its first record's position over the
        // records per slab (consecutive locations, about equal records)
        let per = n.div_ceil(slabs).max(1) as u64;
        let slab_of: Vec<u16> = offsets[..nloc]
            .iter()
            .map(|&o| (o / per).min(slabs as u64 - 1) as u16)
            .collect();
        let mut pieces: Vec<Vec<IntervalBlock>> = vec![Vec::new(); slabs];
        loop {
            let batch = next_batch();
            if batch.is_empty() {
                break;
            }
            let bytes: usize = batch.iter().map(IntervalBlock::bytes).sum();
            let split: Vec<Vec<IntervalBlock>> = beside_trim(due, || {
                batch
                    .into_par_iter()
                    .map(|b| split_into_slabs(b, &slab_of, slabs))
                    .collect()
            });
            for per_block in split {
                for (s, v) in per_block.into_iter().enumerate() {
                    if !v.is_empty() {
                        pieces[s].push(v);
                    }
                }
            }
            due = give_back.due(bytes);
        }
        // slab s holds the locations from the first of slab s on
        let mut first = vec![nloc; slabs + 1];
        for (l, &s) in slab_of.iter().enumerate().rev() {
            first[s as usize] = l;
        }
        for s in (0..slabs).rev() {
            first[s] = first[s].min(first[s + 1]);
        }
        for (s, slab) in pieces.iter_mut().enumerate() {
            let slab = std::mem::take(slab);
            let bytes: usize = slab.iter().map(IntervalBlock::bytes).sum();
            beside_trim(due, || {
                scatter_blocks(&slab, first[s]..first[s + 1], &mut next, &dst)
            });
            drop(slab);
            due = give_back.due(bytes);
        }
        crate::memory::return_freed_memory();
        // SAFETY: every row of 0..n was written: each record went to the
        // next row of its location's range, and the ranges (from the
        // counts of the records) partition 0..n
        unsafe { dst.filled(n, &mut start, &mut end, &mut state) };
        return (offsets, start, end, state);
    }
    let mut freed = false;
    loop {
        let batch = next_batch();
        if batch.is_empty() {
            break;
        }
        let bytes: usize = batch.iter().map(IntervalBlock::bytes).sum();
        beside_trim(due, || scatter_blocks(&batch, 0..nloc, &mut next, &dst));
        drop(batch);
        due = give_back.due(bytes);
        freed = true;
    }
    if freed {
        crate::memory::return_freed_memory();
    }
    // SAFETY: as above, every row of 0..n was written
    unsafe { dst.filled(n, &mut start, &mut end, &mut state) };
    (offsets, start, end, state)
}

/// `map(block, parallel)` on every block: with many blocks, a block a task
/// in one parallel pass (`parallel` false); with few, one block after the
/// other, each in parallel. A parallel pass per block wakes every thread
/// for each block: a 3.06 GB Paraver trace read on 16 cores holds 11,681
/// blocks, and mapping its states block by block took 0.8–1.0 s there,
/// against 0.3 s on 8 cores (5,841 blocks) and 0.15 s on one (H200
/// machine, 2026-12-04).
fn each_block(blocks: &mut [IntervalBlock], map: impl Fn(&mut IntervalBlock, bool) + Sync) {
    if blocks.len() >= 4 * rayon::current_num_threads() {
        blocks.par_iter_mut().for_each(|b| map(b, false));
    } else {
        for b in blocks {
            map(b, true);
        }
    }
}

/// `f` on every element of `v`, in parallel when `par`.
fn for_each<T: Send>(v: &mut [T], par: bool, f: impl Fn(&mut T) + Sync) {
    if par {
        v.par_iter_mut().for_each(&f);
    } else {
        v.iter_mut().for_each(f);
    }
}

/// `work`, with the memory freed before it given back to the system
/// beside it when `trim` (on another thread of the pool, once one is free;
/// first, with one thread):
/// the walk over the heap, which grows with the threads' arenas (0.14 s in
/// all at 16 cores), stays off the critical path. What a step frees is
/// given back while the next one runs.
fn beside_trim<R: Send>(trim: bool, work: impl FnOnce() -> R + Send) -> R {
    if !trim {
        return work();
    }
    if rayon::current_num_threads() < 2 {
        // nothing would run beside: given back first, as the step's
        // allocations then come from the system's pages again
        crate::memory::return_freed_memory();
        return work();
    }
    rayon::join(work, crate::memory::return_freed_memory).0
}

/// One block's records split by slab (`slab_of` each location's), in
/// order within each slab, packed where the block's times allow; the block
/// is freed.
fn split_into_slabs(b: IntervalBlock, slab_of: &[u16], slabs: usize) -> Vec<IntervalBlock> {
    let slab = |l: LocId| slab_of[l as usize] as usize;
    match b {
        // a grouped block stays grouped (its times as they are): moved
        // whole when its runs lie in one slab, else its runs copied out
        IntervalBlock::Grouped(g) => split_grouped(g, slab_of, slabs),
        IntervalBlock::Packed(p) => {
            let mut count = vec![0usize; slabs];
            p.recs.iter().for_each(|r| count[slab(r.loc)] += 1);
            let mut out: Vec<Vec<PackedInterval>> =
                count.iter().map(|&c| Vec::with_capacity(c)).collect();
            p.recs.iter().for_each(|&r| out[slab(r.loc)].push(r));
            let base = p.base;
            drop(p);
            out.into_iter()
                .map(|recs| IntervalBlock::Packed(PackedIntervals { base, recs }))
                .collect()
        }
        IntervalBlock::Records(rs) => {
            let mut count = vec![0usize; slabs];
            rs.iter().for_each(|r| count[slab(r.loc)] += 1);
            // packed where the block's times allow
            if let Some(base) = packed_base(rs.iter().map(|r| (r.start, r.end))) {
                let mut out: Vec<Vec<PackedInterval>> =
                    count.iter().map(|&c| Vec::with_capacity(c)).collect();
                rs.iter()
                    .for_each(|r| out[slab(r.loc)].push(PackedInterval::of(r, base)));
                return out
                    .into_iter()
                    .map(|recs| IntervalBlock::Packed(PackedIntervals { base, recs }))
                    .collect();
            }
            let mut out: Vec<Vec<RawInterval>> =
                count.iter().map(|&c| Vec::with_capacity(c)).collect();
            rs.iter().for_each(|&r| out[slab(r.loc)].push(r));
            out.into_iter().map(IntervalBlock::Records).collect()
        }
    }
}

/// [`split_into_slabs`] of a grouped block: grouped pieces, in the form
/// of its times.
fn split_grouped(g: GroupedIntervals, slab_of: &[u16], slabs: usize) -> Vec<IntervalBlock> {
    let slab = |l: LocId| slab_of[l as usize] as usize;
    let mut out: Vec<IntervalBlock> = (0..slabs).map(|_| IntervalBlock::default()).collect();
    let Some(&(first, _)) = g.runs.first() else {
        return out;
    };
    let s0 = slab(first);
    if g.runs.iter().all(|&(l, _)| slab(l) == s0) {
        out[s0] = IntervalBlock::Grouped(g);
        return out;
    }
    let mut count = vec![0usize; slabs];
    for &(l, k) in &g.runs {
        count[slab(l)] += k as usize;
    }
    let mut pieces: Vec<GroupedIntervals> = count
        .iter()
        .map(|&c| GroupedIntervals {
            runs: Vec::new(),
            times: match &g.times {
                GroupedTimes::Full { .. } => GroupedTimes::Full {
                    start: Vec::with_capacity(c),
                    end: Vec::with_capacity(c),
                },
                GroupedTimes::Packed { base, .. } => GroupedTimes::Packed {
                    base: *base,
                    start: Vec::with_capacity(c),
                    len: Vec::with_capacity(c),
                },
            },
            state: Vec::with_capacity(c),
        })
        .collect();
    let mut i = 0usize;
    for &(l, k) in &g.runs {
        let r = i..i + k as usize;
        let p = &mut pieces[slab(l)];
        p.runs.push((l, k));
        match (&mut p.times, &g.times) {
            (GroupedTimes::Full { start, end }, GroupedTimes::Full { start: s, end: e }) => {
                start.extend_from_slice(&s[r.clone()]);
                end.extend_from_slice(&e[r.clone()]);
            }
            (
                GroupedTimes::Packed { start, len, .. },
                GroupedTimes::Packed {
                    start: s, len: n, ..
                },
            ) => {
                start.extend_from_slice(&s[r.clone()]);
                len.extend_from_slice(&n[r.clone()]);
            }
            _ => unreachable!("a piece has its block's form"),
        }
        p.state.extend_from_slice(&g.state[r]);
        i += k as usize;
    }
    drop(g);
    for (o, p) in out.iter_mut().zip(pieces) {
        if !p.runs.is_empty() {
            *o = IntervalBlock::Grouped(p);
        }
    }
    out
}

/// Copies blocks (in order: each location's records stay in the order of
/// the blocks) to the columns, a run of blocks of one form at a time.
/// Every record's location lies in `locs`.
fn scatter_blocks(blocks: &[IntervalBlock], locs: Range<usize>, next: &mut [u64], dst: &Columns) {
    let form = std::mem::discriminant::<IntervalBlock>;
    for seg in blocks.chunk_by(|a, b| form(a) == form(b)) {
        match &seg[0] {
            IntervalBlock::Records(_) => {
                let recs: Vec<(Time, &[RawInterval])> = seg
                    .iter()
                    .filter_map(|b| match b {
                        IntervalBlock::Records(v) => Some((0, v.as_slice())),
                        _ => None,
                    })
                    .collect();
                scatter_batch(&recs, locs.clone(), next, dst);
            }
            IntervalBlock::Packed(_) => {
                let recs: Vec<(Time, &[PackedInterval])> = seg
                    .iter()
                    .filter_map(|b| match b {
                        IntervalBlock::Packed(p) => Some((p.base, p.recs.as_slice())),
                        _ => None,
                    })
                    .collect();
                scatter_batch(&recs, locs.clone(), next, dst);
            }
            IntervalBlock::Grouped(_) => {
                let groups: Vec<&GroupedIntervals> = seg
                    .iter()
                    .filter_map(|b| match b {
                        IntervalBlock::Grouped(g) => Some(g),
                        _ => None,
                    })
                    .collect();
                copy_groups(&groups, next, dst);
            }
        }
    }
}

/// Copies grouped blocks (in order) to the columns: each run to where its
/// location's next records go (positions given in order, then the runs
/// copied in parallel).
fn copy_groups(groups: &[&GroupedIntervals], next: &mut [u64], dst: &Columns) {
    let at: Vec<Vec<u64>> = groups
        .iter()
        .map(|g| {
            g.runs
                .iter()
                .map(|&(l, k)| {
                    let p = next[l as usize];
                    next[l as usize] += k as u64;
                    p
                })
                .collect()
        })
        .collect();
    groups.par_iter().zip(at.par_iter()).for_each(|(g, at)| {
        let mut i = 0usize;
        for (&(_, k), &p) in g.runs.iter().zip(at) {
            let k = k as usize;
            // SAFETY: run r of block b goes to [at(b, r), at(b, r) + k),
            // ranges disjoint across runs, blocks and batches (each takes
            // the next k positions of its location's run, which lie in
            // [offsets[l], offsets[l + 1]) and partition 0..n), and the
            // columns outlive this loop; the source ranges are in bounds
            // (the runs' counts sum to the block's length).
            unsafe {
                match &g.times {
                    GroupedTimes::Full { start, end } => dst.copy_run(
                        p as usize,
                        &start[i..i + k],
                        &end[i..i + k],
                        &g.state[i..i + k],
                    ),
                    GroupedTimes::Packed { base, start, len } => dst.copy_packed_run(
                        p as usize,
                        *base,
                        (&start[i..i + k], &len[i..i + k]),
                        &g.state[i..i + k],
                    ),
                }
            }
            i += k;
        }
    });
}

/// Copies a run of raw blocks to the columns, each
/// location's records from `next[l]` on (advanced past them): parts of
/// the batch are counted, given their positions and copied in parallel.
/// Every record's location lies in `locs` (the counts span it alone).
fn scatter_batch<R: RawRow>(
    batch: &[(Time, &[R])],
    locs: Range<usize>,
    next: &mut [u64],
    dst: &Columns,
) {
    let nloc = locs.len();
    let base = locs.start;
    let len: usize = batch.iter().map(|b| b.1.len()).sum();
    // at most one count per record in the per-part tables
    let parts = rayon::current_num_threads()
        .min(len / nloc.max(1))
        .clamp(1, 64);
    let part_len = len.div_ceil(parts).max(1);
    // the parts: runs of part_len records, as pieces of the blocks
    let mut groups: Vec<Vec<(Time, &[R])>> = vec![Vec::new()];
    let mut fill = 0usize;
    for &(block_base, block) in batch {
        let mut rest = block;
        while !rest.is_empty() {
            if fill == part_len {
                groups.push(Vec::new());
                fill = 0;
            }
            let take = (part_len - fill).min(rest.len());
            if let Some(g) = groups.last_mut() {
                g.push((block_base, &rest[..take]));
            }
            fill += take;
            rest = &rest[take..];
        }
    }
    let mut cursors: Vec<Vec<u64>> = groups
        .par_iter()
        .map(|g| {
            let mut v = vec![0u64; nloc];
            for &(block_base, rows) in g {
                for r in rows {
                    v[r.interval(block_base).loc as usize - base] += 1;
                }
            }
            v
        })
        .collect();
    for l in 0..nloc {
        // each part's first position in location l's run
        let mut pos = next[base + l];
        for c in cursors.iter_mut() {
            let k = c[l];
            c[l] = pos;
            pos += k;
        }
        next[base + l] = pos;
    }
    groups
        .par_iter()
        .zip(cursors.par_iter_mut())
        .for_each(|(g, cur)| {
            for &(block_base, rows) in g {
                for r in rows {
                    let r = r.interval(block_base);
                    let k = &mut cur[r.loc as usize - base];
                    // SAFETY: part p of this batch writes location l's records
                    // at [cursor(p, l), cursor(p, l) + count(p, l)): ranges
                    // disjoint across parts, locations and batches (each
                    // batch starts where the previous one ended in each
                    // location's run, within [offsets[l], offsets[l + 1]),
                    // which partition 0..n), and the columns outlive this loop.
                    unsafe { dst.write(*k as usize, &r) };
                    *k += 1;
                }
            }
        });
}

/// The output columns of [`bucket_by_location`], written by index from
/// several threads at disjoint positions.
struct Columns {
    start: *mut Time,
    end: *mut Time,
    state: *mut StateId,
}
// SAFETY: only used to write disjoint indices (see bucket_by_location).
unsafe impl Sync for Columns {}
unsafe impl Send for Columns {}

impl Columns {
    /// Gives the three columns (allocated for `n` rows, this one's
    /// pointers) their length `n`.
    ///
    /// # Safety
    /// Every row of `0..n` of the three was written.
    unsafe fn filled(
        &self,
        n: usize,
        start: &mut Vec<Time>,
        end: &mut Vec<Time>,
        state: &mut Vec<StateId>,
    ) {
        debug_assert!(
            std::ptr::eq(start.as_ptr(), self.start)
                && std::ptr::eq(end.as_ptr(), self.end)
                && std::ptr::eq(state.as_ptr(), self.state)
        );
        unsafe {
            start.set_len(n);
            end.set_len(n);
            state.set_len(n);
        }
    }

    /// # Safety
    /// `i` is in bounds of the three columns and written by one thread only.
    unsafe fn write(&self, i: usize, r: &RawInterval) {
        unsafe {
            *self.start.add(i) = r.start;
            *self.end.add(i) = r.end;
            *self.state.add(i) = r.state;
        }
    }

    /// # Safety
    /// `[at, at + start.len())` is in bounds of the three columns and
    /// written by one thread only; the three sources have one length.
    unsafe fn copy_run(&self, at: usize, start: &[Time], end: &[Time], state: &[StateId]) {
        unsafe {
            std::ptr::copy_nonoverlapping(start.as_ptr(), self.start.add(at), start.len());
            std::ptr::copy_nonoverlapping(end.as_ptr(), self.end.add(at), end.len());
            std::ptr::copy_nonoverlapping(state.as_ptr(), self.state.add(at), state.len());
        }
    }

    /// [`Columns::copy_run`] of packed times: starts as offsets from
    /// `base`, and lengths.
    ///
    /// # Safety
    /// As [`Columns::copy_run`]'s; the three sources have one length.
    unsafe fn copy_packed_run(
        &self,
        at: usize,
        base: Time,
        (start, len): (&[u32], &[u32]),
        state: &[StateId],
    ) {
        for (i, (&s, &l)) in start.iter().zip(len).enumerate() {
            let s = base + s as Time;
            unsafe {
                self.start.add(at + i).write(s);
                self.end.add(at + i).write(s + l as Time);
            }
        }
        unsafe {
            std::ptr::copy_nonoverlapping(state.as_ptr(), self.state.add(at), state.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intervals listed one location's run after another make the block
    /// that [`IntervalBlock::of_runs`] makes of the same intervals as
    /// records: grouped (a location's runs next to each other as one, runs
    /// of none left out) where they hold 4 intervals a run or more, else
    /// packed, or records where one is too long to pack.
    #[test]
    fn flat_runs_make_the_records_block() {
        let mut rng = crate::test_rng::XorShift(0x0f1a_7125);
        let (mut grouped, mut packed, mut records) = (0, 0, 0);
        for round in 0..400 {
            let (mut runs, mut flat, mut raw) = (Vec::new(), Vec::new(), Vec::new());
            let mut t = 0u64;
            for _ in 0..1 + rng.below(40) {
                let loc = rng.below(6) as LocId;
                let n = rng.below(if round % 2 == 0 { 4 } else { 12 }) as u32;
                for _ in 0..n {
                    t += rng.below(50);
                    let len = if rng.below(300) == 0 {
                        1 << 33
                    } else {
                        rng.below(40)
                    };
                    let state = rng.below(5) as StateId;
                    flat.push((t, t + len, state));
                    raw.push(RawInterval {
                        loc,
                        state,
                        start: t,
                        end: t + len,
                    });
                }
                runs.push((loc, n));
            }
            let got = IntervalBlock::of_flat_runs(&runs, &flat);
            match got {
                IntervalBlock::Grouped(_) => grouped += 1,
                IntervalBlock::Packed(_) => packed += 1,
                IntervalBlock::Records(_) => records += 1,
            }
            let want = IntervalBlock::of_runs(&raw);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "round {round}");
        }
        assert!(
            grouped > 100 && packed > 100 && records > 5,
            "{grouped} {packed} {records}"
        );
    }

    /// `0..n` cut into blocks of 1 to `most` records at random.
    fn random_blocks(
        rng: &mut crate::test_rng::XorShift,
        n: usize,
        most: u64,
    ) -> Vec<std::ops::Range<usize>> {
        let mut blocks = Vec::new();
        let mut at = 0;
        while at < n {
            let len = (1 + rng.below(most) as usize).min(n - at);
            blocks.push(at..at + len);
            at += len;
        }
        blocks
    }

    /// A builder of `nloc` threads (`l0`, `l1`, ...), not strict.
    fn builder_of_threads(nloc: usize) -> TraceBuilder {
        let mut b = TraceBuilder::new(Format::Synthetic, "mem", TimeUnit::nanoseconds(), false);
        for l in 0..nloc {
            b.locations
                .add(format!("l{l}"), LocationKind::Thread, None, l as i64);
        }
        b
    }
    use crate::model::{LocationKind, StateClass};

    fn builder(strict: bool) -> TraceBuilder {
        let mut b = TraceBuilder::new(Format::Synthetic, "mem", TimeUnit::nanoseconds(), strict);
        b.locations.add("a", LocationKind::Thread, None, 0);
        b.locations.add("b", LocationKind::Thread, None, 1);
        b.states.add("run", StateClass::Busy, None, 1);
        b
    }

    /// States mapped and locations renumbered over few blocks (each in
    /// parallel) and over many (a block a task) give the model that one
    /// vector of the same records gives, for records, grouped and packed
    /// blocks, at 1, 3 and 16 threads.
    #[test]
    fn blocks_mapped_one_a_task_or_each_in_parallel_give_one_model() {
        let nloc = 3u32;
        let fresh = || {
            let mut b = TraceBuilder::new(Format::Synthetic, "mem", TimeUnit::nanoseconds(), false);
            for l in 0..nloc {
                b.locations
                    .add(format!("t{l}"), LocationKind::Thread, None, l as i64);
            }
            for v in 0..5 {
                b.states.add(&format!("s{v}"), StateClass::Busy, None, v);
            }
            b
        };
        let rec = |i: u64| RawInterval {
            loc: (i % nloc as u64) as LocId,
            // raw states 10..14, mapped to 0..4 below
            state: 10 + (i % 5) as StateId,
            start: i * 10,
            end: i * 10 + 5,
        };
        let map = |v: StateId| v - 10;
        let renumber = |l: &mut LocId| *l = nloc - 1 - *l;
        let n = 4_000u64;
        let build = |blocks: usize, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut b = fresh();
                let per = (n as usize).div_ceil(blocks);
                let all: Vec<RawInterval> = (0..n).map(rec).collect();
                for (k, part) in all.chunks(per).enumerate() {
                    let block = match k % 3 {
                        0 => IntervalBlock::Records(part.to_vec()),
                        1 => IntervalBlock::group(part.to_vec(), nloc as usize).0,
                        _ => IntervalBlock::pack(part.to_vec()).0,
                    };
                    b.interval_chunks.push(block);
                }
                b.map_raw_states(map);
                b.renumber_raw_locations(renumber);
                b.finish(BuildOptions::default()).unwrap()
            })
        };
        let mut one = fresh();
        for i in 0..n {
            let mut r = rec(i);
            r.state = map(r.state);
            renumber(&mut r.loc);
            one.interval(r.loc, r.start, r.end, r.state);
        }
        let want = one.finish(BuildOptions::default()).unwrap();
        let want = format!("{:?}", want.intervals);
        for threads in [1, 3, 16] {
            for blocks in [2, 5, 40, 200] {
                let got = build(blocks, threads);
                assert_eq!(
                    format!("{:?}", got.intervals),
                    want,
                    "{blocks} blocks, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn into_columns_hands_every_row_over_once_from_the_back() {
        // lengths around the step boundaries, at several thread counts
        let lens = [
            0,
            1,
            COLUMN_CHUNK - 1,
            COLUMN_CHUNK,
            COLUMN_CHUNK + 1,
            9 * COLUMN_CHUNK + 7,
            70 * COLUMN_CHUNK + 65,
        ];
        for threads in [1, 3, 16] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                for &n in &lens {
                    let v: Vec<u64> = (0..n as u64).collect();
                    let mut seen = vec![0u8; n];
                    let mut last_lo = n;
                    let latest = into_columns(v, |r, at| {
                        assert_eq!(r.len(), at.len());
                        assert_eq!(at.end, last_lo, "steps run from the back");
                        last_lo = at.start;
                        for (x, i) in r.iter().zip(at.clone()) {
                            assert_eq!(*x, i as u64);
                            seen[i] += 1;
                        }
                        r.iter().map(|&x| x * 2).max().unwrap_or(0)
                    });
                    assert_eq!(last_lo, 0);
                    assert!(seen.iter().all(|&k| k == 1), "n = {n}");
                    assert_eq!(latest, (n as u64).saturating_sub(1) * 2);
                }
            });
        }
    }

    /// Bucketing by slot then sorting each slot's rows that are out of
    /// order gives what a stable sort by (slot, within) gave: ties in
    /// file order, slots of none, one or many records, sorted or not, at
    /// any thread count.
    #[test]
    fn bucketed_columns_match_a_stable_sort() {
        let mut rng = crate::test_rng::XorShift(0xC0105);
        for round in 0..60 {
            let slots = 1 + rng.below(40) as usize;
            let n = rng.below(3 * COLUMN_CHUNK as u64) as usize;
            let sorted_slots = rng.below(2) == 0;
            // (slot, within-key, time, payload)
            let mut recs: Vec<(usize, u32, u64, u64)> = (0..n)
                .map(|i| {
                    let s = rng.below(slots as u64) as usize;
                    let t = if sorted_slots {
                        i as u64 / 3
                    } else {
                        rng.below(50)
                    };
                    (s, rng.below(3) as u32, t, i as u64)
                })
                .collect();
            if round % 5 == 0 {
                recs.sort_by_key(|r| r.0);
            }
            let mut want = recs.clone();
            want.sort_by_key(|r| (r.0, r.1, r.2));
            let want_offsets = offsets_of(want.iter().map(|r| r.0), slots);
            let want_cols: Vec<(u32, u64, u64)> = want.iter().map(|r| (r.1, r.2, r.3)).collect();
            let threads = [1, 3, 16][round % 3];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let ((a, b, c), offsets, latest) = pool.install(|| {
                bucket_into_three_columns(
                    recs.clone(),
                    slots,
                    |r| r.0,
                    |r| ((r.1, r.2, r.3), r.2),
                    |k, t| (*k, *t),
                    // grouped by the first key first, by as many groups
                    // as it takes values, or fewer (the last group then
                    // takes the rest)
                    match (round / 3) % 3 {
                        0 => None,
                        1 => Some((3, counter_group as fn(&u32) -> usize)),
                        _ => Some((2, counter_group as fn(&u32) -> usize)),
                    },
                )
            });
            let got: Vec<(u32, u64, u64)> = (0..n).map(|i| (a[i], b[i], c[i])).collect();
            assert_eq!(got, want_cols, "round {round}");
            assert_eq!(offsets, want_offsets, "round {round}");
            assert_eq!(latest, recs.iter().map(|r| r.2).max().unwrap_or(0));
        }
    }

    /// Runs of slots start at 0, end at the last slot, grow, number at
    /// most the parts asked for, and share the records about equally.
    #[test]
    fn slot_runs_cover_the_slots_in_about_equal_shares() {
        assert_eq!(slot_runs(&[0], 4), [0, 0]);
        assert_eq!(slot_runs(&[0, 0, 0], 4), [0, 2]);
        assert_eq!(slot_runs(&[0, 10], 16), [0, 1]);
        assert_eq!(slot_runs(&[0, 5, 10, 15, 20], 2), [0, 2, 4]);
        let mut rng = crate::test_rng::XorShift(0x51075);
        for _ in 0..500 {
            let slots = rng.below(70) as usize;
            let mut offsets = vec![0u64];
            for _ in 0..slots {
                let last = *offsets.last().unwrap();
                offsets.push(last + rng.below(3).pow(rng.below(6) as u32));
            }
            let parts = 1 + rng.below(20) as usize;
            let b = slot_runs(&offsets, parts);
            assert_eq!(
                (b[0], *b.last().unwrap()),
                (0, slots),
                "{offsets:?} {parts}"
            );
            assert!(b.len() - 1 <= parts.max(1), "{b:?} {parts}");
            assert!(b.windows(2).all(|w| w[0] < w[1]) || slots == 0, "{b:?}");
            // no run but the last starts a whole share after its start
            let (n, share) = (offsets[slots], parts.clamp(1, slots.max(1)) as u64);
            for w in b.windows(2) {
                let take = offsets[w[1]] - offsets[w[0]];
                let biggest = (w[0]..w[1])
                    .map(|s| offsets[s + 1] - offsets[s])
                    .max()
                    .unwrap_or(0);
                assert!(take <= n / share + biggest + 1, "{offsets:?} {parts} {b:?}");
            }
        }
    }

    /// Counter samples of several counters per location, interleaved in
    /// time order across locations (as Chrome writes them) or in any
    /// order, come out as a stable sort by (location, counter, time) gives
    /// them: through slots of (location, counter) where they are few,
    /// through slots of locations (sorted within) where they are many,
    /// and copied as they are when already in order; a location beyond
    /// the trace's is left out. At 1, 3 and 16 threads.
    #[test]
    fn counters_come_by_location_counter_and_time_as_a_stable_sort_gives() {
        let mut rng = crate::test_rng::XorShift(0xC0_07E5);
        for round in 0..48 {
            let nloc = [3, 70, 70_000][round % 3];
            let kinds = 1 + rng.below(5) as u32;
            let n = rng.below(4000) as usize;
            let in_time = round % 4 != 3;
            let mut b = builder_of_threads(nloc);
            for k in 0..kinds {
                b.counter_def(&format!("c{k}"), "B");
            }
            let mut recs: Vec<RawCounter> = (0..n)
                .map(|i| RawCounter {
                    time: if in_time {
                        i as Time / 3
                    } else {
                        rng.below(40)
                    },
                    value: i as f64,
                    // a few beyond the trace's locations
                    loc: rng.below(nloc as u64 + 1) as LocId,
                    counter: rng.below(kinds as u64) as u32,
                })
                .collect();
            if round % 8 == 0 {
                recs.sort_by_key(|c| (c.loc, c.counter, c.time));
            }
            let mut want: Vec<RawCounter> = recs
                .iter()
                .copied()
                .filter(|c| (c.loc as usize) < nloc)
                .collect();
            want.sort_by_key(|c| (c.loc, c.counter, c.time));
            b.add_counters(recs);
            let threads = [1, 3, 16][round % 3];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let t = pool.install(|| b.finish(BuildOptions::default())).unwrap();
            let c = &t.counters;
            let got: Vec<(u32, Time, f64)> = (0..c.len())
                .map(|i| (c.counter[i], c.time[i], c.value[i]))
                .collect();
            let wanted: Vec<(u32, Time, f64)> =
                want.iter().map(|c| (c.counter, c.time, c.value)).collect();
            assert_eq!(got, wanted, "round {round}");
            assert_eq!(
                c.offsets,
                offsets_of(want.iter().map(|c| c.loc as usize), nloc)
            );
        }
    }

    /// Events handed over in blocks (with some added one at a time after
    /// them) come out as a stable sort by location (global last) and time
    /// gives them, as those added as a list do: at any number of threads,
    /// locations past the table's left out.
    #[test]
    fn events_in_blocks_come_by_location_and_time_as_a_stable_sort_gives() {
        let mut rng = crate::test_rng::XorShift(0xE7E7_B10C);
        for round in 0..36 {
            let nloc = [3, 70, 70_000][round % 3];
            let n = rng.below(6000) as usize;
            let in_time = round % 4 != 3;
            let recs: Vec<RawEvent> = (0..n)
                .map(|i| RawEvent {
                    time: if in_time {
                        1_000_000 + i as Time / 3
                    } else {
                        rng.below(40)
                    },
                    // a few global ones and a few beyond the table
                    loc: match rng.below(20) {
                        0 => GLOBAL,
                        1 => nloc as LocId + rng.below(3) as LocId,
                        _ => rng.below(nloc as u64) as LocId,
                    },
                    kind: 42_000_050 + rng.below(9) as u32,
                    value: rng.below(1 << 40) as i64 - (1 << 39),
                })
                .collect();
            let key = |l: LocId| if l == GLOBAL { nloc } else { l as usize };
            let mut want: Vec<RawEvent> = recs
                .iter()
                .copied()
                .filter(|e| key(e.loc) <= nloc)
                .collect();
            want.sort_by_key(|e| (key(e.loc), e.time));
            let threads = [1, 3, 16][round % 3];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut build = |blocks: bool| {
                let mut b = builder_of_threads(nloc);
                if blocks {
                    // blocks of random lengths, the last few one at a time
                    let tail = n.saturating_sub(5);
                    for r in random_blocks(&mut rng, tail, 900) {
                        b.add_event_block(EventBlock::pack(&recs[r]));
                    }
                    for e in &recs[tail..] {
                        b.event(e.loc, e.time, e.kind, e.value);
                    }
                } else {
                    b.add_events(recs.clone());
                }
                pool.install(|| b.finish(BuildOptions::default())).unwrap()
            };
            let (from_blocks, from_list) = (build(true), build(false));
            let ev = &from_blocks.events;
            let got: Vec<(Time, u32, i64)> = (0..ev.time.len())
                .map(|i| (ev.time[i], ev.kind[i], ev.value[i]))
                .collect();
            let wanted: Vec<(Time, u32, i64)> =
                want.iter().map(|e| (e.time, e.kind, e.value)).collect();
            assert_eq!(got, wanted, "round {round}");
            assert_eq!(
                ev.offsets,
                offsets_of(want.iter().map(|e| key(e.loc)), nloc + 1),
                "round {round}"
            );
            let other = &from_list.events;
            assert_eq!(
                (&ev.offsets, &ev.time, &ev.kind, &ev.value),
                (&other.offsets, &other.time, &other.kind, &other.value),
                "round {round}"
            );
        }
    }

    /// Counter samples handed over in blocks give the columns those added
    /// as a list give: whole and fractional values, several counters or
    /// one, few locations or many (the two ways of bucketing), in time or
    /// not, at any number of threads.
    #[test]
    fn counters_in_blocks_give_the_columns_of_a_list() {
        let mut rng = crate::test_rng::XorShift(0xC0B1_0C55);
        for round in 0..36 {
            // (two locations of many samples are bucketed by location
            // and counter, the others by location)
            let nloc = [2, 70, 20_000][round % 3];
            let kinds = 1 + rng.below(8) as u32;
            let n = if nloc == 2 {
                20_000 + rng.below(20_000) as usize
            } else {
                rng.below(8000) as usize
            };
            let in_time = round % 4 != 3;
            let whole = round % 5 != 2;
            let recs: Vec<RawCounter> = (0..n)
                .map(|i| RawCounter {
                    time: if in_time {
                        7_000_000 + i as Time / 5
                    } else {
                        rng.below(50)
                    },
                    value: if whole {
                        rng.below(1 << 33) as f64 - 1e9
                    } else {
                        [f64::NAN, -0.0, 0.5, 1e300, -3.25][i % 5]
                    },
                    loc: rng.below(nloc as u64 + 1) as LocId,
                    counter: rng.below(kinds as u64) as u32,
                })
                .collect();
            let threads = [1, 3, 16][round % 3];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut build = |blocks: bool| {
                let mut b = builder_of_threads(nloc);
                for k in 0..kinds {
                    b.counter_def(&format!("c{k}"), "");
                }
                if blocks {
                    let tail = n.saturating_sub(3);
                    for r in random_blocks(&mut rng, tail, 1500) {
                        b.add_counter_block(CounterBlock::pack(&recs[r]));
                    }
                    for c in &recs[tail..] {
                        b.counter(c.loc, c.counter, c.time, c.value);
                    }
                } else {
                    b.add_counters(recs.clone());
                }
                pool.install(|| b.finish(BuildOptions::default())).unwrap()
            };
            let (a, b) = (build(true), build(false));
            let (a, b) = (&a.counters, &b.counters);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(a.offsets, b.offsets, "round {round}");
            assert_eq!(
                (&a.counter, &a.time, bits(&a.value)),
                (&b.counter, &b.time, bits(&b.value)),
                "round {round}"
            );
            assert_eq!(
                a.time.len(),
                recs.iter().filter(|c| (c.loc as usize) < nloc).count()
            );
        }
    }

    /// A location's intervals gathered into a block as they come give the
    /// model that the block made from their list gives: packed, and with
    /// a span too long to pack.
    #[test]
    fn a_location_block_gathered_as_intervals_come_is_the_block_of_their_list() {
        let mut rng = crate::test_rng::XorShift(0xB10C);
        for round in 0..12 {
            let n = rng.below(5000) as usize;
            let step = if round % 3 == 0 { 1 << 30 } else { 1000 };
            let mut t = rng.below(1 << 40);
            let flat: Vec<(Time, Time, StateId)> = (0..n)
                .map(|_| {
                    t += rng.below(step);
                    let s = t;
                    t += rng.below(step);
                    (s, t, 0)
                })
                .collect();
            let model = |block: Option<IntervalBlock>| {
                let mut b = builder(false);
                b.add_interval_block(IntervalBlock::of_runs(&[RawInterval {
                    loc: 0,
                    state: 0,
                    start: 5,
                    end: 9,
                }]));
                b.add_interval_block(block.unwrap_or_default());
                let t = b.finish(BuildOptions::default()).unwrap();
                let iv = t.intervals.all();
                (
                    t.intervals.offsets.clone(),
                    iv.start.to_vec(),
                    iv.end.to_vec(),
                )
            };
            let (first, last) = flat
                .first()
                .zip(flat.last())
                .map_or((0, 0), |(a, b)| (a.0, b.1));
            let mut gathered = LocationBlock::new(1, (first, last), n / 2);
            for some in flat.chunks(1 + round * 97) {
                gathered.extend(some);
            }
            let gathered = gathered.finish();
            assert_eq!(gathered.is_none(), n == 0);
            if let Some(IntervalBlock::Grouped(g)) = &gathered {
                assert_eq!(
                    matches!(g.times, GroupedTimes::Packed { .. }),
                    last - first <= u32::MAX as Time,
                    "round {round}"
                );
            }
            assert_eq!(
                model(gathered),
                model(Some(IntervalBlock::of_location(1, &flat))),
                "round {round}"
            );
        }
    }

    /// Records appended to a list (freed from the back as they go) follow
    /// its own, each as `f` makes it, at any length.
    #[test]
    fn append_mapped_puts_each_record_after_the_list() {
        for (a, b) in [(0, 0), (3, 0), (0, 5), (7, 3 * COLUMN_CHUNK + 11)] {
            let mut list: Vec<u64> = (0..a).collect();
            append_mapped(&mut list, (0..b as u32).collect(), |&x| u64::from(x) * 2);
            let want: Vec<u64> = (0..a).chain((0..b as u64).map(|x| x * 2)).collect();
            assert_eq!(list, want);
        }
    }

    #[test]
    fn into_three_columns_matches_a_plain_copy_at_any_thread_count() {
        let n = 20 * COLUMN_CHUNK + 321;
        let recs: Vec<(u32, u64, u16)> = (0..n)
            .map(|i| {
                (
                    i as u32 ^ 0x5a5a,
                    (i as u64 * 7919) % 1_000_003,
                    (i % 977) as u16,
                )
            })
            .collect();
        let want_a: Vec<u32> = recs.iter().map(|r| r.0).collect();
        let want_b: Vec<u64> = recs.iter().map(|r| r.1).collect();
        let want_c: Vec<u16> = recs.iter().map(|r| r.2).collect();
        let want_t = recs.iter().map(|r| r.1).max().unwrap();
        for threads in [1, 2, 7, 16] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let ((a, b, c), t) =
                pool.install(|| into_three_columns(recs.clone(), |r| ((r.0, r.1, r.2), r.1)));
            assert_eq!(a, want_a, "threads = {threads}");
            assert_eq!(b, want_b);
            assert_eq!(c, want_c);
            assert_eq!(t, want_t);
        }
    }

    #[test]
    fn sorts_and_repairs_overlaps() {
        let mut b = builder(false);
        b.interval(1, 5, 9, 0);
        b.interval(0, 10, 20, 0);
        b.interval(0, 0, 10, 0);
        b.interval(0, 15, 25, 0); // overlaps [10,20)
        b.interval(0, 30, 30, 0); // empty
        b.event(GLOBAL, 3, 0, 1);
        b.event(1, 2, 0, 7);
        let t = b
            .finish(BuildOptions {
                warn_unsorted: true,
            })
            .unwrap();
        assert_eq!(
            t.intervals.of(0).iter().collect::<Vec<_>>(),
            vec![(0, 10, 0), (10, 20, 0), (20, 25, 0)]
        );
        assert_eq!(t.intervals.of(1).len(), 1);
        assert_eq!(t.meta.span, 25);
        let kinds: Vec<_> = t
            .meta
            .diagnostics
            .warnings
            .iter()
            .map(|w| (w.kind, w.count))
            .collect();
        assert_eq!(kinds, vec![("unsorted", 1), ("overlapping-states", 1)]);
        assert_eq!(t.events.range_of(1), 0..1);
        assert_eq!(t.events.global_range(), 1..2);
    }

    #[test]
    fn strict_mode_refuses_repairs() {
        let mut b = builder(true);
        b.interval(0, 0, 10, 0);
        b.interval(0, 5, 12, 0);
        let err = b.finish(BuildOptions::default()).unwrap_err();
        assert!(err.to_string().contains("strict"), "{err}");
        // the error says where: the location and the time of the first
        assert!(err.to_string().contains("location 'a', 5 ns"), "{err}");
        let mut b = builder(true);
        b.interval(1, 50, 60, 0);
        b.interval(1, 20, 30, 0);
        let err = b
            .finish(BuildOptions {
                warn_unsorted: true,
            })
            .unwrap_err();
        assert!(err.to_string().contains("location 'b', 20 ns"), "{err}");
    }

    #[test]
    fn large_records_on_several_threads_are_given_back_an_eighth_at_a_time() {
        // one thread, or few records: after every step
        assert_eq!(bucket_trim_step(1 << 30, 1), 0);
        assert_eq!(bucket_trim_step(BUCKET_TRIMS_FROM - 1, 16), 0);
        assert_eq!(
            bucket_trim_step(BUCKET_TRIMS_FROM, 2),
            BUCKET_TRIMS_FROM / 8
        );
        // 800 MiB of records freed in 64 equal steps: 8 give-backs, not 64
        let raw = 800usize << 20;
        let mut every = crate::memory::GiveBack::every(bucket_trim_step(raw, 16));
        let due = (0..64).filter(|_| every.due(raw / 64)).count();
        assert_eq!(due, 8);
        let mut every = crate::memory::GiveBack::every(bucket_trim_step(raw, 1));
        assert_eq!((0..64).filter(|_| every.due(raw / 64)).count(), 64);
        // what a block's records take, in each form
        let v: Vec<RawInterval> = (0..10)
            .map(|i| RawInterval {
                loc: i % 2,
                state: 0,
                start: 100 + i as Time,
                end: 105 + i as Time,
            })
            .collect();
        assert_eq!(IntervalBlock::Records(v.clone()).bytes(), 10 * 24);
        assert!(matches!(
            IntervalBlock::pack(v.clone()).0,
            IntervalBlock::Packed(_)
        ));
        assert_eq!(IntervalBlock::pack(v.clone()).0.bytes(), 10 * 16);
        // grouped: two runs of 8 bytes, and 4 + 4 + 4 bytes a record
        let g = IntervalBlock::group(v, 2).0;
        assert!(matches!(g, IntervalBlock::Grouped(_)));
        assert_eq!(g.bytes(), 2 * 8 + 10 * 12);
    }

    #[test]
    fn bucketing_in_batches_equals_a_stable_sort_by_location() {
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15u64);
        let mut rnd = move |m: u64| rng.below(m);
        let pool = crate::test_pool::pool(3);
        // times of any order (most blocks then cannot be packed), and
        // times that pack: ends after starts, some blocks far in time
        // (beyond 32 bits from time 0) and one that spans too long a time
        for (nloc, nblocks, packable) in [(1usize, 5usize), (13, 40), (700, 60)]
            .into_iter()
            .flat_map(|(l, b)| [(l, b, false), (l, b, true)])
        {
            let blocks: Vec<Vec<RawInterval>> = (0..nblocks)
                .map(|i| {
                    let far = if i % 4 == 1 { 1u64 << 40 } else { 0 };
                    (0..rnd(300))
                        .map(|j| {
                            let start = far + rnd(1000);
                            let end = match (packable, i, j) {
                                (false, ..) => rnd(1000),
                                (true, 2, 7) => start + (1 << 33),
                                (true, ..) => start + rnd(50),
                            };
                            RawInterval {
                                loc: rnd(nloc as u64) as u32,
                                state: rnd(5) as u32,
                                start,
                                end,
                            }
                        })
                        .collect()
                })
                .collect();
            let mut want: Vec<RawInterval> = blocks.iter().flatten().copied().collect();
            want.sort_by_key(|r| r.loc);
            for (batch_len, slabs) in [1, 7, 250, 1000, usize::MAX]
                .into_iter()
                .flat_map(|b| [(b, 1usize), (b, 3), (b, SLABS)])
            {
                // as records, grouped where the blocks allow, packed where
                // they allow, mixed, and in runs of one location (by
                // decreasing location: a grouped block's runs need not be
                // in order)
                let forms: [Vec<IntervalBlock>; 6] = [
                    blocks.iter().cloned().map(IntervalBlock::Records).collect(),
                    blocks
                        .iter()
                        .map(|b| IntervalBlock::group(b.clone(), nloc).0)
                        .collect(),
                    blocks
                        .iter()
                        .enumerate()
                        .map(|(i, b)| {
                            if i % 3 == 0 {
                                IntervalBlock::Records(b.clone())
                            } else {
                                IntervalBlock::group(b.clone(), nloc).0
                            }
                        })
                        .collect(),
                    blocks
                        .iter()
                        .map(|b| IntervalBlock::pack(b.clone()).0)
                        .collect(),
                    blocks
                        .iter()
                        .enumerate()
                        .map(|(i, b)| match i % 3 {
                            0 => IntervalBlock::Records(b.clone()),
                            1 => IntervalBlock::pack(b.clone()).0,
                            _ => IntervalBlock::group(b.clone(), nloc).0,
                        })
                        .collect(),
                    blocks
                        .iter()
                        .map(|b| {
                            let mut b = b.clone();
                            b.sort_by_key(|r| std::cmp::Reverse(r.loc));
                            IntervalBlock::of_runs(&b)
                        })
                        .collect(),
                ];
                if packable {
                    // packed exactly where the times allow: not an empty
                    // block, nor the one with a record too long
                    let packed: Vec<bool> = forms[3]
                        .iter()
                        .map(|b| matches!(b, IntervalBlock::Packed(_)))
                        .collect();
                    let fits: Vec<bool> = blocks
                        .iter()
                        .map(|b| !b.is_empty() && b.iter().all(|r| r.end - r.start < 1 << 32))
                        .collect();
                    assert_eq!(packed, fits);
                    assert!(fits.iter().filter(|&&f| !f).count() < nblocks / 2);
                }
                // grouped blocks of both time forms where there are some
                if nloc == 13 {
                    let times = |packed: bool| {
                        forms[1].iter().any(|b| {
                            matches!(b, IntervalBlock::Grouped(g)
                                if matches!(g.times, GroupedTimes::Packed { .. }) == packed)
                        })
                    };
                    assert!(times(packable));
                    assert_eq!(times(!packable), packable, "far blocks keep full times");
                }
                for (form, blocks) in forms.into_iter().enumerate() {
                    let (offsets, start, end, state) =
                        pool.install(|| bucket(blocks, nloc, batch_len, slabs));
                    assert_eq!(offsets.len(), nloc + 1);
                    for l in 0..nloc {
                        let a = offsets[l] as usize;
                        let b = offsets[l + 1] as usize;
                        assert!(want[a..b].iter().all(|r| r.loc as usize == l));
                    }
                    let got: Vec<(u64, u64, u32)> = (0..start.len())
                        .map(|i| (start[i], end[i], state[i]))
                        .collect();
                    let expect: Vec<(u64, u64, u32)> =
                        want.iter().map(|r| (r.start, r.end, r.state)).collect();
                    assert_eq!(
                        got, expect,
                        "{nloc} locations, batches of {batch_len}, {slabs} slabs, form {form}"
                    );
                }
            }
        }
    }

    #[test]
    fn parallel_bucketing_equals_a_sequential_reference() {
        // many locations, records in random order, overlaps, empties and
        // duplicates; on a pool of 4 threads so that parts really split
        let mut rng = crate::test_rng::XorShift(0x2545f4914f6cdd1du64);
        let mut rnd = move |m: u64| rng.below(m);
        // each case fed one interval at a time, then in blocks of random
        // sizes (add_intervals) mixed with single intervals
        let cases = [(1usize, 500usize), (7, 5000), (300, 20_000), (5000, 3000)];
        for (nloc, n, blocks) in cases
            .iter()
            .flat_map(|&(l, n)| [(l, n, false), (l, n, true)])
        {
            let mut b = builder_of_threads(nloc);
            b.states.add("a", StateClass::Busy, None, 0);
            b.states.add("b", StateClass::Idle, None, 1);
            let mut raw = Vec::new();
            let mut block = Vec::new();
            for _ in 0..n {
                let l = rnd(nloc as u64) as u32;
                let s = rnd(100_000);
                let e = s + rnd(300);
                let st = rnd(2) as u32;
                raw.push((l, s, e, st));
                if !blocks || rnd(10) == 0 {
                    b.add_intervals(std::mem::take(&mut block));
                    b.interval(l, s, e, st);
                } else {
                    block.push(RawInterval {
                        loc: l,
                        state: st,
                        start: s,
                        end: e,
                    });
                    if rnd(40) == 0 {
                        b.add_intervals(std::mem::take(&mut block));
                    }
                }
            }
            b.add_intervals(block);
            assert_eq!(b.num_raw_intervals(), n);
            let pool = crate::test_pool::pool(4);
            let t = pool
                .install(|| {
                    b.finish(BuildOptions {
                        warn_unsorted: true,
                    })
                })
                .unwrap();
            // reference: stable sort by location, sort each location's run
            // by (start, end, state) when out of order, clip, drop empties
            for l in 0..nloc as u32 {
                let mut run: Vec<(u64, u64, u32)> = raw
                    .iter()
                    .filter(|r| r.0 == l)
                    .map(|r| (r.1, r.2, r.3))
                    .collect();
                let ooo = run
                    .windows(2)
                    .any(|w| w[1].0 < w[0].0 || (w[1].0 == w[0].0 && w[1].1 < w[0].1));
                if ooo {
                    run.sort_unstable();
                }
                let mut want = Vec::new();
                let mut prev: Option<u64> = None;
                for (s, e, st) in run {
                    let s = prev.map_or(s, |p| s.max(p));
                    if e <= s {
                        continue;
                    }
                    want.push((s, e, st));
                    prev = Some(e);
                }
                assert_eq!(
                    t.intervals.of(l).iter().collect::<Vec<_>>(),
                    want,
                    "location {l} of {nloc}"
                );
            }
        }
    }
}
