//! Building a [`Trace`] from the raw records of a reader: sorting into the
//! columnar layout, validation and repair.

use std::collections::HashMap;
use std::path::PathBuf;

use rayon::prelude::*;

use super::{
    Collectives, Communicator, CounterDef, Counters, EventTypes, Events, Format, Intervals, LocId,
    Locations, Messages, StateId, StateTable, Time, TimeUnit, Trace, TraceMeta,
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
    /// Intervals added a block at a time ([`TraceBuilder::add_intervals`]),
    /// kept as they came: never copied into one growing vector.
    pub(crate) interval_chunks: Vec<Vec<RawInterval>>,
    pub(crate) events: Vec<RawEvent>,
    pub(crate) messages: Vec<RawMessage>,
    pub(crate) counters: Vec<RawCounter>,
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
            messages: Vec::new(),
            counters: Vec::new(),
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
    pub(crate) fn add_intervals(&mut self, mut chunk: Vec<RawInterval>) {
        if chunk.is_empty() {
            return;
        }
        if !self.intervals.is_empty() {
            let single = std::mem::take(&mut self.intervals);
            self.interval_chunks.push(single);
        }
        // kept until the model is built: without its growth slack (a
        // shrink in place, no copy)
        chunk.shrink_to_fit();
        self.interval_chunks.push(chunk);
    }

    /// Every raw interval so far, block by block, in the order added.
    pub(crate) fn raw_intervals_mut(&mut self) -> impl Iterator<Item = &mut [RawInterval]> {
        self.interval_chunks
            .iter_mut()
            .map(Vec::as_mut_slice)
            .chain(std::iter::once(self.intervals.as_mut_slice()))
    }

    /// Number of state records collected so far.
    pub fn num_raw_intervals(&self) -> usize {
        self.intervals.len() + self.interval_chunks.iter().map(Vec::len).sum::<usize>()
    }

    /// Sorts, validates and repairs, and returns the trace.
    pub fn finish(mut self, opts: BuildOptions) -> Result<Trace> {
        let nloc = self.locations.len();
        let src = self.source.clone();

        // bucket by location (stable, O(N)), in parallel: records mostly
        // arrive in time order, so each location's run is usually sorted
        let single = std::mem::take(&mut self.intervals);
        let chunks = std::mem::take(&mut self.interval_chunks);
        let raw: Vec<&[RawInterval]> = chunks
            .iter()
            .map(Vec::as_slice)
            .chain(std::iter::once(single.as_slice()))
            .collect();
        // the blocks freed while reading leave before the columns come
        crate::memory::return_freed_memory();
        let (mut offsets, mut start, mut end, mut state) = bucket_by_location(&raw, nloc);
        drop(raw);
        drop(chunks);
        drop(single);
        // per location, in parallel: sort the runs that are not in order
        // (counting them), clip overlaps and drop empty intervals, keeping
        // each location's result at the front of its run
        let runs = {
            let mut slices = Vec::with_capacity(nloc);
            let (mut s, mut e, mut st) = (&mut start[..], &mut end[..], &mut state[..]);
            for l in 0..nloc {
                let k = (offsets[l + 1] - offsets[l]) as usize;
                let (s0, s1) = std::mem::take(&mut s).split_at_mut(k);
                let (e0, e1) = std::mem::take(&mut e).split_at_mut(k);
                let (t0, t1) = std::mem::take(&mut st).split_at_mut(k);
                slices.push((s0, e0, t0));
                (s, e, st) = (s1, e1, t1);
            }
            slices
                .into_par_iter()
                .map(|(s, e, st)| clean_run(s, e, st))
                .collect::<Vec<Run>>()
        };
        let unsorted: u64 = runs.iter().map(|r| r.unsorted).sum();
        let first_unsorted = runs
            .iter()
            .enumerate()
            .find_map(|(l, r)| r.first_unsorted.map(|t| (l, t)));
        if opts.warn_unsorted {
            let at = self.where_(first_unsorted);
            self.diagnostics.repair("unsorted", &src, Position::none(), unsorted, || {
                format!("{unsorted} state record(s) start before an earlier record of the same location{at}; sorted by time")
            })?;
        }
        let overlaps: u64 = runs.iter().map(|r| r.overlaps).sum();
        let first_overlap = runs
            .iter()
            .enumerate()
            .find_map(|(l, r)| r.first_overlap.map(|t| (l, t)));
        let mut max_time: Time = runs.iter().map(|r| r.max_time).max().unwrap_or(0);
        // compact: only when some location dropped intervals
        if runs
            .iter()
            .enumerate()
            .any(|(l, r)| r.kept as u64 != offsets[l + 1] - offsets[l])
        {
            let mut w = 0usize;
            for (l, r) in runs.iter().enumerate() {
                let a = offsets[l] as usize;
                start.copy_within(a..a + r.kept, w);
                end.copy_within(a..a + r.kept, w);
                state.copy_within(a..a + r.kept, w);
                offsets[l] = w as u64;
                w += r.kept;
            }
            offsets[nloc] = w as u64;
            start.truncate(w);
            end.truncate(w);
            state.truncate(w);
        }
        self.overlaps_clipped(overlaps, first_overlap)?;
        let intervals = Intervals::from_columns(offsets, start, end, state);

        // events: by location (global last), then time, stable
        let mut ev = std::mem::take(&mut self.events);
        ev.par_sort_by_key(|e| (e.loc, e.time));
        let mut events = Events {
            offsets: Vec::with_capacity(nloc + 2),
            time: Vec::with_capacity(ev.len()),
            kind: Vec::with_capacity(ev.len()),
            value: Vec::with_capacity(ev.len()),
        };
        let mut j = 0usize;
        events.offsets.push(0);
        for l in 0..=nloc {
            let key = if l == nloc { GLOBAL } else { l as LocId };
            while j < ev.len() && ev[j].loc == key {
                events.time.push(ev[j].time);
                events.kind.push(ev[j].kind);
                events.value.push(ev[j].value);
                max_time = max_time.max(ev[j].time);
                j += 1;
            }
            events.offsets.push(events.time.len() as u64);
        }
        drop(ev);

        let mut ms = std::mem::take(&mut self.messages);
        ms.par_sort_by_key(|m| (m.send, m.recv, m.src, m.dst));
        let mut messages = Messages::default();
        for m in &ms {
            messages.sender.push(m.src);
            messages.receiver.push(m.dst);
            messages.send_time.push(m.send);
            messages.recv_time.push(m.recv);
            messages.bytes.push(m.bytes);
            messages.tag.push(m.tag);
            max_time = max_time.max(m.recv).max(m.send);
        }
        drop(ms);

        let mut cs = std::mem::take(&mut self.counters);
        cs.par_sort_by_key(|c| (c.loc, c.counter, c.time));
        let mut counters = Counters {
            defs: std::mem::take(&mut self.counter_defs),
            ..Default::default()
        };
        let mut k = 0usize;
        counters.offsets.push(0);
        for l in 0..nloc as LocId {
            while k < cs.len() && cs[k].loc == l {
                counters.counter.push(cs[k].counter);
                counters.time.push(cs[k].time);
                counters.value.push(cs[k].value);
                max_time = max_time.max(cs[k].time);
                k += 1;
            }
            counters.offsets.push(counters.time.len() as u64);
        }

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
/// state columns. Contiguous parts of the records are counted and
/// scattered in parallel.
fn bucket_by_location(
    raw: &[&[RawInterval]],
    nloc: usize,
) -> (Vec<u64>, Vec<Time>, Vec<Time>, Vec<StateId>) {
    let n: usize = raw.iter().map(|c| c.len()).sum();
    // at most one count per record in the per-part tables
    let parts = rayon::current_num_threads()
        .min(n / nloc.max(1))
        .clamp(1, 64);
    let part_len = n.div_ceil(parts).max(1);
    // the parts: runs of part_len records, as pieces of the blocks
    let mut groups: Vec<Vec<&[RawInterval]>> = vec![Vec::new()];
    let mut fill = 0usize;
    for &block in raw {
        let mut rest = block;
        while !rest.is_empty() {
            if fill == part_len {
                groups.push(Vec::new());
                fill = 0;
            }
            let take = (part_len - fill).min(rest.len());
            if let Some(g) = groups.last_mut() {
                g.push(&rest[..take]);
            }
            fill += take;
            rest = &rest[take..];
        }
    }
    let mut cursors: Vec<Vec<u64>> = groups
        .par_iter()
        .map(|g| {
            let mut v = vec![0u64; nloc];
            for r in g.iter().flat_map(|c| c.iter()) {
                v[r.loc as usize] += 1;
            }
            v
        })
        .collect();
    let mut offsets = vec![0u64; nloc + 1];
    for l in 0..nloc {
        // each part's first position in location l's run
        let mut pos = offsets[l];
        for c in cursors.iter_mut() {
            let k = c[l];
            c[l] = pos;
            pos += k;
        }
        offsets[l + 1] = pos;
    }
    let mut start = vec![0 as Time; n];
    let mut end = vec![0 as Time; n];
    let mut state = vec![0 as StateId; n];
    let dst = Columns {
        start: start.as_mut_ptr(),
        end: end.as_mut_ptr(),
        state: state.as_mut_ptr(),
    };
    groups
        .par_iter()
        .zip(cursors.par_iter_mut())
        .for_each(|(g, cur)| {
            for r in g.iter().flat_map(|c| c.iter()) {
                let k = &mut cur[r.loc as usize];
                // SAFETY: part p writes location l's records at
                // [cursor(p, l), cursor(p, l) + count(p, l)), ranges that
                // are disjoint across parts and locations and lie in 0..n
                // (they partition 0..n by construction of the prefix sums),
                // and the columns outlive this loop.
                unsafe { dst.write(*k as usize, r) };
                *k += 1;
            }
        });
    (offsets, start, end, state)
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
    /// # Safety
    /// `i` is in bounds of the three columns and written by one thread only.
    unsafe fn write(&self, i: usize, r: &RawInterval) {
        unsafe {
            *self.start.add(i) = r.start;
            *self.end.add(i) = r.end;
            *self.state.add(i) = r.state;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LocationKind, StateClass};

    fn builder(strict: bool) -> TraceBuilder {
        let mut b = TraceBuilder::new(Format::Synthetic, "mem", TimeUnit::nanoseconds(), strict);
        b.locations.add("a", LocationKind::Thread, None, 0);
        b.locations.add("b", LocationKind::Thread, None, 1);
        b.states.add("run", StateClass::Busy, None, 1);
        b
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
    fn parallel_bucketing_equals_a_sequential_reference() {
        // many locations, records in random order, overlaps, empties and
        // duplicates; on a pool of 4 threads so that parts really split
        let mut x = 0x2545f4914f6cdd1du64;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        // each case fed one interval at a time, then in blocks of random
        // sizes (add_intervals) mixed with single intervals
        let cases = [(1usize, 500usize), (7, 5000), (300, 20_000), (5000, 3000)];
        for (nloc, n, blocks) in cases
            .iter()
            .flat_map(|&(l, n)| [(l, n, false), (l, n, true)])
        {
            let mut b = TraceBuilder::new(Format::Synthetic, "mem", TimeUnit::nanoseconds(), false);
            for l in 0..nloc {
                b.locations
                    .add(format!("l{l}"), LocationKind::Thread, None, l as i64);
            }
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
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(4)
                .build()
                .unwrap();
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
