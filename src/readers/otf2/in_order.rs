//! The in-memory read of an archive whose locations' regions come in time
//! order, with no event before the clock's global offset (what Score-P
//! writes): each location's regions are flattened to states as they are
//! entered and left (the innermost open region, as a stream does) and its
//! intervals packed into the model's columns when its events end; sends
//! and receives get their key (sender, receiver, communicator, tag) as
//! they come. No list of every region (32 bytes each), none of every
//! region again to sort it (32 more), none of every send and receive
//! before its key (40): a third of a one-core read's page faults.
//!
//! Any other archive (a location's regions going back in time, an event
//! before the offset, a region never left that was entered after the end
//! of the trace) is read again by the general reader (`Events` in the
//! parent module), which keeps every region and sorts; the trace is the
//! same either way (tested against it).

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use super::{
    Archive, Clock, Coll, EventSink, Key, KeyLocs, LastComm, Marker, Ranks, Repairs, Rest,
    Skeleton, concat, event_bytes, finish, group_error, read_groups, read_locations, skeleton,
};
use crate::error::Result;
use crate::model::builder::{IntervalBlock, RawCounter, RawInterval};
use crate::model::matching::KeyedEvents;
use crate::model::{LocId, StateId, Time, Trace};
use crate::readers::ReadOptions;

/// A location's intervals are packed this many at a time. A thread's
/// whole location was held unpacked before (24 bytes an interval, doubled
/// as it grew): 2–4 MiB a thread for 64 locations of 86,000 intervals, on
/// every reading thread at once.
const FLAT_CHUNK: usize = 1 << 14;

/// What one thread's reader fills: the location at hand, flattened as its
/// events come, and what the model keeps of the others.
struct InOrderEvents<'a> {
    clock: Clock,
    loc_of: &'a HashMap<u64, LocId>,
    state_of: &'a HashMap<u32, StateId>,
    /// The ranks' locations as message keys take them ([`KeyLocs`]).
    ranks: &'a Ranks<'a, LocId>,
    last_comm: LastComm<'a, LocId>,
    /// Set by the reader that finds the archive needs the general reader;
    /// the others stop at their next region.
    general: &'a AtomicBool,
    stop: bool,
    // the location at hand
    cur: Option<u64>,
    loc: LocId,
    /// Open regions: the region and its state (none for an undefined one).
    stack: Vec<(u32, Option<StateId>)>,
    /// The states of the open regions that have one, innermost last.
    known: Vec<StateId>,
    /// Where the innermost state's current piece began (ticks).
    cursor: u64,
    /// The time of the location's last region event (ticks).
    last_time: u64,
    /// Collective begins not yet ended (ticks).
    coll_open: Vec<u64>,
    /// The location's intervals so far `(start, end, state)` (ns), up to
    /// [`FLAT_CHUNK`] of them: used again location after location.
    flat: Vec<(Time, Time, StateId)>,
    // what is kept
    blocks: Vec<IntervalBlock>,
    /// Per location with regions open at its end: the start of its last
    /// piece (ticks) and the innermost open region's state.
    tails: Vec<(LocId, u64, StateId)>,
    /// The latest end of a closed region (ticks).
    max_closed_end: u64,
    /// The sends and receives, with their keys (sender, receiver,
    /// communicator, tag).
    p2p: KeyedEvents<Key>,
    collectives: Vec<Coll>,
    /// The metric samples, each with its member as its counter.
    samples: Vec<RawCounter>,
    markers: Vec<Marker>,
    repairs: Repairs,
}

impl<'a> InOrderEvents<'a> {
    fn new(
        clock: Clock,
        loc_of: &'a HashMap<u64, LocId>,
        state_of: &'a HashMap<u32, StateId>,
        ranks: &'a Ranks<'a, LocId>,
        general: &'a AtomicBool,
    ) -> Self {
        InOrderEvents {
            clock,
            loc_of,
            state_of,
            ranks,
            last_comm: None,
            general,
            stop: false,
            cur: None,
            loc: 0,
            stack: Vec::new(),
            known: Vec::new(),
            cursor: 0,
            last_time: 0,
            coll_open: Vec::new(),
            flat: Vec::new(),
            blocks: Vec::new(),
            tails: Vec::new(),
            max_closed_end: 0,
            p2p: KeyedEvents::new(),
            collectives: Vec::new(),
            samples: Vec::new(),
            markers: Vec::new(),
            repairs: Repairs::default(),
        }
    }

    /// The archive needs the general reader: says so to every reader and
    /// interrupts this one.
    fn general(&mut self) -> bool {
        self.general.store(true, Ordering::Relaxed);
        self.stop = true;
        false
    }

    /// Checks the time of an event of `loc`, the location at hand: none
    /// before the offset (the general reader then counts from the earliest
    /// event).
    #[inline]
    fn at(&mut self, loc: u64, time: u64) -> bool {
        if time < self.clock.origin || self.cur != Some(loc) {
            return self.general();
        }
        true
    }

    /// [`Self::at`] for a region's event, which also comes no earlier than
    /// the location's last.
    #[inline]
    fn region_at(&mut self, loc: u64, time: u64) -> bool {
        if self.stop || time < self.last_time || !self.at(loc, time) {
            return self.general();
        }
        self.last_time = time;
        true
    }

    /// Adds the piece `[from, to)` (ticks) of `state`, when it is not empty
    /// in nanoseconds.
    #[inline]
    fn emit(&mut self, from: u64, to: u64, state: StateId) {
        let (a, b) = (self.clock.ns(from), self.clock.ns(to));
        if b > a {
            self.flat.push((a, b, state));
            if self.flat.len() == FLAT_CHUNK {
                // the rest in blocks after it (the builder keeps a
                // location's blocks in their order)
                self.pack_flat();
            }
        }
    }

    /// The location's intervals held so far, packed into a block.
    fn pack_flat(&mut self) {
        if !self.flat.is_empty() {
            self.blocks
                .push(IntervalBlock::of_location(self.loc, &self.flat));
        }
        self.flat.clear();
    }

    /// Ends the location at hand: its intervals packed, its open regions
    /// its tail.
    fn end_location(&mut self) {
        if self.cur.take().is_none() {
            return;
        }
        self.repairs.unclosed += self.stack.len() as u64;
        self.repairs.unknown_region += self.stack.iter().filter(|s| s.1.is_none()).count() as u64;
        if let Some(&top) = self.known.last() {
            self.tails.push((self.loc, self.cursor, top));
        }
        self.pack_flat();
        self.stack.clear();
        self.known.clear();
        self.coll_open.clear();
    }

    /// The key location of rank `peer` of `comm`, seen from the location
    /// at hand; `None` (counted as unmatched) when the definitions do not
    /// resolve it.
    fn peer(&mut self, peer: u32, comm: u32) -> Option<LocId> {
        let other = self
            .ranks
            .location_in(&mut self.last_comm, comm, peer, self.loc);
        if other.is_none() {
            self.repairs.unmatched_message += 1;
        }
        other
    }
}

impl EventSink for InOrderEvents<'_> {
    fn start_location(&mut self, loc: u64, _bytes: u64) {
        self.end_location();
        // a location the definitions do not hold: the general reader
        // leaves its regions out
        match self.loc_of.get(&loc) {
            Some(&l) => {
                self.cur = Some(loc);
                self.loc = l;
            }
            None => {
                self.general();
            }
        }
        self.stop |= self.general.load(Ordering::Relaxed);
        self.cursor = 0;
        self.last_time = 0;
    }

    fn enter(&mut self, loc: u64, time: u64, region: u32) -> bool {
        if !self.region_at(loc, time) {
            return false;
        }
        let state = self.state_of.get(&region).copied();
        self.stack.push((region, state));
        if let Some(s) = state {
            if let Some(&top) = self.known.last() {
                self.emit(self.cursor, time, top);
            }
            self.cursor = time;
            self.known.push(s);
        }
        true
    }

    fn leave(&mut self, loc: u64, time: u64, region: u32) -> bool {
        if !self.region_at(loc, time) {
            return false;
        }
        let Some((r, state)) = self.stack.pop() else {
            self.repairs.mismatched_leave += 1;
            return true;
        };
        if r != region {
            self.repairs.mismatched_leave += 1;
        }
        self.max_closed_end = self.max_closed_end.max(time);
        match state {
            Some(s) => {
                self.known.pop();
                let from = self.cursor;
                self.cursor = time;
                self.emit(from, time, s);
            }
            None => self.repairs.unknown_region += 1,
        }
        true
    }

    fn send(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        if let Some(other) = self.peer(peer, comm) {
            self.p2p.send((self.loc, other, comm, tag), time, len);
        }
        true
    }

    fn recv(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        if let Some(other) = self.peer(peer, comm) {
            self.p2p.recv((other, self.loc, comm, tag), time, len);
        }
        true
    }

    fn timed(&mut self, loc: u64, time: u64) -> bool {
        self.at(loc, time)
    }

    fn coll_begin(&mut self, loc: u64, time: u64) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        self.coll_open.push(time);
        true
    }

    fn coll_end(
        &mut self,
        loc: u64,
        time: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        let begin = self.coll_open.pop().unwrap_or_else(|| {
            self.repairs.unmatched_collective += 1;
            time
        });
        self.collectives
            .push((loc, begin, time, op, comm, root, sent, received));
        true
    }

    fn metric(&mut self, loc: u64, time: u64, member: u32, value: f64) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        if self.samples.capacity() == 0 {
            // freed at once when copied into the model's list (`concat`)
            self.samples = crate::memory::own_mapping(0);
        }
        self.samples.push(RawCounter {
            loc: self.loc,
            counter: member,
            time: self.clock.ns(time),
            value,
        });
        true
    }

    fn program(&mut self, loc: u64, time: u64, kind: u8, value: i64) -> bool {
        if !self.at(loc, time) {
            return false;
        }
        self.markers.push((loc, time, kind, value));
        true
    }

    fn unknown(&mut self, _loc: u64, _time: u64) -> bool {
        self.repairs.unknown_events += 1;
        true
    }
}

/// Reads the archive `a` (anchor `path`) as one whose locations' regions
/// come in time order; `None` when it is not one (read it with the
/// general reader).
pub(super) fn read(
    a: &Archive,
    path: &std::path::Path,
    opts: &ReadOptions,
) -> Result<Option<Trace>> {
    let phase = crate::phases::span("otf2: skeleton (one thread)");
    let (_, offset, length) = super::clock_of(&a.defs, path)?;
    let Skeleton {
        mut b,
        loc_of,
        state_of,
        clock,
    } = skeleton(&a.defs, path, opts, offset)?;
    let keys = KeyLocs::new(&a.defs, &loc_of);
    let ranks = Ranks::of_keys(&a.defs, &keys);
    drop(phase);
    let general = AtomicBool::new(false);
    let size = |l: u64| event_bytes(&a.evt_dir, l);
    let groups = read_groups(&a.locations, size);
    let phase = crate::phases::span("otf2: events read, regions flattened (all threads)");
    let parts: Vec<_> = groups
        .par_iter()
        .map(|g| {
            let ev = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
            read_locations(a, g, size, ev).map(|mut ev| {
                ev.end_location();
                ev
            })
        })
        .collect();
    drop(phase);
    crate::memory::return_freed_memory();
    if general.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let mut parts = parts
        .into_iter()
        .map(|p| p.map_err(|e| group_error(path, &a.evt_dir, e)))
        .collect::<Result<Vec<_>>>()?;

    // the regions still open close where the last one closed, or at the
    // declared end when later; one entered after that is the general
    // reader's to close
    let end = parts
        .iter()
        .map(|p| p.max_closed_end)
        .max()
        .unwrap_or(0)
        .max(offset.saturating_add(length));
    let e = clock.ns(end);
    let mut tails = Vec::new();
    for &(loc, from, state) in parts.iter().flat_map(|p| &p.tails) {
        let a = clock.ns(from);
        if a > e {
            return Ok(None);
        }
        if e > a {
            tails.push(RawInterval {
                loc,
                state,
                start: a,
                end: e,
            });
        }
    }
    let mut rep = Repairs::default();
    for p in &mut parts {
        rep.add(&p.repairs);
        for block in p.blocks.drain(..) {
            b.add_interval_block(block);
        }
    }
    // after every location's own block: each tail stays last on its
    // location (the builder keeps the blocks' order per location)
    b.add_interval_block(IntervalBlock::Records(tails));
    let p2p = parts
        .iter_mut()
        .map(|p| std::mem::take(&mut p.p2p))
        .collect();
    let samples = concat(
        parts
            .iter_mut()
            .map(|p| std::mem::take(&mut p.samples))
            .collect(),
    );
    let rest = Rest {
        p2p,
        defined: keys.defined,
        collectives: parts.iter().map(|p| &p.collectives[..]).collect(),
        samples,
        markers: parts.iter().map(|p| &p.markers[..]).collect(),
    };
    finish(&a.defs, b, &loc_of, clock, rest, rep, path, opts).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::otf2::{Defs, Events};

    /// One location (OTF2 id 7); regions 0..4 defined (1 and 3 share a
    /// state), 4 undefined.
    fn maps() -> (HashMap<u64, LocId>, HashMap<u32, StateId>) {
        (
            [(7u64, 0 as LocId)].into_iter().collect(),
            [(0u32, 0 as StateId), (1, 1), (2, 2), (3, 1)]
                .into_iter()
                .collect(),
        )
    }

    /// A location of more intervals than [`FLAT_CHUNK`] is packed in
    /// blocks as they fill, in order: its model is the one of all its
    /// intervals in one block.
    #[test]
    fn a_long_location_is_packed_a_chunk_at_a_time() {
        use crate::model::{BuildOptions, Format, LocationKind, TimeUnit, TraceBuilder};
        let (loc_of, state_of) = maps();
        let defs = Defs::default();
        let keys = KeyLocs::new(&defs, &loc_of);
        let ranks = Ranks::of_keys(&defs, &keys);
        let clock = Clock {
            res: 1_000_000_000,
            origin: 1000,
        };
        let general = AtomicBool::new(false);
        let mut s = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
        s.start_location(7, 0);
        let n = 2 * FLAT_CHUNK + 123;
        let mut t = clock.origin;
        let mut all = Vec::new();
        for i in 0..n {
            let region = (i % 3) as u32;
            assert!(s.enter(7, t, region));
            assert!(s.leave(7, t + 2, region));
            all.push((clock.ns(t), clock.ns(t + 2), state_of[&region]));
            t += 3;
        }
        s.end_location();
        assert!(!general.load(Ordering::Relaxed));
        assert_eq!(s.blocks.len(), 3);
        let model = |blocks: Vec<IntervalBlock>| {
            let mut b = TraceBuilder::new(Format::Otf2, "t", TimeUnit::nanoseconds(), false);
            for st in 0..3 {
                b.states
                    .intern(&format!("s{st}"), crate::model::StateClass::Busy);
            }
            b.locations.add("l", LocationKind::Thread, None, 7);
            for block in blocks {
                b.add_interval_block(block);
            }
            let t = b.finish(BuildOptions::default()).unwrap();
            assert_eq!(t.intervals.len(), n);
            assert!(t.meta.diagnostics.warnings.is_empty());
            serde_json::to_string(&t).unwrap()
        };
        let whole = model(vec![IntervalBlock::of_location(0, &all)]);
        assert_eq!(model(std::mem::take(&mut s.blocks)), whole);
    }

    /// Random enters and leaves in time order (undefined regions, leaves
    /// of the wrong region or of nothing, zero-length regions, several
    /// ticks on one nanosecond, regions left open) flatten as they come to
    /// what the general reader's nesting of the whole location gives, with
    /// the same repairs.
    #[test]
    fn flattening_as_events_come_equals_the_general_readers_nesting() {
        let mut rng = crate::test_rng::XorShift(0x2545f4914f6cdd1d);
        let (loc_of, state_of) = maps();
        let defs = Defs::default();
        let keys = KeyLocs::new(&defs, &loc_of);
        let ranks = Ranks::of_keys(&defs, &keys);
        for round in 0..400 {
            let res = [1_000_000_000u64, 2_400_000_000, 1_000_000, 3][round % 4];
            let clock = Clock { res, origin: 1000 };
            let general = AtomicBool::new(false);
            let mut s = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
            let mut m = Events::default();
            s.start_location(7, 0);
            m.start_location(7, 0);
            let mut t = clock.origin;
            for _ in 0..rng.below(60) {
                t += rng.below(4);
                let region = rng.below(5) as u32;
                if rng.below(2) == 0 {
                    assert!(s.enter(7, t, region));
                    m.enter(7, t, region);
                } else {
                    assert!(s.leave(7, t, region));
                    m.leave(7, t, region);
                }
            }
            let mut got = s.flat.clone();
            s.end_location();
            assert!(!general.load(Ordering::Relaxed));
            // the open regions close at the end (as `read` closes them,
            // when none was entered after it)
            let declared = clock.origin + rng.below(100);
            let end = s.max_closed_end.max(declared);
            if s.tails.iter().any(|&(_, from, _)| from > end) {
                continue;
            }
            for &(_, from, st) in &s.tails {
                if clock.ns(end) > clock.ns(from) {
                    got.push((clock.ns(from), clock.ns(end), st));
                }
            }
            let (want, mem_end, unclosed, unknown, clipped) =
                super::super::general_intervals(&mut m, 7, declared, &state_of, clock);
            assert_eq!(end, mem_end, "{round}");
            assert_eq!(clipped, 0, "{round}");
            assert_eq!(got, want, "{round}");
            assert_eq!(s.repairs.mismatched_leave, m.mismatched_leave, "{round}");
            assert_eq!(s.repairs.unclosed, unclosed, "{round}");
            assert_eq!(s.repairs.unknown_region, unknown, "{round}");
        }
    }

    /// Time going back on a location's regions, an event before the
    /// clock's offset or of a location the definitions lack hands the
    /// archive to the general reader, and stops the other readers at
    /// their next region.
    #[test]
    fn untimely_events_hand_the_archive_to_the_general_reader() {
        let (loc_of, state_of) = maps();
        let defs = Defs::default();
        let keys = KeyLocs::new(&defs, &loc_of);
        let ranks = Ranks::of_keys(&defs, &keys);
        let clock = Clock {
            res: 1_000_000_000,
            origin: 100,
        };
        let cases: [&dyn Fn(&mut InOrderEvents) -> bool; 5] = [
            &|s| s.enter(7, 150, 0) && s.leave(7, 149, 0),
            &|s| s.enter(7, 99, 0),
            &|s| s.metric(7, 50, 0, 1.0),
            &|s| s.send(7, 99, 0, 0, 0, 8),
            &|s| {
                s.start_location(8, 0);
                s.enter(8, 150, 0)
            },
        ];
        for (i, case) in cases.iter().enumerate() {
            let general = AtomicBool::new(false);
            let mut s = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
            s.start_location(7, 0);
            assert!(!case(&mut s), "case {i}");
            assert!(general.load(Ordering::Relaxed), "case {i}");
            // another reader stops at its next location's first region
            let mut other = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
            other.start_location(7, 0);
            assert!(!other.enter(7, 150, 0), "case {i}");
        }
        // in order, at the offset, equal times: taken
        let general = AtomicBool::new(false);
        let mut s = InOrderEvents::new(clock, &loc_of, &state_of, &ranks, &general);
        s.start_location(7, 0);
        assert!(s.enter(7, 100, 0) && s.enter(7, 100, 1) && s.leave(7, 100, 1));
        assert!(s.metric(7, 100, 0, 1.0) && s.leave(7, 120, 0));
        s.end_location();
        assert!(!general.load(Ordering::Relaxed));
        assert_eq!(s.blocks.len(), 1);
        assert_eq!(s.blocks[0].len(), 1);
    }
}
