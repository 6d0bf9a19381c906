//! Chrome traces reduced while they are read (`--stream`): each thread's
//! slices are flattened as they come, exactly as the in-memory reader
//! flattens them, and the intervals and messages handed to the reductions
//! epoch by epoch.
//!
//! A Chrome trace declares neither its threads (nor their order, which
//! metadata anywhere in the file sets) nor its time origin, and `X` events
//! need not come in time order (Chrome writes a slice when it ends, after
//! the slices nested in it). A first pass takes what the model keeps of the
//! file (threads, processes, states, event and counter names, the span,
//! repairs, async slices) and marks, per epoch of [`EPOCH`] events, where
//! each thread's slices start. The second pass holds a thread's slices
//! until no later epoch holds one that starts earlier, then flattens them
//! ([`Flattener`]) and hands the intervals over: a file in time order per
//! thread (as tools write them) is held an epoch at a time, whatever its
//! size; a slice written long after the slices that start after it holds
//! its thread's slices until then, as does a `B` never ended.
//!
//! Flows are matched as in memory, each id's steps in time order: the
//! first pass also marks, per epoch, the earliest flow step, and a step is
//! matched once no later epoch holds an earlier one. A file in time order
//! holds the steps of an epoch or so; one written process by process (as
//! `pmpitrace` and other tools that merge per-process buffers write) holds
//! its flow steps to the end, 40 bytes each, as in memory. Async slices are
//! held, as in memory: they are packed into lanes, locations the reductions
//! need first.
//!
//! The same two passes read a trace into memory ([`read_two_pass`]) when
//! one pass, which holds every slice and flow step until the end, would
//! take too much: the second pass then hands its intervals, messages,
//! instants and samples to the model's builder.

use std::path::Path;

use super::{
    Acc, Batch, Ev, Flow, Nesting, input, pack_async, place_threads, report_intake, report_orphans,
};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::{GLOBAL, IntervalBlock, RawInterval};
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{
    BuildOptions, Flattener, LocId, NestedSlice, StateId, Time, Trace, TraceBuilder, sort_nested,
};
use crate::readers::ReadOptions;
use crate::readers::json_split::Splitter;
use rustc_hash::FxHashMap;

/// Events per epoch: a thread's slices are held at least until the end of
/// the epoch they are read in (some 25 MiB of JSON; 8 MiB of slices).
pub const EPOCH: u64 = 1 << 18;

pub(super) fn epoch(seq: u64, events: u64) -> u32 {
    (seq / events.max(1)).min(u32::MAX as u64) as u32
}

/// Records the first pass counts: how many and the latest time.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Count {
    pub n: u64,
    pub last: i64,
}

impl Count {
    pub fn add(&mut self, ts: i64) {
        self.n += 1;
        self.last = self.last.max(ts);
    }
}

/// What the first pass keeps instead of the records.
#[derive(Debug, Default)]
pub(super) struct Marks {
    /// Events per epoch.
    pub epoch_events: u64,
    /// Per thread: `(epoch, earliest time of a B, E or X event of the
    /// thread in that epoch)`, the epochs in order.
    pub per_thread: Vec<Vec<(u32, i64)>>,
    /// `(epoch, earliest flow step in it)`, the epochs in order.
    pub flows: Vec<(u32, i64)>,
    /// Instant events.
    pub instants: Count,
    /// Counter samples.
    pub samples: Count,
}

impl Marks {
    pub fn slice(&mut self, thread: u32, seq: u64, ts: i64) {
        let e = epoch(seq, self.epoch_events);
        let t = thread as usize;
        if self.per_thread.len() <= t {
            self.per_thread.resize_with(t + 1, Vec::new);
        }
        mark(&mut self.per_thread[t], e, ts);
    }

    pub fn flow(&mut self, seq: u64, ts: i64) {
        let e = epoch(seq, self.epoch_events);
        mark(&mut self.flows, e, ts);
    }
}

fn mark(v: &mut Vec<(u32, i64)>, e: u32, ts: i64) {
    match v.last_mut() {
        Some(l) if l.0 == e => l.1 = l.1.min(ts),
        _ => v.push((e, ts)),
    }
}

/// Marks as the second pass reads them: for each epoch, the earliest time
/// in it or any later epoch (relative ns), the epochs in order, and the
/// first not read yet.
#[derive(Default)]
pub(super) struct Watermarks {
    marks: Vec<(u32, Time)>,
    next: usize,
}

impl Watermarks {
    pub(super) fn new(m: &[(u32, i64)], rel: impl Fn(i64) -> Time) -> Self {
        let mut suffix = Time::MAX;
        let mut marks: Vec<(u32, Time)> = m.iter().map(|&(e, ts)| (e, rel(ts))).collect();
        for x in marks.iter_mut().rev() {
            suffix = suffix.min(x.1);
            x.1 = suffix;
        }
        Watermarks { marks, next: 0 }
    }

    /// The earliest time marked in epochs after `e`.
    pub(super) fn after(&mut self, e: u32) -> Time {
        while self.marks.get(self.next).is_some_and(|m| m.0 <= e) {
            self.next += 1;
        }
        self.marks.get(self.next).map_or(Time::MAX, |m| m.1)
    }
}

/// One thread in the second pass.
#[derive(Default)]
pub(super) struct ThreadStream {
    /// Where the slices of later epochs start.
    pub marks: Watermarks,
    /// `B`/`E` events not matched yet: (ts, seq, begin?, state).
    pub be: Vec<(Time, u64, bool, StateId)>,
    /// Begins matched with no end yet: (ts, seq, state).
    stack: Vec<(Time, u64, StateId)>,
    /// Slices not flattened yet.
    pub slices: Vec<NestedSlice>,
    flat: Flattener,
    /// Whether the epoch being read has events of this thread.
    pub touched: bool,
}

impl ThreadStream {
    /// A thread whose slices of later epochs start at `marks`.
    pub(super) fn new(marks: Watermarks) -> Self {
        ThreadStream {
            marks,
            ..Default::default()
        }
    }

    /// Matches the begins and ends before `w` (every one of them has been
    /// read) and flattens the slices that start before both `w` and the
    /// oldest begin still open, into `out`.
    pub(super) fn flush(
        &mut self,
        w: Time,
        nesting: &mut Nesting,
        out: &mut Vec<(Time, Time, StateId)>,
    ) {
        if !self.be.is_empty() {
            self.be.sort_unstable_by_key(|&(ts, seq, _, _)| (ts, seq));
            let n = self.be.partition_point(|x| x.0 < w);
            for &(ts, seq, begin, st) in &self.be[..n] {
                if begin {
                    self.stack.push((ts, seq, st));
                } else if let Some((bt, bseq, bst)) = self.stack.pop() {
                    self.slices.push(NestedSlice {
                        start: bt,
                        end: ts,
                        state: bst,
                        seq: bseq,
                    });
                } else {
                    nesting.unmatched_end += 1;
                }
            }
            self.be.drain(..n);
        }
        let lim = self.stack.first().map_or(w, |&(bt, _, _)| bt.min(w));
        self.feed_before(lim, out);
    }

    /// Flattens the slices that start before `lim`, in the in-memory order.
    fn feed_before(&mut self, lim: Time, out: &mut Vec<(Time, Time, StateId)>) {
        if !self.slices.iter().any(|s| s.start < lim) {
            return;
        }
        let mut feed: Vec<NestedSlice>;
        if self.slices.iter().all(|s| s.start < lim) {
            feed = std::mem::take(&mut self.slices);
        } else {
            let (f, keep) = self.slices.drain(..).partition(|s| s.start < lim);
            feed = f;
            self.slices = keep;
        }
        sort_nested(&mut feed);
        self.flat.feed(&feed, out);
        if self.slices.capacity() > 4 * self.slices.len().max(256) {
            self.slices.shrink_to_fit();
        }
    }

    /// The last flush: every begin and end matched, the begins left open
    /// closed at `end`, every slice flattened.
    pub(super) fn finish(
        &mut self,
        end: Time,
        nesting: &mut Nesting,
        out: &mut Vec<(Time, Time, StateId)>,
    ) {
        self.flush(Time::MAX, nesting, out);
        for (bt, bseq, bst) in std::mem::take(&mut self.stack) {
            nesting.unclosed += 1;
            self.slices.push(NestedSlice {
                start: bt,
                end,
                state: bst,
                seq: bseq,
            });
        }
        self.feed_before(Time::MAX, out);
        self.flat.finish(out);
        nesting.clipped += self.flat.clipped;
    }
}

/// The flows of the second pass: the steps not matched yet, and per id
/// with a step a message would leave from, that step.
#[derive(Default)]
pub(super) struct Flows {
    pub marks: Watermarks,
    /// Steps not matched yet: those left from before in (time, file)
    /// order, then those read since in file order.
    pub pending: Vec<Flow>,
    pub open: FxHashMap<u32, Flow>,
    pub orphans: u64,
}

impl Flows {
    /// Matches the steps before `w` (every one of them has been read), as
    /// the in-memory reader does: per id in time order, each step to the
    /// next; the messages to `message`.
    pub(super) fn match_before(
        &mut self,
        w: Time,
        origin: i64,
        mut message: impl FnMut(&Flow, &Flow) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // two sorted runs, or nearly sorted: a stable sort merges them in
        // about linear time
        self.pending.sort_by_key(|f| (f.ts, f.seq_ph));
        let n = self
            .pending
            .partition_point(|f| ((f.ts - origin).max(0) as Time) < w);
        let mut ready: Vec<Flow> = self.pending.drain(..n).collect();
        // by id, each id's steps in time order
        ready.sort_by_key(|f| f.key);
        for f in ready {
            let prev = self.open.remove(&f.key);
            match (prev, f.ph()) {
                (None, b's') => {
                    self.open.insert(f.key, f);
                }
                (None, _) => self.orphans += 1,
                (Some(_), b's') => {
                    self.orphans += 1;
                    self.open.insert(f.key, f);
                }
                (Some(p), ph) => {
                    message(&p, &f)?;
                    if ph != b'f' {
                        self.open.insert(f.key, f);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The second pass: to a sink (a stream), or into the model's builder
/// (`None`: the two-pass read, [`read_two_pass`]).
struct Pass<'a> {
    path: &'a Path,
    sink: Option<&'a mut (dyn IntervalSink + Send)>,
    threads: Vec<ThreadStream>,
    loc_of_thread: Vec<LocId>,
    touched: Vec<u32>,
    epoch: u32,
    epoch_events: u64,
    seq: u64,
    origin: i64,
    nesting: Nesting,
    flows: Flows,
    out: Vec<(Time, Time, StateId)>,
    batch: Vec<RawInterval>,
    /// The shapes of the latest counter events and their counters.
    series: super::series::SeriesCache,
}

impl Pass<'_> {
    fn rel(&self, t: i64) -> Time {
        (t - self.origin).max(0) as Time
    }

    /// Flattens what the epoch just read lets go.
    fn end_epoch(&mut self, b: &mut TraceBuilder) -> Result<()> {
        for t in std::mem::take(&mut self.touched) {
            let th = &mut self.threads[t as usize];
            th.touched = false;
            let w = th.marks.after(self.epoch);
            self.out.clear();
            th.flush(w, &mut self.nesting, &mut self.out);
            self.keep_out(t as usize);
        }
        let w = self.flows.marks.after(self.epoch);
        self.match_flows(w, b)?;
        self.hand_over(b)
    }

    /// Adds what thread `t` just flattened (in `out`) to the batch to hand
    /// over.
    fn keep_out(&mut self, t: usize) {
        let loc = self.loc_of_thread[t];
        self.batch
            .extend(self.out.iter().map(|&(start, end, state)| RawInterval {
                loc,
                state,
                start,
                end,
            }));
    }

    /// Matches the flow steps before `w`; the messages to the sink or the
    /// model.
    fn match_flows(&mut self, w: Time, b: &mut TraceBuilder) -> Result<()> {
        let (locs, origin) = (&self.loc_of_thread, self.origin);
        let rel = |t: i64| (t - origin).max(0) as Time;
        let sink = &mut self.sink;
        self.flows
            .match_before(w, origin, |p, f| {
                let (src, dst) = (locs[p.thread as usize], locs[f.thread as usize]);
                match sink {
                    Some(sink) => sink.message(src, dst, rel(p.ts), rel(f.ts), p.bytes),
                    None => {
                        b.message(src, dst, rel(p.ts), rel(f.ts), p.bytes, p.tag);
                        Ok(())
                    }
                }
            })
            .map_err(|e| Error::parse(self.path, Position::none(), e))
    }

    fn hand_over(&mut self, b: &mut TraceBuilder) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        match &mut self.sink {
            Some(sink) => {
                let r = sink.intervals(&self.batch);
                self.batch.clear();
                r.map_err(|e| Error::parse(self.path, Position::none(), e))
            }
            None => {
                b.add_interval_block(IntervalBlock::Records(std::mem::take(&mut self.batch)));
                Ok(())
            }
        }
    }

    /// The thread of an event, as the first pass numbered it.
    fn thread(&self, acc: &mut Acc, ev: &Ev, batch: &Batch) -> Result<u32> {
        let t = acc.thread_of_event(ev);
        if t as usize >= self.threads.len() {
            return Err(Error::parse(
                self.path,
                batch.position(ev.off),
                "the file changed while it was read (a thread is new)",
            ));
        }
        Ok(t)
    }

    fn take(&mut self, ev: &Ev, acc: &mut Acc, b: &mut TraceBuilder, batch: &Batch) -> Result<()> {
        self.seq += 1;
        let e = epoch(self.seq, self.epoch_events);
        if e != self.epoch {
            self.end_epoch(b)?;
            self.epoch = e;
        }
        let ts = ev.ts.unwrap_or(0);
        match ev.ph {
            b'B' | b'E' | b'X' => {
                let t = self.thread(acc, ev, batch)?;
                let st = match ev.ph {
                    b'E' => 0,
                    _ => acc.state_of(b, &ev.name, &ev.cat),
                };
                let rel = self.rel(ts);
                let seq = self.seq;
                let end = self.rel(ts + ev.dur.unwrap_or(0));
                let th = &mut self.threads[t as usize];
                match ev.ph {
                    b'X' => th.slices.push(NestedSlice {
                        start: rel,
                        end,
                        state: st,
                        seq,
                    }),
                    ph => th.be.push((rel, seq, ph == b'B', st)),
                }
                if !th.touched {
                    th.touched = true;
                    self.touched.push(t);
                }
            }
            b's' | b't' | b'f' => {
                let t = self.thread(acc, ev, batch)?;
                let key = acc.flow_key(&ev.cat, ev.id.as_deref().unwrap_or(""));
                let ph = match ev.ph {
                    b's' => 0,
                    b't' => 1,
                    _ => 2,
                };
                self.flows.pending.push(Flow {
                    ts,
                    seq_ph: (self.seq << 2) | ph,
                    bytes: ev.lite.bytes.unwrap_or(0),
                    tag: ev.lite.tag.unwrap_or(key as i64),
                    key,
                    thread: t,
                });
            }
            // a stream counted them in the first pass; the model keeps them
            b'i' | b'I' | b'R' | b'n' | b'P' if self.sink.is_none() => {
                let loc = if super::is_global_instant(ev) {
                    GLOBAL
                } else {
                    self.loc_of_thread[self.thread(acc, ev, batch)? as usize]
                };
                let kind = b.event_types.intern(&ev.name);
                let value = ev.lite.value.as_ref().and_then(|v| v.as_i64()).unwrap_or(0);
                b.event(loc, self.rel(ts), kind, value);
            }
            b'C' if self.sink.is_none() => {
                let t = self.thread(acc, ev, batch)?;
                let loc = self.loc_of_thread[t as usize];
                let at = self.rel(ts);
                self.series.samples(
                    ev,
                    b,
                    |b, name| b.counter_def(name, ""),
                    |b, c, x| b.counter(loc, c, at, x),
                );
            }
            _ => {}
        }
        Ok(())
    }
}

/// Streams the Chrome trace at `path` into `sink`: the trace without
/// records (locations, states, span, repairs) and the state of each key
/// the sink saw (the keys are the states).
pub fn stream(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut (dyn IntervalSink + Send),
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    stream_in_epochs(path, opts, sink, EPOCH)
}

/// [`stream`] with epochs of `epoch_events` events.
fn stream_in_epochs(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut (dyn IntervalSink + Send),
    epoch_events: u64,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    let (mut b, sink, end) = two_pass(path, opts, Some(sink), epoch_events)?;
    let Some(sink) = sink else {
        return Err(Error::Invalid("the stream lost its sink".into()));
    };
    b.set_declared_end(sink.end_time().max(end.unwrap_or(0)));
    crate::readers::finish_stream_skeleton(b, opts)
}

/// Reads a Chrome trace into memory in two passes, as [`stream`] reads it:
/// each thread's slices are flattened and each flow matched as soon as the
/// first pass's marks allow, so the records are never all held at once.
/// The same model as [`super::read`], at a peak of about 1.3× the model
/// where the one-pass read holds every slice and flow step (2× and more),
/// in about 1.3× its time. [`crate::readers::read`] chooses it when the
/// one-pass read would take more than half the memory limit.
pub fn read_two_pass(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    read_two_pass_in_epochs(path, opts, EPOCH)
}

fn read_two_pass_in_epochs(path: &Path, opts: &ReadOptions, epoch_events: u64) -> Result<Trace> {
    let (b, _, end) = two_pass(path, opts, None, epoch_events)?;
    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    if let Some(end) = end {
        t.meta.span = t.meta.span.max(end);
    }
    t.reclassify(&opts.classes)?;
    Ok(t)
}

/// What the first pass's accumulator places in the model's builder.
pub(super) struct Placed {
    /// The time the others are relative to (absolute ns).
    pub origin: i64,
    /// The end of the last slice or event (absolute ns).
    pub end_abs: i64,
    /// Whether any event has a time.
    pub any_ts: bool,
    /// Each thread's location.
    pub loc_of_thread: Vec<LocId>,
    /// The async slices packed into lanes: `(location, start, end, state)`.
    pub lanes: Vec<(LocId, Time, Time, StateId)>,
}

/// Sets the origin, adds the threads' locations in the model's order and
/// packs the async slices into lanes (their repairs counted in `nesting`).
pub(super) fn place(acc: &mut Acc, b: &mut TraceBuilder, nesting: &mut Nesting) -> Placed {
    let origin = acc.origin();
    let end_abs = acc.end_abs();
    let any_ts = acc.min_ts != i64::MAX;
    b.set_origin(origin);
    let ids = acc.thread_procs_and_tids();
    let pids = acc.proc_keys();
    let (loc_of_thread, mut group_of_proc) = place_threads(acc, b, ids, &pids);
    acc.thread_metas = Default::default();
    let lanes = pack_async(acc, b, &mut group_of_proc, &pids, nesting);
    acc.proc_metas = Default::default();
    acc.asyncs = Vec::new();
    Placed {
        origin,
        end_abs,
        any_ts,
        loc_of_thread,
        lanes,
    }
}

/// The two passes: into `sink` (a stream: instants and counter samples
/// counted) or, without one, into the builder returned (the model's
/// records). The builder with the locations, states, repairs and origin,
/// the sink, and the end of the last record (relative ns; `None` when no
/// event has a time).
fn two_pass<'s>(
    path: &'s Path,
    opts: &ReadOptions,
    mut sink: Option<&'s mut (dyn IntervalSink + Send)>,
    epoch_events: u64,
) -> Result<(
    TraceBuilder,
    Option<&'s mut (dyn IntervalSink + Send)>,
    Option<Time>,
)> {
    // first pass: everything the model keeps, and where slices start
    let inp = input::open(path)?;
    let damage = inp.damage.clone();
    let mut b = super::builder(path, opts);
    let mut acc = Acc::new(Some(Box::new(Marks {
        epoch_events,
        ..Default::default()
    })));
    let split = super::for_each_event(
        path,
        Splitter::new(path, inp.reader),
        super::Intake::for_threads(),
        super::IntakeInto {
            acc: &mut acc,
            b: &mut b,
        },
    )?;
    report_intake(&acc, &mut b, path, &damage, split.truncated.as_ref())?;
    drop(split);
    let marks = *acc.marks.take().unwrap_or_default();
    let mut nesting = Nesting::default();
    let Placed {
        origin,
        end_abs,
        any_ts,
        loc_of_thread,
        lanes,
    } = place(&mut acc, &mut b, &mut nesting);
    let rel = |t: i64| -> Time { (t - origin).max(0) as Time };
    let mut threads: Vec<ThreadStream> = Vec::with_capacity(acc.threads.len());
    let mut per_thread = marks.per_thread;
    per_thread.resize_with(acc.threads.len(), Vec::new);
    for m in per_thread {
        threads.push(ThreadStream::new(Watermarks::new(&m, rel)));
    }
    if let Some(sink) = &mut sink {
        sink.begin(b.locations.len(), if any_ts { rel(end_abs) } else { 0 })?;
    }

    // second pass: the slices and flows, in file order
    let mut pass = Pass {
        path,
        sink,
        threads,
        loc_of_thread,
        touched: Vec::new(),
        epoch: 0,
        epoch_events,
        seq: 0,
        origin,
        nesting,
        flows: Flows {
            marks: Watermarks::new(&marks.flows, rel),
            ..Default::default()
        },
        out: Vec::new(),
        batch: lanes
            .into_iter()
            .map(|(loc, start, end, state)| RawInterval {
                loc,
                state,
                start,
                end,
            })
            .collect(),
        series: Default::default(),
    };
    pass.hand_over(&mut b)?;
    let inp = input::open(path)?;
    super::for_each_event(
        path,
        Splitter::new(path, inp.reader),
        super::Intake::for_threads(),
        super::taker(|ev, batch| pass.take(ev, &mut acc, &mut b, batch)),
    )?;
    pass.end_epoch(&mut b)?;
    pass.match_flows(Time::MAX, &mut b)?;
    let end = rel(end_abs);
    for t in 0..pass.threads.len() {
        pass.out.clear();
        pass.threads[t].finish(end, &mut pass.nesting, &mut pass.out);
        pass.keep_out(t);
        pass.threads[t] = ThreadStream::default();
        if pass.batch.len() >= 1 << 16 {
            pass.hand_over(&mut b)?;
        }
    }
    pass.hand_over(&mut b)?;
    let orphans = pass.flows.orphans + pass.flows.open.len() as u64;
    let nesting = pass.nesting;
    let mut sink = pass.sink;

    let src = path.to_path_buf();
    nesting.report(&mut b, &src)?;
    if let Some(sink) = &mut sink {
        sink.counted(Counted::Events, marks.instants.n, rel(marks.instants.last));
        sink.counted(
            Counted::CounterSamples,
            marks.samples.n,
            rel(marks.samples.last),
        );
    }
    report_orphans(&mut b, &src, orphans)?;
    drop(acc);
    Ok((b, sink, any_ts.then_some(end)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::matching::Tally;
    use crate::test_rng::XorShift;

    /// A sink that keeps what it is handed.
    #[derive(Default)]
    pub(crate) struct Collect {
        pub locations: usize,
        pub end: Time,
        pub intervals: Vec<Vec<(Time, Time, u32)>>,
        pub messages: Vec<(LocId, LocId, Time, Time, u64)>,
        pub events: u64,
        pub samples: u64,
    }

    impl IntervalSink for Collect {
        fn begin(&mut self, locations: usize, declared_end: Time) -> Result<()> {
            self.locations = locations;
            self.intervals = vec![Vec::new(); locations];
            self.end = declared_end;
            Ok(())
        }
        fn interval(
            &mut self,
            loc: LocId,
            start: Time,
            end: Time,
            key: u32,
        ) -> std::result::Result<(), String> {
            let v = &mut self.intervals[loc as usize];
            if let Some(&(s, _, _)) = v.last()
                && start < s
            {
                return Err(format!("location {loc}: {start} after {s}"));
            }
            if end > start {
                v.push((start, end, key));
            }
            self.end = self.end.max(end);
            Ok(())
        }
        fn message(
            &mut self,
            src: LocId,
            dst: LocId,
            send: Time,
            recv: Time,
            bytes: u64,
        ) -> std::result::Result<(), String> {
            self.messages.push((src, dst, send, recv, bytes));
            Ok(())
        }
        fn messages(&mut self, _: LocId, _: LocId, _: &Tally) -> std::result::Result<(), String> {
            Err("not expected".into())
        }
        fn window(&self) -> (Time, Time) {
            (0, self.end)
        }
        fn counted(&mut self, what: Counted, n: u64, _last: Time) {
            match what {
                Counted::Events => self.events += n,
                Counted::CounterSamples => self.samples += n,
                _ => {}
            }
        }
        fn end_time(&self) -> Time {
            self.end
        }
        fn overlaps(&self) -> (u64, Option<(LocId, Time)>) {
            (0, None)
        }
    }

    fn us(ns: u64) -> String {
        let (us, ns) = (ns / 1000, ns % 1000);
        if ns == 0 {
            us.to_string()
        } else {
            format!("{us}.{ns:03}")
        }
    }

    /// A trace of `events` slices whose arguments nest 30 arrays deep:
    /// cuts inside an event fall too deep for the walk to count.
    pub(crate) fn deep_chrome(events: usize) -> String {
        let deep = format!("{}1{}", "[".repeat(30), "]".repeat(30));
        let ev: Vec<String> = (0..events)
            .map(|k| {
                format!(
                    r#"{{"ph":"X","pid":1,"tid":{},"ts":{},"dur":3,"name":"n{}","args":{{"v":{deep}}}}}"#,
                    k % 3,
                    10 * k,
                    k % 4
                )
            })
            .collect();
        format!("[{}]", ev.join(","))
    }

    /// Untidy traces written into `dir` (three seeds of
    /// [`messy_chrome`]) and the shared Chrome traces: what the readers
    /// that cut a file are held equal to one read on.
    pub(crate) fn messy_and_shared_chrome(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut paths = Vec::new();
        for (seed, threads, slices, by_process) in
            [(7u64, 6, 40, false), (99, 11, 25, false), (5, 8, 30, true)]
        {
            let p = dir.join(format!("messy{seed}.json"));
            std::fs::write(&p, messy_chrome(seed, threads, slices, by_process)).unwrap();
            paths.push(p);
        }
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/chrome");
        for f in std::fs::read_dir(&shared).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "json") {
                paths.push(p);
            }
        }
        paths
    }

    /// A Chrome trace with what real ones hold and then some: threads of
    /// several processes (string ids too), nested `X` slices written when
    /// they start or when they end (as Chrome writes them), `B`/`E` pairs,
    /// ends without a begin, begins never ended, slices that outlive their
    /// parent, `X` without `dur`, a slice over the whole run written last,
    /// instants (global too), counters, flows (steps, reused ids, orphans),
    /// async slices, ignored phases, and metadata last (it reorders the
    /// threads).
    /// With `by_process`, the file holds one process after another (as
    /// tools that merge per-process buffers write it).
    pub(crate) fn messy_chrome(
        seed: u64,
        threads: usize,
        slices: usize,
        by_process: bool,
    ) -> String {
        let mut rng = XorShift(seed.max(1));
        let pids = ["1", "2", "\"svc\""];
        let thread = |k: usize| -> (String, String) {
            let pid = pids[k % pids.len()].to_string();
            let tid = if k % 5 == 4 {
                format!("\"w{k}\"")
            } else {
                format!("{}", 10 + k)
            };
            (pid, tid)
        };
        // (emit key, tie, text)
        let mut evs: Vec<(u64, u64, String)> = Vec::new();
        let mut tie = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut push = |evs: &mut Vec<(u64, u64, String)>, key: u64, t: String| {
            evs.push((key, tie.next(), t));
        };
        let names = ["compute", "MPI_Send", "MPI_Recv", "io", "wait"];
        let cats = ["compute", "mpi overhead", "io", "idle", "compute"];
        let mut end_all = 0u64;
        for k in 0..threads {
            let (pid, tid) = thread(k);
            let head = |ph: &str| format!(r#"{{"ph":"{ph}","pid":{pid},"tid":{tid}"#);
            let mut t = 1_000 + rng.below(5_000);
            let start = t;
            for _ in 0..slices {
                // a top slice with up to two levels of children
                let d = 200 + rng.below(4_000);
                let mut tree = vec![(t, t + d, 0usize)];
                let mut c = t + rng.below(50);
                while c + 60 < t + d && rng.below(3) > 0 {
                    let cd = 10 + rng.below((t + d - c) / 2);
                    tree.push((c, c + cd, 1));
                    if rng.below(3) == 0 && cd > 20 {
                        tree.push((c + 5, c + 5 + rng.below(cd - 5), 2));
                    }
                    if rng.below(9) == 0 {
                        // outlives its parent: clipped
                        tree.push((c + 1, t + d + 1 + rng.below(100), 2));
                    }
                    c += cd + rng.below(40);
                }
                for (s, e, lvl) in tree {
                    let n = rng.below(names.len() as u64) as usize;
                    let (name, cat) = (names[n], cats[n]);
                    match rng.below(10) {
                        0..=2 => {
                            push(
                                &mut evs,
                                s,
                                format!(
                                    r#"{},"ts":{},"name":"{name}","cat":"{cat}"}}"#,
                                    head("B"),
                                    us(s)
                                ),
                            );
                            push(&mut evs, e, format!(r#"{},"ts":{}}}"#, head("E"), us(e)));
                        }
                        6 if lvl > 0 => push(
                            &mut evs,
                            s,
                            format!(
                                r#"{},"ts":{},"name":"{name}","cat":"{cat}"}}"#,
                                head("X"),
                                us(s)
                            ),
                        ),
                        // written when it ends (as Chrome writes) or starts
                        k => push(
                            &mut evs,
                            if (3..=5).contains(&k) { e } else { s },
                            format!(
                                r#"{},"ts":{},"dur":{},"name":"{name}","cat":"{cat}"}}"#,
                                head("X"),
                                us(s),
                                us(e - s)
                            ),
                        ),
                    }
                }
                match rng.below(40) {
                    0 => push(
                        &mut evs,
                        t + d,
                        format!(r#"{},"ts":{}}}"#, head("E"), us(t + d)),
                    ),
                    1 => push(
                        &mut evs,
                        t,
                        format!(
                            r#"{},"ts":{},"name":"open","cat":"compute"}}"#,
                            head("B"),
                            us(t)
                        ),
                    ),
                    2 => push(
                        &mut evs,
                        t,
                        format!(
                            r#"{},"ts":{},"name":"mark","s":"{}","args":{{"value":{}}}}}"#,
                            head("i"),
                            us(t),
                            ["t", "g", "p"][rng.below(3) as usize],
                            rng.below(9)
                        ),
                    ),
                    3 => push(
                        &mut evs,
                        t,
                        format!(
                            r#"{},"ts":{},"name":"mem","args":{{"rss":{},"heap":{}}}}}"#,
                            head("C"),
                            us(t),
                            rng.below(1000),
                            rng.below(50)
                        ),
                    ),
                    4 => push(
                        &mut evs,
                        t,
                        format!(r#"{},"ts":{},"name":"obj","id":"0x1"}}"#, head("O"), us(t)),
                    ),
                    _ => {}
                }
                t += d + rng.below(300);
            }
            end_all = end_all.max(t);
            if k % 4 == 1 {
                // one slice over the whole run, written at its end
                push(
                    &mut evs,
                    t,
                    format!(
                        r#"{},"ts":{},"dur":{},"name":"main","cat":"compute"}}"#,
                        head("X"),
                        us(start - 1),
                        us(t - start + 1)
                    ),
                );
            }
        }
        // flows: ids in order, some reused after their finish, some orphans
        let mut id = 0u64;
        for m in 0..threads * slices / 3 {
            let (a, b) = (
                rng.below(threads as u64) as usize,
                rng.below(threads as u64) as usize,
            );
            let (pa, ta) = thread(a);
            let (pb, tb) = thread(b);
            let s = 1_000 + rng.below(end_all);
            let r = s + rng.below(3_000);
            if m % 7 != 3 {
                id += 1;
            }
            let cat = if m % 5 == 0 { "xfer" } else { "message" };
            let fid = if m % 11 == 0 {
                format!("\"k{id}\"")
            } else {
                format!("{id}")
            };
            let reuse = m % 7 == 3;
            let (s, r) = if reuse {
                (
                    end_all + 10_000 + 10 * m as u64,
                    end_all + 10_005 + 10 * m as u64,
                )
            } else {
                (s, r)
            };
            if m % 13 != 5 {
                push(
                    &mut evs,
                    s,
                    format!(
                        r#"{{"ph":"s","pid":{pa},"tid":{ta},"ts":{},"name":"m","cat":"{cat}","id":{fid},"args":{{{}}}}}"#,
                        us(s),
                        // byte counts and tags of every size a one-pass
                        // read packs differently (most, no tag)
                        match (8 * rng.below(100), m % 12) {
                            (b, 1) => format!(r#""bytes":{b},"tag":{}"#, m % 256),
                            (b, 3) => format!(r#""bytes":{},"tag":{}"#, b + (4 << 20), m % 256),
                            (b, 5) => format!(r#""bytes":{},"tag":-{}"#, b % 24, m % 3),
                            (b, 7) => format!(r#""bytes":{},"tag":{}"#, b, 256 + m),
                            (b, 9) => format!(r#""bytes":{}"#, (1u64 << 30) + b),
                            (b, 10) => format!(r#""bytes":{},"tag":5"#, (1u64 << 40) + b % 16),
                            (b, _) => format!(r#""bytes":{b}"#),
                        }
                    ),
                );
            }
            if m % 9 == 2 {
                let mid = s + (r - s) / 2;
                push(
                    &mut evs,
                    mid,
                    format!(
                        r#"{{"ph":"t","pid":{pb},"tid":{tb},"ts":{},"name":"m","cat":"{cat}","id":{fid}}}"#,
                        us(mid)
                    ),
                );
            }
            if m % 17 != 8 {
                push(
                    &mut evs,
                    r,
                    format!(
                        r#"{{"ph":"f","pid":{pb},"tid":{tb},"ts":{},"name":"m","cat":"{cat}","id":{fid},"bp":"e"}}"#,
                        us(r)
                    ),
                );
            }
        }
        // async slices
        for m in 0..slices {
            let s = 1_000 + rng.below(end_all);
            let e = s + rng.below(2_000);
            let name = ["load", "fetch"][m % 2];
            push(
                &mut evs,
                s,
                format!(
                    r#"{{"ph":"b","pid":1,"ts":{},"name":"{name}","cat":"net","id":{}}}"#,
                    us(s),
                    m % 5
                ),
            );
            if m % 10 != 7 {
                push(
                    &mut evs,
                    e,
                    format!(
                        r#"{{"ph":"e","pid":1,"ts":{},"name":"{name}","cat":"net","id":{}}}"#,
                        us(e),
                        m % 5
                    ),
                );
            }
        }
        // file order: by emit time, with neighbours of different threads
        // swapped now and then
        evs.sort_by_key(|e| (e.0, e.1));
        if by_process {
            let pid = |t: &str| {
                t.split("\"pid\":")
                    .nth(1)
                    .and_then(|p| p.split(',').next())
                    .unwrap_or("")
                    .to_string()
            };
            evs.sort_by_cached_key(|e| pid(&e.2));
        }
        for i in 1..evs.len() {
            if rng.below(6) == 0 && evs[i].0 < evs[i - 1].0 + 50 {
                evs.swap(i, i - 1);
            }
        }
        let mut out: Vec<String> = evs.into_iter().map(|e| e.2).collect();
        for k in 0..threads {
            let (pid, tid) = thread(k);
            out.push(format!(
                r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_sort_index","args":{{"sort_index":{}}}}}"#,
                (k * 7) % threads
            ));
            if k % 3 == 0 {
                out.push(format!(
                    r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_name","args":{{"name":"worker {k}"}}}}"#
                ));
            }
        }
        out.push(
            r#"{"ph":"M","pid":2,"name":"process_sort_index","args":{"sort_index":-1}}"#.into(),
        );
        out.push(r#"{"ph":"M","pid":1,"name":"process_name","args":{"name":"main"}}"#.into());
        format!("{{\"traceEvents\":[\n{}\n]}}\n", out.join(",\n"))
    }

    /// The stream hands over exactly the intervals and messages of the
    /// trace in memory, and keeps the same locations, states, span and
    /// repairs, with epochs of any size.
    fn assert_stream_equals_memory(path: &Path) {
        let opts = ReadOptions::default();
        let mem = super::super::read(path, &opts).unwrap();
        for events in [1, 5, 64, 1000, EPOCH] {
            let mut c = Collect::default();
            let (t, keys) = stream_in_epochs(path, &opts, &mut c, events).unwrap();
            let what = format!("{} in epochs of {events}", path.display());
            assert_eq!(c.locations, mem.num_locations(), "{what}");
            assert_eq!(t.num_locations(), mem.num_locations(), "{what}");
            for l in 0..mem.num_locations() as LocId {
                let want: Vec<(Time, Time, u32)> = mem.intervals.of(l).iter().collect();
                assert_eq!(c.intervals[l as usize], want, "{what}: location {l}");
                assert_eq!(
                    t.locations.get(l).map(|x| &x.name),
                    mem.locations.get(l).map(|x| &x.name)
                );
            }
            assert!(keys.iter().all(|&(k, id)| k == id));
            let names = |t: &Trace| -> Vec<(String, StateClass)> {
                t.states
                    .iter()
                    .map(|(_, s)| (s.name.clone(), s.class))
                    .collect()
            };
            assert_eq!(names(&t), names(&mem), "{what}");
            let m = &mem.messages;
            let mut want: Vec<_> = (0..m.len())
                .map(|i| {
                    (
                        m.sender[i],
                        m.receiver[i],
                        m.send_time[i],
                        m.recv_time[i],
                        m.bytes[i],
                    )
                })
                .collect();
            let mut got = c.messages.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{what}");
            assert_eq!(c.events as usize, mem.events.len(), "{what}");
            assert_eq!(c.samples as usize, mem.counters.len(), "{what}");
            assert_eq!(t.meta.span, mem.meta.span, "{what}");
            let warn = |t: &Trace| -> Vec<(String, u64)> {
                t.meta
                    .diagnostics
                    .warnings
                    .iter()
                    .map(|w| (w.kind.to_string(), w.count))
                    .collect()
            };
            assert_eq!(warn(&t), warn(&mem), "{what}");
            assert_eq!(t.meta.ignored, mem.meta.ignored, "{what}");
            assert_eq!(t.meta.origin_ns, mem.meta.origin_ns, "{what}");
            let groups = |t: &Trace| -> Vec<Option<u32>> {
                (0..t.num_locations() as LocId)
                    .map(|l| t.locations.get(l).and_then(|x| x.group))
                    .collect()
            };
            assert_eq!(groups(&t), groups(&mem), "{what}");
            // the two-pass read builds the one-pass read's model exactly
            let two = read_two_pass_in_epochs(path, &opts, events).unwrap();
            let json = |t: &Trace| serde_json::to_string(t).unwrap();
            assert!(json(&two) == json(&mem), "{what}: two-pass read");
        }
    }

    use crate::model::StateClass;

    #[test]
    fn stream_equals_memory_on_messy_traces_in_epochs_of_any_size() {
        let d = tempfile::tempdir().unwrap();
        for (seed, threads, slices, by_process) in [
            (7u64, 6, 40, false),
            (99, 11, 25, false),
            (1234, 3, 120, false),
            (5, 8, 30, true),
        ] {
            let p = d.path().join(format!("messy{seed}.json"));
            std::fs::write(&p, messy_chrome(seed, threads, slices, by_process)).unwrap();
            assert_stream_equals_memory(&p);
            let t = super::super::read(&p, &ReadOptions::default()).unwrap();
            let kinds: Vec<&str> = t.meta.diagnostics.warnings.iter().map(|w| w.kind).collect();
            for k in [
                "missing-duration",
                "unmatched-end",
                "unclosed-begin",
                "improper-nesting",
                "unterminated-flow",
            ] {
                assert!(kinds.contains(&k), "{k} in {kinds:?}");
            }
            assert!(t.messages.len() > 10 && !t.events.is_empty() && !t.counters.is_empty());
            assert!(!t.meta.ignored.is_empty());
        }
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/chrome");
        if let Ok(dir) = std::fs::read_dir(&shared) {
            for f in dir.flatten() {
                assert_stream_equals_memory(&f.path());
            }
        }
    }
}
