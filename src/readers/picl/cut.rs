//! Each processor's PICL records cut into states as they come, in file
//! order, exactly as the reader that holds the whole processor cuts it
//! ([`super::read_holding`]): busy between trace start and stop, send and
//! receive inside, nested with [`Flattener`] fed in runs that end where the
//! processor has no send or receive open. Sends and receives are matched
//! as they come (the n-th send of a (source, destination, tag) with its
//! n-th receive), so only messages in flight wait.
//!
//! Used by the stream (`--stream`, [`super::stream`]) and by the in-memory
//! reader ([`super::read`]), which so never holds the records. Both need
//! each processor's records in time order and its trace start, when it has
//! one, first: a cut is refused ([`Refusal`]) otherwise, and the stream
//! says so while the in-memory reader reads the file again holding every
//! record. Records after a processor's latest trace stop wait until a
//! later stop or the end decides whether they are inside busy: in practice
//! none or a few.

use std::collections::{BTreeSet, VecDeque};

use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use super::{MAX_PROC, Rec, is_recv, is_send};
use crate::model::builder::RawInterval;
use crate::model::{Flattener, LocId, NestedSlice, StateId, Time, sort_nested};

/// Why a processor's records cannot be cut as they come: the line, and
/// what is wrong.
#[derive(Debug)]
pub(super) struct Refusal {
    pub seq: u64,
    pub why: String,
}

/// One processor while its records come by. Every processor's is held
/// until the end, so it is kept small: the regions open or not yet
/// flattened inline (one of each: a processor rarely has more, and one
/// that does spills to the heap, as a vector would), what only some
/// processors need apart ([`Rare`]). At 65,536 processors that is 13.5
/// MiB (216 bytes each), where a vector each for the open regions, the
/// run and the flattener's stack took 37.
pub(super) struct Proc {
    pub loc: LocId,
    pub proc_: u32,
    /// Where busy begins: its first record's time, which must be its
    /// trace start's when it has one.
    t0: i64,
    first_seq: u64,
    last_time: i64,
    last_seq: u64,
    /// The latest start among `run`'s regions.
    run_start: Time,
    /// Its latest trace stop (the records after it wait in `Rare::post`).
    stop: Option<i64>,
    /// Busy's end, once the last stop is known.
    root_end: Option<Time>,
    started: bool,
    start_seen: bool,
    /// Send and receive begins not yet ended: (event, time).
    open: SmallVec<[(i32, i64); 1]>,
    /// Regions since the processor last had nothing open.
    run: SmallVec<[NestedSlice; 1]>,
    flat: Flattener,
    rare: Option<Box<Rare>>,
}

/// What few processors need: records after a trace stop, and what went
/// wrong.
#[derive(Default)]
struct Rare {
    post: Vec<Rec>,
    /// A send or receive from busy's start past its end (start, line):
    /// the in-memory nesting puts it outside busy, which a stream cannot.
    outside: Option<(Time, u64)>,
    unmatched_end: u64,
    unclosed: u64,
    first_bad: Option<u64>,
}

/// A message's key: (source, destination, tag) processors.
pub(super) type Key = (u32, u32, i64);

/// A send (`true`) or receive of a key at a time with its bytes, as cut.
pub(super) type P2p = (bool, Key, u64, i64);

/// The sends or receives of a key not matched yet, oldest first: (time,
/// bytes). Most keys have one waiting at a time, which takes no allocation.
struct Waiting {
    send: bool,
    first: (u64, u64),
    rest: VecDeque<(u64, u64)>,
}

/// Sends matched with receives as they are cut: the n-th send of a key
/// with its n-th receive, as `match_in_order` pairs them. The file is read
/// in order, so only messages in flight wait.
#[derive(Default)]
pub(super) struct Matcher {
    pending: HashMap<Key, Waiting>,
    /// Matched messages not handed over yet: key, send and receive time,
    /// bytes.
    pub matched: Vec<(Key, u64, u64, u64)>,
}

impl Matcher {
    /// Takes `ops` (emptied) in their order: a processor's sends and
    /// receives must come in its order; between processors any order
    /// gives the same pairs.
    pub fn apply(&mut self, ops: &mut Vec<P2p>) {
        use std::collections::hash_map::Entry;
        for (send, key, time, bytes) in ops.drain(..) {
            let bytes = bytes.max(0) as u64;
            match self.pending.entry(key) {
                Entry::Vacant(v) => {
                    v.insert(Waiting {
                        send,
                        first: (time, bytes),
                        rest: VecDeque::new(),
                    });
                }
                Entry::Occupied(mut o) => {
                    let w = o.get_mut();
                    if w.send == send {
                        w.rest.push_back((time, bytes));
                        continue;
                    }
                    let (t, b) = w.first;
                    let (st, rt) = if send { (time, t) } else { (t, time) };
                    self.matched.push((key, st, rt, b.max(bytes)));
                    match w.rest.pop_front() {
                        Some(next) => w.first = next,
                        None => {
                            o.remove();
                        }
                    }
                }
            }
        }
    }

    /// Sends and receives left without a partner.
    pub fn unmatched(&self) -> u64 {
        self.pending.values().map(|w| 1 + w.rest.len() as u64).sum()
    }
}

/// What one thread's cut gives besides the processors' own state: the
/// intervals, the sends and receives for the [`Matcher`], the other
/// records counted (or kept).
pub(super) struct Ctx {
    /// busy, send, recv
    pub states: [StateId; 3],
    /// The intervals cut so far and not handed over yet.
    pub out: Vec<RawInterval>,
    /// Sends and receives cut and not matched yet, in the order cut.
    pub ops: Vec<P2p>,
    pub events: u64,
    pub last_event: Time,
    pub kinds: BTreeSet<(i32, i32)>,
    /// The other records themselves, when kept (the in-memory reader):
    /// (location, time, record type, event), in the order they are cut.
    pub kept: Option<Vec<(LocId, Time, i32, i32)>>,
    scratch: Vec<(Time, Time, StateId)>,
}

impl Ctx {
    pub fn new(states: [StateId; 3], keep_events: bool) -> Ctx {
        Ctx {
            states,
            out: Vec::new(),
            ops: Vec::new(),
            events: 0,
            last_event: 0,
            kinds: BTreeSet::new(),
            kept: keep_events.then(Vec::new),
            scratch: Vec::new(),
        }
    }
}

fn refuse(seq: u64, why: String) -> Refusal {
    Refusal { seq, why }
}

impl Ctx {
    /// Hands over what `flat` emitted for `loc`.
    fn emit(&mut self, loc: LocId) {
        for &(start, end, state) in &self.scratch {
            self.out.push(RawInterval {
                loc,
                state,
                start,
                end,
            });
        }
        self.scratch.clear();
    }
}

impl Proc {
    pub fn new(loc: LocId, proc_: u32) -> Self {
        Proc {
            loc,
            proc_,
            t0: 0,
            first_seq: 0,
            last_time: i64::MIN,
            last_seq: 0,
            run_start: 0,
            stop: None,
            root_end: None,
            started: false,
            start_seen: false,
            open: SmallVec::new(),
            run: SmallVec::new(),
            flat: Flattener::default(),
            rare: None,
        }
    }

    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// End records without a begin, begins never ended, and the first
    /// line of either.
    pub fn faults(&self) -> (u64, u64, Option<u64>) {
        self.rare
            .as_ref()
            .map_or((0, 0, None), |r| (r.unmatched_end, r.unclosed, r.first_bad))
    }

    /// Takes one record of this processor, in file order.
    pub fn take(&mut self, r: &Rec, c: &mut Ctx) -> Result<(), Refusal> {
        if r.time < 0 {
            return Err(refuse(
                r.seq,
                "a record before time 0: a stream counts time from 0".into(),
            ));
        }
        if r.time < self.last_time {
            return Err(refuse(
                r.seq,
                format!(
                    "a record of processor {} earlier than the one before it (line {}): \
                     --stream needs each processor's records in time order",
                    self.proc_, self.last_seq
                ),
            ));
        }
        let is_start = r.rectype == -3 && r.event == -901;
        if !self.started {
            self.started = true;
            self.start_seen = is_start;
            self.t0 = r.time;
            self.first_seq = r.seq;
            // busy, its end known at the processor's last trace stop
            self.flat.feed(
                &[NestedSlice {
                    start: r.time as Time,
                    end: Time::MAX,
                    state: c.states[0],
                    seq: 0,
                }],
                &mut c.scratch,
            );
        } else if is_start && !self.start_seen {
            if r.time != self.t0 {
                return Err(refuse(
                    r.seq,
                    format!(
                        "processor {}'s trace start comes after other records of it: the \
                         in-memory reader leaves those outside busy, a stream cannot",
                        self.proc_
                    ),
                ));
            }
            self.start_seen = true;
        }
        self.last_time = r.time;
        self.last_seq = r.seq;
        let is_stop = r.rectype == -4 && r.event == -901;
        if self.stop.is_some() {
            // after a stop: inside busy only if another stop follows
            self.rare().post.push(*r);
            if is_stop {
                self.stop = Some(r.time);
                for p in std::mem::take(&mut self.rare().post) {
                    self.cut(&p, c);
                }
            }
            return Ok(());
        }
        if is_stop {
            self.stop = Some(r.time);
        }
        self.cut(r, c);
        Ok(())
    }

    /// Cuts one record into the processor's states, as `proc_run` does.
    fn cut(&mut self, r: &Rec, c: &mut Ctx) {
        let p = self.proc_;
        match (r.rectype, r.event) {
            (_, -901) => {}
            (-3, e) if is_send(e) || is_recv(e) => {
                // nothing open and every region so far starts earlier:
                // they are final, and come first in the nesting order
                // (by start), as every later region starts here or later
                if self.open.is_empty() && !self.run.is_empty() && r.time as Time > self.run_start {
                    sort_nested(&mut self.run);
                    self.flat.feed(&self.run, &mut c.scratch);
                    self.run.clear();
                    self.run_start = 0;
                    c.emit(self.loc);
                }
                self.open.push((e, r.time));
                if is_send(e) {
                    let dst = r.peer as i64;
                    if (0..MAX_PROC).contains(&dst) {
                        c.ops
                            .push((true, (p, dst as u32, r.tag), r.time as u64, r.bytes));
                    }
                }
            }
            (-4, e) if is_send(e) || is_recv(e) => {
                match self.open.iter().rposition(|(oe, _)| *oe == e) {
                    Some(k) => {
                        let (_, bt) = self.open.remove(k);
                        if self
                            .root_end
                            .is_some_and(|re| bt == self.t0 && r.time as Time > re)
                        {
                            self.rare().outside.get_or_insert((bt as Time, r.seq));
                        }
                        self.run.push(NestedSlice {
                            start: bt as Time,
                            end: r.time as Time,
                            state: if is_send(e) { c.states[1] } else { c.states[2] },
                            seq: r.seq,
                        });
                        self.run_start = self.run_start.max(bt as Time);
                    }
                    None => {
                        let rare = self.rare();
                        rare.unmatched_end += 1;
                        rare.first_bad.get_or_insert(r.seq);
                    }
                }
                if is_recv(e) {
                    let srcp = r.peer as i64;
                    if (0..MAX_PROC).contains(&srcp) {
                        c.ops
                            .push((false, (srcp as u32, p, r.tag), r.time as u64, r.bytes));
                    }
                }
            }
            (rt, e) => {
                c.events += 1;
                c.last_event = c.last_event.max(r.time as Time);
                c.kinds.insert((rt, e));
                if let Some(k) = &mut c.kept {
                    k.push((self.loc, r.time as Time, rt, e));
                }
            }
        }
    }

    /// Ends the processor: busy ends at its last trace stop (or its last
    /// record), the records after that stop are cut, what is still open
    /// closes there.
    pub fn finish(&mut self, c: &mut Ctx) -> Result<(), Refusal> {
        if !self.started {
            return Ok(());
        }
        let t1 = self.stop.unwrap_or(self.last_time);
        // busy ends at the last stop: the records after it are cut knowing so
        let root_end = t1.max(self.t0) as Time;
        self.flat.set_root_end(root_end);
        self.root_end = Some(root_end);
        if let Some(rare) = &mut self.rare {
            for p in std::mem::take(&mut rare.post) {
                self.cut(&p, c);
            }
        }
        for (e, bt) in std::mem::take(&mut self.open) {
            let first_seq = self.first_seq;
            let rare = self.rare();
            rare.unclosed += 1;
            rare.first_bad.get_or_insert(first_seq);
            self.run.push(NestedSlice {
                start: bt as Time,
                end: t1.max(bt) as Time,
                state: if is_send(e) { c.states[1] } else { c.states[2] },
                seq: u64::MAX,
            });
        }
        let t0 = self.t0 as Time;
        if let Some(s) = self.run.iter().find(|s| s.start == t0 && s.end > root_end) {
            let at = (s.start, s.seq);
            self.rare().outside.get_or_insert(at);
        }
        if let Some((start, seq)) = self.rare.as_ref().and_then(|r| r.outside) {
            return Err(refuse(
                seq.min(self.last_seq),
                format!(
                    "processor {} has a send or receive from its first record ({start} ns) past \
                     its last trace stop ({root_end} ns): the in-memory reader nests busy inside \
                     it, a stream cannot",
                    self.proc_
                ),
            ));
        }
        sort_nested(&mut self.run);
        self.flat.feed(&self.run, &mut c.scratch);
        self.run.clear();
        self.flat.finish(&mut c.scratch);
        c.emit(self.loc);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_processor_state_stays_small() {
        // held for every processor until the end of a read: 65,536 of
        // them took 37 MiB with a vector each for the open regions, the
        // run and the flattener's stack
        assert!(
            std::mem::size_of::<Proc>() <= 216,
            "{}",
            std::mem::size_of::<Proc>()
        );
    }
}
