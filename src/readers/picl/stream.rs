//! PICL traces reduced while they are read (`--stream`): each processor's
//! records are cut into states as they come, exactly as the in-memory
//! reader cuts the whole processor ([`super::read`]): busy between trace
//! start and stop, send and receive inside, nested with
//! [`Flattener`] fed in runs that end where the processor has no send or
//! receive open; its sends and receives are counted ([`Side`]) and matched
//! at the end.
//!
//! A PICL file declares neither its processors nor its end, which the
//! reductions need first: a first pass reads both (a parse without
//! keeping the records), the second streams. A stream needs each
//! processor's records in time order and its trace start, when it has one,
//! first (the in-memory reader sorts, and leaves records before the start
//! outside busy); it says so and stops otherwise. Records after a
//! processor's latest trace stop wait until a later stop or the end
//! decides whether they are inside busy: in practice none or a few.

use std::collections::{BTreeSet, VecDeque};

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use super::{Chunk, MAX_PROC, Rec, is_recv, is_send, parse_block};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::RawInterval;
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{
    BuildOptions, Flattener, Format, LocId, LocationKind, NestedSlice, StateId, Time, TimeUnit,
    Trace, TraceBuilder, sort_nested,
};
use crate::readers::ReadOptions;
use crate::readers::input::{self, LineBlocks};

/// One processor while its records stream by.
struct Proc {
    loc: LocId,
    proc_: u32,
    /// Where busy begins: its first record's time, which must be its
    /// trace start's when it has one.
    t0: i64,
    started: bool,
    start_seen: bool,
    first_seq: u64,
    last_time: i64,
    last_seq: u64,
    /// The time of the last record cut.
    cut_time: i64,
    /// Its latest trace stop, and the records after it.
    stop: Option<i64>,
    post: Vec<Rec>,
    /// Send and receive begins not yet ended: (event, time).
    open: Vec<(i32, i64)>,
    /// Regions since the processor last had nothing open.
    run: Vec<NestedSlice>,
    flat: Flattener,
    /// Busy's end, once the last stop is known.
    root_end: Option<Time>,
    /// A send or receive from busy's start past its end (start, line):
    /// the in-memory nesting puts it outside busy, which a stream cannot.
    outside: Option<(Time, u64)>,
    unmatched_end: u64,
    unclosed: u64,
    first_bad: Option<u64>,
}

/// A message's key: (source, destination, tag) processors.
type Key = (u32, u32, i64);

/// What the stream counts besides the intervals.
#[derive(Default)]
struct Counts {
    /// Per key, the sends (true) or receives not matched yet, oldest
    /// first: (time, bytes). The file is read in order, so only messages
    /// in flight wait here.
    pending: HashMap<Key, (bool, VecDeque<(u64, u64)>)>,
    /// Matched messages not handed over yet: key, send and receive time,
    /// bytes.
    matched: Vec<(Key, u64, u64, u64)>,
    events: u64,
    last_event: Time,
    kinds: BTreeSet<(i32, i32)>,
}

struct Ctx<'a> {
    /// busy, send, recv
    states: [StateId; 3],
    counts: Counts,
    out: Vec<RawInterval>,
    scratch: Vec<(Time, Time, StateId)>,
    path: &'a Path,
}

fn refuse(path: &Path, seq: u64, why: String) -> Error {
    Error::parse(
        path,
        Position::line(seq),
        format!("{why} (read without --stream)"),
    )
}

impl Counts {
    /// A send (or a receive) of `key`: matched with the oldest waiting
    /// receive (send) of the key, as `match_in_order` pairs them, or left
    /// waiting.
    fn p2p(&mut self, send: bool, key: Key, time: u64, bytes: i64) {
        let bytes = bytes.max(0) as u64;
        let q = self
            .pending
            .entry(key)
            .or_insert_with(|| (send, VecDeque::new()));
        if q.0 == send || q.1.is_empty() {
            q.0 = send;
            q.1.push_back((time, bytes));
            return;
        }
        if let Some((t, b)) = q.1.pop_front() {
            let (st, rt) = if send { (time, t) } else { (t, time) };
            self.matched.push((key, st, rt, b.max(bytes)));
        }
        if q.1.is_empty() {
            self.pending.remove(&key);
        }
    }
}

impl Ctx<'_> {
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
    fn new(loc: LocId, proc_: u32) -> Self {
        Proc {
            loc,
            proc_,
            t0: 0,
            started: false,
            start_seen: false,
            first_seq: 0,
            last_time: i64::MIN,
            last_seq: 0,
            cut_time: i64::MIN,
            stop: None,
            post: Vec::new(),
            open: Vec::new(),
            run: Vec::new(),
            flat: Flattener::default(),
            root_end: None,
            outside: None,
            unmatched_end: 0,
            unclosed: 0,
            first_bad: None,
        }
    }

    /// Takes one record of this processor, in file order.
    fn take(&mut self, r: &Rec, c: &mut Ctx) -> Result<()> {
        if r.time < 0 {
            return Err(refuse(
                c.path,
                r.seq,
                "a record before time 0: a stream counts time from 0".into(),
            ));
        }
        if r.time < self.last_time {
            return Err(refuse(
                c.path,
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
                    c.path,
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
            self.post.push(*r);
            if is_stop {
                self.stop = Some(r.time);
                for p in std::mem::take(&mut self.post) {
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
                // nothing open and time moved on: what came before is final
                if self.open.is_empty() && !self.run.is_empty() && r.time > self.cut_time {
                    sort_nested(&mut self.run);
                    self.flat.feed(&self.run, &mut c.scratch);
                    self.run.clear();
                    c.emit(self.loc);
                }
                self.open.push((e, r.time));
                if is_send(e) {
                    let dst = r.peer as i64;
                    if (0..MAX_PROC).contains(&dst) {
                        c.counts
                            .p2p(true, (p, dst as u32, r.tag), r.time as u64, r.bytes);
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
                            self.outside.get_or_insert((bt as Time, r.seq));
                        }
                        self.run.push(NestedSlice {
                            start: bt as Time,
                            end: r.time as Time,
                            state: if is_send(e) { c.states[1] } else { c.states[2] },
                            seq: r.seq,
                        });
                    }
                    None => {
                        self.unmatched_end += 1;
                        self.first_bad.get_or_insert(r.seq);
                    }
                }
                if is_recv(e) {
                    let srcp = r.peer as i64;
                    if (0..MAX_PROC).contains(&srcp) {
                        c.counts
                            .p2p(false, (srcp as u32, p, r.tag), r.time as u64, r.bytes);
                    }
                }
            }
            (rt, e) => {
                c.counts.events += 1;
                c.counts.last_event = c.counts.last_event.max(r.time as Time);
                c.counts.kinds.insert((rt, e));
            }
        }
        self.cut_time = r.time;
    }

    /// Ends the processor: busy ends at its last trace stop (or its last
    /// record), the records after that stop are cut, what is still open
    /// closes there.
    fn finish(&mut self, c: &mut Ctx) -> Result<()> {
        if !self.started {
            return Ok(());
        }
        let t1 = self.stop.unwrap_or(self.last_time);
        // busy ends at the last stop: the records after it are cut knowing so
        let root_end = t1.max(self.t0) as Time;
        self.flat.set_root_end(root_end);
        self.root_end = Some(root_end);
        for p in std::mem::take(&mut self.post) {
            self.cut(&p, c);
        }
        for (e, bt) in std::mem::take(&mut self.open) {
            self.unclosed += 1;
            self.first_bad.get_or_insert(self.first_seq);
            self.run.push(NestedSlice {
                start: bt as Time,
                end: t1.max(bt) as Time,
                state: if is_send(e) { c.states[1] } else { c.states[2] },
                seq: u64::MAX,
            });
        }
        let t0 = self.t0 as Time;
        if let Some(s) = self.run.iter().find(|s| s.start == t0 && s.end > root_end) {
            self.outside.get_or_insert((s.start, s.seq));
        }
        if let Some((start, seq)) = self.outside {
            return Err(refuse(
                c.path,
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

/// Hands the matched messages over to `sink`.
fn hand_over(
    matched: &mut Vec<(Key, u64, u64, u64)>,
    procs: &[u32],
    state: &[Proc],
    sink: &mut dyn IntervalSink,
    path: &Path,
) -> Result<()> {
    for &((s, d, _), st, rt, bytes) in matched.iter() {
        if let (Ok(s), Ok(d)) = (procs.binary_search(&s), procs.binary_search(&d)) {
            sink.message(state[s].loc, state[d].loc, st, rt, bytes)
                .map_err(|e| Error::parse(path, Position::none(), e))?;
        }
    }
    matched.clear();
    Ok(())
}

/// Streams the PICL trace at `path` into `sink`: the trace without records
/// (locations, states, span, repairs) and the state of each key the sink
/// saw (the keys are the states).
pub fn stream(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn IntervalSink,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    // first pass: the processors and the last time
    let mut procs: Vec<u32> = Vec::new();
    let mut max_time: i64 = 0;
    {
        let mut blocks = LineBlocks::new(input::open(path)?);
        blocks.for_each_parallel(
            |blk| {
                let c = parse_block(blk);
                let mut ps: Vec<u32> = c
                    .recs
                    .chunk_by(|a, b| a.proc_ == b.proc_)
                    .map(|r| r[0].proc_)
                    .collect();
                ps.dedup();
                let mt = c.recs.iter().map(|r| r.time).max().unwrap_or(0);
                (ps, mt, if c.truncated { None } else { c.error })
            },
            |_, (ps, mt, err)| {
                if let Some((pos, msg)) = err {
                    return Err(Error::parse(path, pos, msg));
                }
                procs.extend(ps);
                max_time = max_time.max(mt);
                Ok(())
            },
        )?;
    }
    procs.sort_unstable();
    procs.dedup();
    if procs.is_empty() {
        return Err(Error::parse(
            path,
            Position::line(1),
            "expected PICL records, found none",
        ));
    }
    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    let mut state: Vec<Proc> = Vec::with_capacity(procs.len());
    for &p in &procs {
        let id = b
            .locations
            .add(format!("proc {p}"), LocationKind::Thread, None, p as i64);
        state.push(Proc::new(id, p));
    }
    let st = super::add_states(&mut b);
    sink.begin(procs.len(), max_time.max(0) as Time)?;
    let mut c = Ctx {
        states: [st.busy, st.send, st.recv],
        counts: Counts::default(),
        out: Vec::new(),
        scratch: Vec::new(),
        path,
    };
    // second pass: every record, in file order per processor
    let mut blocks = LineBlocks::new(input::open(path)?);
    let damage = blocks.damage_handle();
    {
        let b = &mut b;
        let c = &mut c;
        let state = &mut state;
        let procs = &procs;
        blocks.for_each_parallel(parse_block, |_blk, chunk: Chunk| {
            if let Some((pos, msg)) = chunk.error {
                if chunk.truncated {
                    damage.report(&mut b.diagnostics, path, "records")?;
                    b.diagnostics.repair("truncated-record", path, pos, 1, || {
                        format!("the last record is incomplete ({msg}); skipped")
                    })?;
                } else {
                    return Err(Error::parse(path, pos, msg));
                }
            }
            for run in chunk.recs.chunk_by(|a, b| a.proc_ == b.proc_) {
                let Ok(i) = procs.binary_search(&run[0].proc_) else {
                    return Err(Error::Invalid(format!(
                        "{}: the file changed while it was read (processor {} is new)",
                        path.display(),
                        run[0].proc_
                    )));
                };
                for r in run {
                    state[i].take(r, c)?;
                }
            }
            sink.intervals(&c.out)
                .map_err(|e| Error::parse(path, Position::none(), e))?;
            c.out.clear();
            hand_over(&mut c.counts.matched, procs, state, sink, path)
        })?;
    }
    damage.report(&mut b.diagnostics, path, "records")?;
    for p in &mut state {
        p.finish(&mut c)?;
    }
    sink.intervals(&c.out)
        .map_err(|e| Error::parse(path, Position::none(), e))?;
    c.out.clear();

    let unmatched_end: u64 = state.iter().map(|d| d.unmatched_end).sum();
    let unclosed: u64 = state.iter().map(|d| d.unclosed).sum();
    let first_bad = state.iter().find_map(|d| d.first_bad);
    let pos = first_bad.map_or(Position::none(), Position::line);
    b.diagnostics
        .repair("unmatched-end", path, pos, unmatched_end, || {
            format!("{unmatched_end} end record(s) of a send or receive without a begin; ignored")
        })?;
    b.diagnostics
        .repair("unclosed-begin", path, pos, unclosed, || {
            format!("{unclosed} send or receive begin record(s) never ended; closed at trace stop")
        })?;
    hand_over(&mut c.counts.matched, &procs, &state, sink, path)?;
    let Counts {
        pending,
        events,
        last_event,
        kinds,
        ..
    } = c.counts;
    let unmatched: u64 = pending.values().map(|q| q.1.len() as u64).sum();
    b.diagnostics.repair(
        "unmatched-message",
        path,
        Position::none(),
        unmatched,
        || {
            format!(
                "{unmatched} send(s) or receive(s) without a partner; no message recorded for them"
            )
        },
    )?;
    sink.counted(Counted::Events, events, last_event);
    for (rt, e) in kinds {
        b.event_types.intern(&super::kind_name(rt, e));
    }
    b.set_declared_end(sink.end_time());
    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    let keys = t.states.iter().map(|(id, _)| (id, id)).collect();
    Ok((t, keys))
}
