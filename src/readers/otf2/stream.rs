//! OTF2 archives reduced while they are read (`--stream`, `reduce`): every
//! location's events go through a sink of their own, its regions flattened
//! to states as they are entered and left (the innermost open region, as
//! in memory), its sends and receives counted per key instead of kept
//! ([`Side`]), and the state intervals handed to an [`IntervalSink`] in
//! batches. Locations are read in parallel (a reader per thread, as in
//! memory), and a process of an MPI job reads a share of them: what a
//! share saw besides its intervals ([`Otf2Share`]) merges, and the
//! messages are matched once every share is in.
//!
//! Identical to the in-memory reader (tested): the intervals, the matched
//! messages' counts and bytes, the counts, the repairs, the span. A stream
//! needs each location's events in time order and none before the clock's
//! global offset (the in-memory reader sorts, and counts from the earliest
//! event); it says so and stops otherwise.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rustc_hash::FxHashMap as HashMap;

use super::{
    Archive, Clock, Defs, EventSink, Ranks, Repairs, Skeleton, balance, event_bytes, group_error,
    marker_name, metric_name, open_archive, read_locations, skeleton,
};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::RawInterval;
use crate::model::matching::{Side, match_sides};
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{LocId, StateId, Time, Trace};
use crate::readers::ReadOptions;

/// (sender, receiver, communicator, tag), the locations being OTF2's.
type Key = (u64, u64, u32, u32);

/// State intervals handed over at a time.
const BATCH: usize = 1 << 15;

/// An archive opened for a stream: its definitions and the trace without
/// records, with times counted from the clock's global offset.
pub struct Otf2Stream {
    path: PathBuf,
    archive: Archive,
    skeleton: Skeleton,
    /// The clock's global offset + length (ticks).
    declared: u64,
}

/// What a share of the locations saw besides its state intervals: the
/// counted sides of its messages, the regions still open at the end of
/// each location, counts and repairs. Shares of one archive merge.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Otf2Share {
    repairs: Repairs,
    sends: HashMap<Key, Side>,
    recvs: HashMap<Key, Side>,
    /// Per location with regions open at its end: the start of its last
    /// piece (ticks) and the innermost open region's state.
    tails: Vec<(LocId, u64, StateId)>,
    /// The latest end of a closed region (ticks).
    max_closed_end: u64,
    collectives: u64,
    /// Program begin and end events.
    markers: [u64; 2],
    samples: u64,
    /// Metric members with samples.
    members: BTreeSet<u32>,
    /// The latest collective end, marker and sample (ns).
    last: [Time; 3],
}

/// What one thread's reader feeds: the location at hand, flattened as its
/// events come, and what it counts.
struct StreamEvents<'a> {
    clock: Clock,
    window: (Time, Time),
    loc_of: &'a HashMap<u64, LocId>,
    state_of: &'a HashMap<u32, StateId>,
    ranks: &'a Ranks<'a>,
    out: SyncSender<Vec<RawInterval>>,
    failure: &'a Mutex<Vec<(u64, String)>>,
    share: Otf2Share,
    batch: Vec<RawInterval>,
    // the location at hand
    cur: u64,
    loc: LocId,
    /// Open regions: the region and its state (none for an undefined one).
    stack: Vec<(u32, Option<StateId>)>,
    /// The states of the open regions that have one, innermost last.
    known: Vec<StateId>,
    /// Where the innermost state's current piece began (ticks).
    cursor: u64,
    last_time: u64,
    coll_open: u64,
}

impl<'a> StreamEvents<'a> {
    /// A reader's sink, before its first location.
    fn new(
        clock: Clock,
        window: (Time, Time),
        loc_of: &'a HashMap<u64, LocId>,
        state_of: &'a HashMap<u32, StateId>,
        ranks: &'a Ranks<'a>,
        out: SyncSender<Vec<RawInterval>>,
        failure: &'a Mutex<Vec<(u64, String)>>,
    ) -> Self {
        StreamEvents {
            clock,
            window,
            loc_of,
            state_of,
            ranks,
            out,
            failure,
            share: Otf2Share::default(),
            batch: Vec::with_capacity(BATCH),
            cur: 0,
            loc: LocId::MAX,
            stack: Vec::new(),
            known: Vec::new(),
            cursor: 0,
            last_time: 0,
            coll_open: 0,
        }
    }

    fn fail(&mut self, why: String) -> bool {
        if let Ok(mut f) = self.failure.lock() {
            f.push((self.cur, why));
        }
        false
    }

    /// Checks the time of an event of the location at hand.
    fn at(&mut self, time: u64) -> bool {
        if time < self.clock.origin {
            let why = format!(
                "an event at {time} ticks, before the clock's global offset ({} ticks): a \
                 stream counts time from the offset (read without --stream)",
                self.clock.origin
            );
            return self.fail(why);
        }
        if time < self.last_time {
            let why = format!(
                "an event at {time} ticks after one at {} ticks: --stream needs each \
                 location's events in time order (read without --stream, which sorts them)",
                self.last_time
            );
            return self.fail(why);
        }
        self.last_time = time;
        true
    }

    /// Hands over the piece `[from, to)` (ticks) of `state`.
    fn emit(&mut self, from: u64, to: u64, state: StateId) -> bool {
        let (a, b) = (self.clock.ns(from), self.clock.ns(to));
        if b > a {
            self.batch.push(RawInterval {
                loc: self.loc,
                state,
                start: a,
                end: b,
            });
            if self.batch.len() >= BATCH {
                return self.flush();
            }
        }
        true
    }

    fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let b = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        // the receiver is gone only when reducing failed (said there)
        self.out.send(b).is_ok()
    }

    /// Ends the location at hand: its open regions become its tail.
    fn end_location(&mut self) {
        let open = self.stack.len() as u64;
        self.share.repairs.unclosed += open;
        self.share.repairs.unknown_region +=
            self.stack.iter().filter(|s| s.1.is_none()).count() as u64;
        if let Some(&top) = self.known.last() {
            self.share.tails.push((self.loc, self.cursor, top));
        }
        self.stack.clear();
        self.known.clear();
    }

    /// Counts a send (or a receive) of `loc` to (from) rank `peer` of
    /// `comm` on its side of the key (sender, receiver, communicator, tag).
    fn p2p(
        &mut self,
        send: bool,
        loc: u64,
        time: u64,
        (peer, comm, tag): (u32, u32, u32),
        len: u64,
    ) -> bool {
        if !self.at(time) {
            return false;
        }
        let Some(other) = self.ranks.location(comm, peer, loc) else {
            self.share.repairs.unmatched_message += 1;
            return true;
        };
        let t = self.clock.ns(time);
        let (map, key) = if send {
            (&mut self.share.sends, (loc, other, comm, tag))
        } else {
            (&mut self.share.recvs, (other, loc, comm, tag))
        };
        map.entry(key).or_default().push(t, len, self.window);
        true
    }
}

impl EventSink for StreamEvents<'_> {
    fn start_location(&mut self, loc: u64, _bytes: u64) {
        self.end_location();
        self.cur = loc;
        self.loc = self.loc_of.get(&loc).copied().unwrap_or(LocId::MAX);
        self.cursor = 0;
        self.last_time = 0;
        self.coll_open = 0;
    }

    fn enter(&mut self, _loc: u64, time: u64, region: u32) -> bool {
        if !self.at(time) {
            return false;
        }
        let state = self.state_of.get(&region).copied();
        self.stack.push((region, state));
        if let Some(s) = state {
            if let Some(&top) = self.known.last()
                && !self.emit(self.cursor, time, top)
            {
                return false;
            }
            self.cursor = time;
            self.known.push(s);
        }
        true
    }

    fn leave(&mut self, _loc: u64, time: u64, region: u32) -> bool {
        if !self.at(time) {
            return false;
        }
        let Some((r, state)) = self.stack.pop() else {
            self.share.repairs.mismatched_leave += 1;
            return true;
        };
        if r != region {
            self.share.repairs.mismatched_leave += 1;
        }
        self.share.max_closed_end = self.share.max_closed_end.max(time);
        match state {
            Some(s) => {
                self.known.pop();
                let from = self.cursor;
                self.cursor = time;
                self.emit(from, time, s)
            }
            None => {
                self.share.repairs.unknown_region += 1;
                true
            }
        }
    }

    fn send(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        self.p2p(true, loc, time, (peer, comm, tag), len)
    }

    fn recv(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        self.p2p(false, loc, time, (peer, comm, tag), len)
    }

    fn timed(&mut self, _loc: u64, time: u64) -> bool {
        self.at(time)
    }

    fn coll_begin(&mut self, _loc: u64, time: u64) -> bool {
        if !self.at(time) {
            return false;
        }
        self.coll_open += 1;
        true
    }

    fn coll_end(
        &mut self,
        _loc: u64,
        time: u64,
        _op: u8,
        _comm: u32,
        _root: u32,
        _sent: u64,
        _received: u64,
    ) -> bool {
        if !self.at(time) {
            return false;
        }
        if self.coll_open > 0 {
            self.coll_open -= 1;
        } else {
            self.share.repairs.unmatched_collective += 1;
        }
        self.share.collectives += 1;
        self.share.last[0] = self.share.last[0].max(self.clock.ns(time));
        true
    }

    fn metric(&mut self, _loc: u64, time: u64, member: u32, _value: f64) -> bool {
        if !self.at(time) {
            return false;
        }
        self.share.samples += 1;
        self.share.members.insert(member);
        self.share.last[2] = self.share.last[2].max(self.clock.ns(time));
        true
    }

    fn program(&mut self, _loc: u64, time: u64, kind: u8, _value: i64) -> bool {
        if !self.at(time) {
            return false;
        }
        self.share.markers[usize::from(kind.min(1))] += 1;
        self.share.last[1] = self.share.last[1].max(self.clock.ns(time));
        true
    }

    fn unknown(&mut self, _loc: u64, _time: u64) -> bool {
        self.share.repairs.unknown_events += 1;
        true
    }
}

impl Otf2Share {
    /// Adds what another share saw (other locations of the same archive).
    pub fn merge(&mut self, o: Otf2Share) -> Result<()> {
        self.repairs.add(&o.repairs);
        for (mine, theirs) in [(&mut self.sends, o.sends), (&mut self.recvs, o.recvs)] {
            for (k, s) in theirs {
                if mine.insert(k, s).is_some() {
                    return Err(Error::Invalid(
                        "two shares of a stream read the same location".into(),
                    ));
                }
            }
        }
        self.tails.extend(o.tails);
        self.max_closed_end = self.max_closed_end.max(o.max_closed_end);
        self.collectives += o.collectives;
        self.markers[0] += o.markers[0];
        self.markers[1] += o.markers[1];
        self.samples += o.samples;
        self.members.extend(o.members);
        for (a, b) in self.last.iter_mut().zip(o.last) {
            *a = (*a).max(b);
        }
        Ok(())
    }
}

impl Otf2Stream {
    /// Opens the archive at `path` (its anchor) and reads its definitions.
    pub fn open(path: &Path, opts: &ReadOptions) -> Result<Otf2Stream> {
        let archive = open_archive(path)?;
        let (_, offset, length) = super::clock_of(&archive.defs, path)?;
        let skeleton = skeleton(&archive.defs, path, opts, offset)?;
        Ok(Otf2Stream {
            path: path.to_path_buf(),
            archive,
            skeleton,
            declared: offset.saturating_add(length),
        })
    }

    /// The archive's locations.
    pub fn locations(&self) -> usize {
        self.skeleton.b.locations.len()
    }

    /// The end of the trace the clock declares (ns after the offset).
    pub fn declared_end(&self) -> Time {
        self.skeleton.clock.ns(self.declared)
    }

    /// Streams share `k` of `n` of the locations (runs of about equal event
    /// bytes, in the definitions' order) into `sink`, each thread reading
    /// a run of the share's locations with a reader of its own. Every
    /// share begins the sink with all locations, so the sinks of the
    /// shares merge.
    pub fn read_share(&self, sink: &mut dyn IntervalSink, k: u64, n: u64) -> Result<Otf2Share> {
        sink.begin(self.locations(), self.declared_end())?;
        let a = &self.archive;
        let size = |l: u64| event_bytes(&a.evt_dir, l);
        let shares = balance(&a.locations, size, n.max(1) as usize);
        let mine: &[u64] = shares.get(k as usize).map_or(&[], |v| v);
        let groups = balance(mine, size, rayon::current_num_threads());
        let ranks = Ranks::new(&a.defs);
        let failure = Mutex::new(Vec::new());
        let window = sink.window();
        let (tx, rx): (SyncSender<Vec<RawInterval>>, Receiver<Vec<RawInterval>>) =
            sync_channel(2 * groups.len().max(1));
        let mut reduce_error: Option<String> = None;
        let joined: Vec<Option<std::result::Result<Otf2Share, super::GroupError>>> =
            std::thread::scope(|scope| {
                let handles: Vec<_> = groups
                    .iter()
                    .map(|g| {
                        let ev = StreamEvents::new(
                            self.skeleton.clock,
                            window,
                            &self.skeleton.loc_of,
                            &self.skeleton.state_of,
                            &ranks,
                            tx.clone(),
                            &failure,
                        );
                        scope.spawn(move || {
                            read_locations(a, g, size, ev).map(|mut ev| {
                                ev.end_location();
                                ev.flush();
                                ev.share
                            })
                        })
                    })
                    .collect();
                drop(tx);
                let rx = rx;
                for batch in rx.iter() {
                    if let Err(e) = sink.intervals(&batch) {
                        reduce_error = Some(e);
                        break;
                    }
                }
                // readers still sending fail and stop
                drop(rx);
                handles.into_iter().map(|h| h.join().ok()).collect()
            });
        if let Some(e) = reduce_error {
            return Err(Error::parse(&self.path, Position::none(), e));
        }
        let failed = failure.into_inner().unwrap_or_default();
        if let Some((l, why)) = failed.into_iter().min_by_key(|f| f.0) {
            let file = a.evt_dir.join(format!("{l}.evt"));
            return Err(Error::parse(
                &self.path,
                Position::none(),
                format!("{} (location {l}): {why}", file.display()),
            ));
        }
        let mut share = Otf2Share::default();
        for j in joined {
            let part =
                j.ok_or_else(|| Error::Invalid("a thread reading OTF2 events failed".into()))?;
            share.merge(part.map_err(|e| group_error(&self.path, &a.evt_dir, e))?)?;
        }
        Ok(share)
    }

    /// Ends the stream once every share is in `sink` and `share`: closes
    /// the regions still open at the end of the trace, matches the
    /// messages, counts what is only counted and gives the trace without
    /// records (locations, states, span, repairs) with the state of each
    /// key the sink saw (the keys are the states).
    pub fn finish(
        self,
        share: Otf2Share,
        sink: &mut dyn IntervalSink,
        opts: &ReadOptions,
    ) -> Result<(Trace, Vec<(u32, StateId)>)> {
        let Otf2Stream {
            path,
            archive,
            skeleton:
                Skeleton {
                    mut b,
                    loc_of,
                    clock,
                    ..
                },
            declared,
            ..
        } = self;
        let fail = |m: String| Error::parse(&path, Position::none(), m);
        let mut rep = share.repairs;
        // the regions still open close where the last one closed, or at
        // the declared end when later
        let end = share.max_closed_end.max(declared);
        let e = clock.ns(end);
        let mut tails = share.tails.clone();
        tails.sort_unstable_by_key(|t| t.0);
        for (loc, from, state) in tails {
            let a = clock.ns(from);
            if a > e {
                return Err(fail(format!(
                    "location {loc} enters a region at {from} ticks that is never left, after \
                     the end of the trace ({end} ticks): a stream cannot close it as the \
                     in-memory reader does (read without --stream)"
                )));
            }
            if e > a {
                sink.interval(loc, a, e, state).map_err(fail)?;
            }
        }
        let empty = Side::default();
        let keys: BTreeSet<Key> = share
            .sends
            .keys()
            .chain(share.recvs.keys())
            .copied()
            .collect();
        let mut inexact = 0u64;
        for k in keys {
            let s = share.sends.get(&k).unwrap_or(&empty);
            let r = share.recvs.get(&k).unwrap_or(&empty);
            let (t, left) = match_sides(s, r);
            rep.unmatched_message += left;
            if t.messages == 0 {
                continue;
            }
            match (loc_of.get(&k.0), loc_of.get(&k.1)) {
                (Some(&src), Some(&dst)) => {
                    inexact += u64::from(!t.last_exact);
                    sink.messages(src, dst, &t).map_err(fail)?;
                }
                _ => rep.unmatched_message += t.messages,
            }
        }
        sink.counted(Counted::Collectives, share.collectives, share.last[0]);
        sink.counted(
            Counted::Events,
            share.markers[0] + share.markers[1],
            share.last[1],
        );
        sink.counted(Counted::CounterSamples, share.samples, share.last[2]);
        sink.counted(Counted::Communicators, b.communicators.len() as u64, 0);
        let defs: &Defs = &archive.defs;
        let name = |id: u32| defs.strings.get(&id).cloned().unwrap_or_default();
        for &m in &share.members {
            let (n, u) = metric_name(defs, m, &name);
            b.counter_def(&n, &u);
        }
        for kind in 0..2u8 {
            if share.markers[kind as usize] > 0 {
                b.event_types.intern(marker_name(kind));
            }
        }
        rep.report(&mut b, &path)?;
        let tail = crate::model::matching::TAIL;
        b.diagnostics.note(
            "stream-span-bound",
            &path,
            Position::none(),
            inexact,
            || {
                format!(
                    "{inexact} pair(s) of ranks have {tail} or more unmatched sends or receives \
                     after their last matched message: the span counts those messages until \
                     the earliest of their last {tail} (in memory: until the last matched one)"
                )
            },
        );
        b.set_declared_end(clock.ns(declared).max(sink.end_time()));
        crate::readers::finish_stream_skeleton(b, opts)
    }
}

// ---- a share as bytes (for the process that merges) ------------------------

const MAGIC: u64 = 0x6f74_6632_7368_7231; // "otf2shr1"

fn put(w: &mut Vec<u8>, x: u64) {
    w.extend_from_slice(&x.to_le_bytes());
}

impl Otf2Share {
    /// The share as bytes (little-endian), for [`Otf2Share::from_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        put(&mut w, MAGIC);
        let r = &self.repairs;
        for x in [
            r.mismatched_leave,
            r.unclosed,
            r.clipped,
            r.unknown_region,
            r.unmatched_message,
            r.unmatched_collective,
            r.unknown_events,
            self.max_closed_end,
            self.collectives,
            self.markers[0],
            self.markers[1],
            self.samples,
            self.last[0],
            self.last[1],
            self.last[2],
        ] {
            put(&mut w, x);
        }
        put(&mut w, self.members.len() as u64);
        for &m in &self.members {
            put(&mut w, m as u64);
        }
        put(&mut w, self.tails.len() as u64);
        for &(l, from, s) in &self.tails {
            put(&mut w, l as u64);
            put(&mut w, from);
            put(&mut w, s as u64);
        }
        for map in [&self.sends, &self.recvs] {
            put(&mut w, map.len() as u64);
            for (k, s) in map {
                put(&mut w, k.0);
                put(&mut w, k.1);
                put(&mut w, (k.2 as u64) << 32 | k.3 as u64);
                put(&mut w, s.n);
                put(&mut w, s.before);
                put(&mut w, s.before_end);
                for &t in &s.tail {
                    put(&mut w, t);
                }
                put(&mut w, s.runs.len() as u64);
                for &(b, c) in &s.runs {
                    put(&mut w, b);
                    put(&mut w, c);
                }
            }
        }
        w
    }

    /// Decodes [`Otf2Share::to_bytes`]; damaged or truncated bytes are an
    /// error, never a panic or a huge allocation.
    pub fn from_bytes(b: &[u8]) -> Result<(Otf2Share, usize)> {
        let bad = || Error::Invalid("damaged OTF2 stream share received".into());
        let mut at = 0usize;
        let mut get = || -> Result<u64> {
            let x = b.get(at..at + 8).ok_or_else(bad)?;
            at += 8;
            Ok(u64::from_le_bytes(x.try_into().map_err(|_| bad())?))
        };
        if get()? != MAGIC {
            return Err(bad());
        }
        let mut v = [0u64; 15];
        for x in &mut v {
            *x = get()?;
        }
        let mut s = Otf2Share {
            repairs: Repairs {
                mismatched_leave: v[0],
                unclosed: v[1],
                clipped: v[2],
                unknown_region: v[3],
                unmatched_message: v[4],
                unmatched_collective: v[5],
                unknown_events: v[6],
            },
            max_closed_end: v[7],
            collectives: v[8],
            markers: [v[9], v[10]],
            samples: v[11],
            last: [v[12], v[13], v[14]],
            ..Default::default()
        };
        // every count is bounded by the bytes that must follow it
        let count = |n: u64, each: usize| -> Result<usize> {
            let n = usize::try_from(n).map_err(|_| bad())?;
            if n.saturating_mul(each) > b.len() {
                return Err(bad());
            }
            Ok(n)
        };
        let n = count(get()?, 8)?;
        for _ in 0..n {
            s.members.insert(u32::try_from(get()?).map_err(|_| bad())?);
        }
        let n = count(get()?, 24)?;
        for _ in 0..n {
            let l = LocId::try_from(get()?).map_err(|_| bad())?;
            let from = get()?;
            let st = StateId::try_from(get()?).map_err(|_| bad())?;
            s.tails.push((l, from, st));
        }
        for send in [true, false] {
            let n = count(get()?, 80)?;
            for _ in 0..n {
                let (src, dst, ct) = (get()?, get()?, get()?);
                let mut side = Side {
                    n: get()?,
                    before: get()?,
                    before_end: get()?,
                    ..Default::default()
                };
                for t in &mut side.tail {
                    *t = get()?;
                }
                let runs = count(get()?, 16)?;
                for _ in 0..runs {
                    side.runs.push((get()?, get()?));
                }
                let key = (src, dst, (ct >> 32) as u32, ct as u32);
                let map = if send { &mut s.sends } else { &mut s.recvs };
                map.insert(key, side);
            }
        }
        Ok((s, at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct One {
        loc_of: HashMap<u64, LocId>,
        state_of: HashMap<u32, StateId>,
        defs: Defs,
        failure: Mutex<Vec<(u64, String)>>,
    }

    fn one() -> One {
        One {
            loc_of: [(7u64, 0 as LocId)].into_iter().collect(),
            // regions 0..4 defined (1 and 3 share a state), 4 undefined
            state_of: [(0u32, 0 as StateId), (1, 1), (2, 2), (3, 1)]
                .into_iter()
                .collect(),
            defs: Defs::default(),
            failure: Mutex::new(Vec::new()),
        }
    }

    fn events<'a>(
        o: &'a One,
        ranks: &'a Ranks<'a>,
        clock: Clock,
        tx: SyncSender<Vec<RawInterval>>,
    ) -> StreamEvents<'a> {
        StreamEvents::new(
            clock,
            (0, u64::MAX),
            &o.loc_of,
            &o.state_of,
            ranks,
            tx,
            &o.failure,
        )
    }

    /// Random enters and leaves (undefined regions, leaves of the wrong
    /// region or of nothing, zero-length regions, several ticks on one
    /// nanosecond, regions left open) flatten as they come to what the
    /// in-memory reader's nesting gives from the whole location, with the
    /// same repairs.
    #[test]
    fn flattening_as_events_come_equals_flattening_the_whole_location() {
        let mut rng = crate::test_rng::XorShift(0x9e3779b97f4a7c15);
        let mut refused = 0;
        for round in 0..300 {
            let o = one();
            let ranks = Ranks::new(&o.defs);
            let res = [1_000_000_000u64, 2_400_000_000, 1_000_000][round % 3];
            let origin = 1000;
            let clock = Clock { res, origin };
            let (tx, rx) = sync_channel(4);
            let mut s = events(&o, &ranks, clock, tx);
            let mut m = crate::readers::otf2::Events::default();
            s.start_location(7, 0);
            m.start_location(7, 0);
            let mut t = origin;
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
            s.end_location();
            assert!(s.flush());
            let share = std::mem::take(&mut s.share);
            drop(s);
            let mut got: Vec<(Time, Time, StateId)> = Vec::new();
            for b in rx.try_iter() {
                got.extend(b.iter().map(|r| (r.start, r.end, r.state)));
            }
            // the open regions close at the end, as `finish` closes them
            let declared = origin + rng.below(100);
            let end = share.max_closed_end.max(declared);
            if share
                .tails
                .iter()
                .any(|&(_, from, _)| clock.ns(from) > clock.ns(end))
            {
                // a region entered after the end and never left: refused
                // by `finish` (the in-memory reader drops it)
                refused += 1;
                continue;
            }
            for &(_, from, st) in &share.tails {
                if clock.ns(end) > clock.ns(from) {
                    got.push((clock.ns(from), clock.ns(end), st));
                }
            }
            // in memory
            let (want, mem_end, unclosed, unknown, clipped) =
                super::super::general_intervals(&mut m, 7, declared, &o.state_of, clock);
            assert_eq!(end, mem_end, "{round}");
            assert_eq!(clipped, 0, "{round}");
            assert_eq!(got, want, "{round}");
            let r = share.repairs;
            assert_eq!(r.mismatched_leave, m.mismatched_leave, "{round}");
            assert_eq!(r.unclosed, unclosed, "{round}");
            assert_eq!(r.unknown_region, unknown, "{round}");
        }
        assert!(refused < 100, "{refused}");
    }

    /// Time going back on a location, or an event before the clock's
    /// offset, stops the stream with what to do.
    #[test]
    fn time_going_back_or_before_the_offset_stops_with_a_reason() {
        let o = one();
        let ranks = Ranks::new(&o.defs);
        let (tx, _rx) = sync_channel(16);
        let mut s = events(
            &o,
            &ranks,
            Clock {
                res: 1_000_000_000,
                origin: 100,
            },
            tx,
        );
        s.start_location(7, 0);
        assert!(s.enter(7, 200, 0));
        assert!(!s.leave(7, 150, 0));
        assert!(!s.enter(7, 50, 0));
        let f = o.failure.lock().unwrap().clone();
        assert_eq!(f.len(), 2);
        assert!(f[0].1.contains("time order"), "{f:?}");
        assert!(f[1].1.contains("global offset"), "{f:?}");
    }

    /// A share survives its bytes; damaged or cut bytes are an error,
    /// never a panic.
    #[test]
    fn shares_as_bytes_round_trip_and_damage_is_an_error() {
        let mut s = Otf2Share {
            max_closed_end: 99,
            collectives: 3,
            markers: [1, 2],
            samples: 5,
            last: [4, 5, 6],
            ..Default::default()
        };
        s.repairs.unclosed = 2;
        s.members.insert(17);
        s.tails.push((3, 40, 2));
        let mut side = Side::default();
        side.push(10, 8, (0, 20));
        side.push(30, 64, (0, 20));
        s.sends.insert((1, 2, 0, 5), side.clone());
        s.recvs.insert((1, 2, 0, 5), side);
        let b = s.to_bytes();
        let (back, used) = Otf2Share::from_bytes(&b).unwrap();
        assert_eq!(back, s);
        assert_eq!(used, b.len());
        for cut in 0..b.len() {
            assert!(Otf2Share::from_bytes(&b[..cut]).is_err(), "{cut}");
        }
        let mut huge = b.clone();
        // the members' count
        huge[8 * 16..8 * 17].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Otf2Share::from_bytes(&huge).is_err());
        // two shares of one location do not merge
        assert!(s.clone().merge(s.clone()).is_err());
    }
}
