//! Chrome traces reduced by the processes of a job together (`mpirun …
//! tapestry reduce`), each reading a share of the file's events.
//!
//! The events are numbered in file order and cut into stripes of `stripe`
//! events, dealt to the processes in turn (stripe `j` to process `j mod
//! N`). In the first pass each process reads its own share of the file's
//! bytes ([`super::byte_shares`]: one cut per process, each moved to the
//! end of the event it falls in), splits it into its events and parses all
//! of them, numbered in the file from the events the cuts' walks counted
//! before its cut; an exchange then sends the bytes of each stripe found
//! to the stripe's owner. The second pass reads only its stripes' bytes.
//! A gzip file is cut in its decompressed bytes, read through the index
//! the processes build together ([`crate::readers::gzip_index`]). Where
//! the file cannot be cut (gzip without an index, which every process
//! decompresses; a backslash outside a string; no event within the first
//! MiB; a cut deep inside an event) every process splits the whole file
//! and parses only its stripes' events in the first pass.
//!
//! The stream's two passes ([`super::stream`]) are kept:
//!
//! * First pass: each process takes its events into an accumulator of its
//!   own and keeps the few that change what the model holds besides the
//!   records — metadata, async slices, and every event that names a
//!   thread, a state (a name and a category), an event type or a counter
//!   for the first time in its share — with totals (span, `X` without
//!   `dur`, ignored phases, instants, samples) and the earliest slice
//!   start per thread and stripe. Every process gets every process's kept
//!   events and takes them in file order into one accumulator: the first
//!   occurrence of anything in the file is the first in some share, so the
//!   model's threads, states, tags and names come out in the order one
//!   process reading the whole file gives them.
//! * Second pass, in rounds of N stripes (a contiguous run of the file):
//!   each process reads and parses its stripe of the round and sends each `B`, `E`
//!   and `X` event to the process that owns its thread (thread `t` to
//!   process `t mod N`), each flow step to the process that owns its id (by
//!   a hash of category and id). An owner takes what it received in rank
//!   order, which is file order, and flattens its threads' slices and
//!   matches its flows exactly as the stream does, once no later stripe
//!   holds an earlier start; the intervals and messages go to its own
//!   reductions, which rank 0 merges.
//!
//! A process holds one round's events, its threads' open slices and its
//! flows' steps not matched yet: what the stream holds, divided.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::byte_shares;
use super::stream::{Count, Flows, Marks, Placed, ThreadStream, Watermarks, epoch, place};
use super::{
    Acc, Batch, Ev, Flow, Intake, Nesting, input, intake, parse_event, report_intake,
    report_orphans, take_batch,
};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::RawInterval;
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{LocId, NestedSlice, StateId, Time, Trace, TraceBuilder};
use crate::readers::ReadOptions;
use crate::readers::exchange::{
    Exchange, Inbox, Outbox, Words, all_gather, damaged, exchange_checked, put_bytes, put_position,
};
use crate::readers::json_split::{ReadAhead, Splitter, Truncation};

/// The largest stripe: 65,536 events (some 6 MiB of JSON) per process and
/// round.
pub const MAX_STRIPE_EVENTS: u64 = 1 << 16;

/// The stripe for a file of `len` bytes read by `n` processes: about eight
/// rounds (at some 100 bytes an event), between 1,024 and
/// [`MAX_STRIPE_EVENTS`] events.
pub fn stripe_for(len: u64, n: usize) -> u64 {
    (len / 100)
        .div_ceil((n as u64).max(1) * 8)
        .clamp(1 << 10, MAX_STRIPE_EVENTS)
}

/// What one process's share of a Chrome trace leaves besides its
/// reductions (which its sink holds): on rank 0, the trace without records
/// and the totals of every process's repairs, for [`ChromeShare::finish`]
/// once the other processes' reductions are merged into rank 0's.
pub struct ChromeShare {
    path: PathBuf,
    /// Rank 0's builder (locations, states, repairs so far).
    builder: Option<TraceBuilder>,
    /// The end of the last record (relative ns), when any event has a time.
    end: Option<Time>,
    /// Instants and counter samples: how many, and the last (relative ns).
    instants: (u64, Time),
    samples: (u64, Time),
    /// Every process's begins and ends repaired.
    nesting: Nesting,
    /// Every process's flow steps that made no message.
    orphans: u64,
}

impl ChromeShare {
    /// The trace without records (locations, states, span, repairs) on
    /// rank 0, once every process's reductions are merged into `sink`;
    /// with the state of each key (the keys are the states).
    pub fn finish(
        self,
        sink: &mut dyn IntervalSink,
        opts: &ReadOptions,
    ) -> Result<(Trace, Vec<(u32, StateId)>)> {
        let mut b = self.builder.ok_or_else(|| {
            Error::Invalid("only the first process's Chrome share can be finished".into())
        })?;
        self.nesting.report(&mut b, &self.path)?;
        sink.counted(Counted::Events, self.instants.0, self.instants.1);
        sink.counted(Counted::CounterSamples, self.samples.0, self.samples.1);
        report_orphans(&mut b, &self.path, self.orphans)?;
        b.set_declared_end(sink.end_time().max(self.end.unwrap_or(0)));
        crate::readers::finish_stream_skeleton(b, opts)
    }
}

/// The stripe of event `seq` (numbered from 1 in file order).
fn stripe_of(seq: u64, stripe: u64) -> u32 {
    epoch(seq, stripe)
}

/// The first pass's read of `split` (the whole file, or this process's
/// share of its bytes), whose first event is number `before + 1` in the
/// file: the events that are `mine` (by their number in the file, from 1)
/// are parsed, each to `take` with its number, its batch and its text; the
/// bytes of each of their stripes (of `stripe` events) to `own_bytes`. The
/// splitter at the end and the number of events it split, or the error and
/// the number of the event it was met at.
fn for_each_own(
    path: &Path,
    split: Splitter,
    (stripe, before, mine): (u64, u64, &(dyn Fn(u64) -> bool + Sync)),
    own_bytes: &mut Vec<StripeBytes>,
    mut take: impl FnMut(u64, &Ev, &Batch, &[u8]) -> Result<()> + Send,
) -> std::result::Result<(Splitter, u64), (u64, Error)> {
    let first = before;
    let mut before = before;
    let mut ahead = ReadAhead::new(split);
    while let Some(batch) = ahead.next() {
        let batch = batch.map_err(|e| (before + 1, e))?;
        let own: Vec<usize> = (0..batch.spans.len())
            .filter(|&k| mine(before + k as u64 + 1))
            .collect();
        // the next batches read beside this one's parse and intake, whose
        // runs overlap ([`take_batch`])
        let ((), taken) = rayon::join(
            || {
                ahead.top_up();
                ahead.top_up();
            },
            || {
                take_batch(
                    path,
                    &batch,
                    &own,
                    Intake::for_threads(),
                    None,
                    &mut |k, ev| {
                        let seq = before + k as u64 + 1;
                        let (s, e) = batch.spans[k];
                        let (at, to) = (batch.base + u64::from(s), batch.base + u64::from(e));
                        match own_bytes.last_mut() {
                            Some(b) if b.stripe == stripe_of(seq, stripe) => {
                                b.end = to;
                                b.events += 1;
                            }
                            _ => own_bytes.push(StripeBytes {
                                stripe: stripe_of(seq, stripe),
                                first: seq,
                                start: at,
                                end: to,
                                line: batch.position(s as usize).line.unwrap_or(1),
                                events: 1,
                            }),
                        }
                        let text = &batch.data[s as usize..e as usize];
                        take(seq, ev, &batch, text)
                    },
                )
            },
        );
        taken.map_err(|(k, e)| (before + k as u64 + 1, e))?;
        before += batch.spans.len() as u64;
        ahead.split.recycle(batch.data);
    }
    Ok((ahead.split, before - first))
}

/// Each stripe's bytes, as the processes whose shares hold its events
/// found them (`found`: this process's, in file order), to the stripe's
/// owner (stripe `j` to process `j mod n`): this process's stripes, whole,
/// in file order.
fn to_owners(
    ex: &mut dyn Exchange,
    found: &[StripeBytes],
    rank: usize,
) -> Result<Vec<StripeBytes>> {
    let n = ex.size().max(1);
    let mut to = vec![Vec::new(); n];
    for sb in found {
        to[sb.stripe as usize % n].extend_from_slice(&[
            u64::from(sb.stripe),
            sb.first,
            sb.start,
            sb.end,
            sb.line,
            sb.events,
        ]);
    }
    let inbox = exchange_checked(ex, outbox(&to), None)?;
    let mut own: Vec<StripeBytes> = Vec::new();
    // from the processes in rank order: the file's order
    for s in 0..inbox.len() {
        for w in inbox.from(s).chunks(6) {
            let &[stripe, first, start, end, line, events] = w else {
                return Err(damaged());
            };
            let stripe = u32::try_from(stripe)
                .ok()
                .filter(|&j| j as usize % n == rank)
                .ok_or_else(damaged)?;
            match own.last_mut() {
                Some(l) if l.stripe == stripe => {
                    l.end = end;
                    l.events += events;
                }
                Some(l) if l.stripe > stripe => return Err(damaged()),
                _ => own.push(StripeBytes {
                    stripe,
                    first,
                    start,
                    end,
                    line,
                    events,
                }),
            }
        }
    }
    Ok(own)
}

/// Where one of this process's stripes lies in the (decompressed) file, as
/// the first pass found it.
#[derive(Debug, Clone, Copy)]
struct StripeBytes {
    stripe: u32,
    /// The number of its first event in the file.
    first: u64,
    /// Its bytes: from its first event's start to its last one's end.
    start: u64,
    end: u64,
    /// The line its first event starts on.
    line: u64,
    events: u64,
}

/// What [`for_each_own_stripe`] hands over: one of this process's events
/// (its number in the file from 1, the event or why it is malformed, and
/// its batch), or the end of a round.
enum Step<'a> {
    /// An event where it lies in its parsed run (not moved: some 280 bytes).
    Event(u64, Result<&'a Ev<'a>>, &'a Batch),
    Round(u64),
}

/// The bytes of the file in order, some skipped.
trait Ahead: std::io::Read {
    /// Skips `n` bytes: whether the file held them.
    fn skip(&mut self, n: u64) -> bool;
}

/// A stream's bytes: skipped by reading them.
struct InOrder(Box<dyn std::io::Read + Send>);

impl std::io::Read for InOrder {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Ahead for InOrder {
    fn skip(&mut self, n: u64) -> bool {
        use std::io::Read;
        std::io::copy(&mut (&mut self.0).take(n), &mut std::io::sink()).is_ok_and(|k| k == n)
    }
}

impl Ahead for crate::readers::gzip_index::at::Positioned {
    fn skip(&mut self, n: u64) -> bool {
        self.at = self.at.saturating_add(n);
        self.at <= self.end
    }
}

/// The second pass's read: only this process's stripes (`own`, in file
/// order, as the first pass found them), the bytes between them skipped
/// without a look; each event to `on`, and [`Step::Round`]`(r)` once the
/// events of round `r` (stripes `r·n .. r·n + n`) are all read, for each
/// of the file's `rounds` rounds (every process the same). A stripe that
/// no longer holds its events (the file changed) is an error handed to
/// `on` as its first event's.
fn for_each_own_stripe(
    path: &Path,
    mut reader: Box<dyn Ahead>,
    own: &[StripeBytes],
    (rounds, n): (u64, usize),
    mut on: impl FnMut(Step) -> Result<()>,
) -> Result<()> {
    use std::io::Read;
    let changed = |pos: Position| {
        Error::parse(
            path,
            pos,
            "the file changed while it was read (a stripe moved)",
        )
    };
    let mut own = own.iter().peekable();
    // bytes read so far, and whether the file still holds what it held
    let mut at = 0u64;
    let mut intact = true;
    let mut data = Vec::new();
    for r in 0..rounds {
        if let Some(sb) = own.next_if(|sb| u64::from(sb.stripe) / n.max(1) as u64 == r) {
            let pos = Position {
                line: Some(sb.line),
                byte: Some(sb.start),
            };
            let mut batch = Batch {
                data: std::mem::take(&mut data),
                spans: Vec::new(),
                base: sb.start,
                base_line: sb.line,
            };
            batch.data.clear();
            let len = sb.end.saturating_sub(sb.start);
            intact = intact
                && sb.start >= at
                && reader.skip(sb.start - at)
                && (&mut reader)
                    .take(len)
                    .read_to_end(&mut batch.data)
                    .is_ok_and(|k| k as u64 == len);
            at = sb.end;
            if intact {
                intact = split_events(&batch.data, &mut batch.spans)
                    && batch.spans.len() as u64 == sb.events;
            }
            if !intact {
                on(Step::Event(sb.first, Err(changed(pos)), &batch))?;
            } else {
                // parsed some 10,000 events at a time, as a batch of the
                // splitter is (a parsed event takes some 300 bytes)
                for (c, chunk) in batch.spans.chunks(1 << 13).enumerate() {
                    let parsed: Vec<_> = chunk
                        .par_iter()
                        .map(|&(s, e)| parse_event(&batch.data[s as usize..e as usize], s as usize))
                        .collect();
                    for (k, (ev, &(s, _))) in parsed.iter().zip(chunk).enumerate() {
                        let ev = ev.as_ref().map_err(|msg| {
                            Error::parse(path, batch.position(s as usize), msg.clone())
                        });
                        let seq = sb.first + (c << 13) as u64 + k as u64;
                        on(Step::Event(seq, ev, &batch))?;
                    }
                }
            }
            data = batch.data;
        }
        on(Step::Round(r))?;
    }
    Ok(())
}

/// The spans of the event objects of a stripe's bytes (objects separated
/// by commas and white space); `false` when they are not that.
fn split_events(b: &[u8], spans: &mut Vec<(u32, u32)>) -> bool {
    use crate::readers::json_split::{Scan, scan_value};
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t' | b',') {
            i += 1;
        }
        if i == b.len() {
            return true;
        }
        if b[i] != b'{' {
            return false;
        }
        match scan_value(b, i) {
            Scan::Complete(e) => {
                let (Ok(s), Ok(e32)) = (u32::try_from(i), u32::try_from(e)) else {
                    return false;
                };
                spans.push((s, e32));
                i = e;
            }
            _ => return false,
        }
    }
}

/// What one process's first pass found in its events.
struct Survey {
    acc: Acc,
    b: TraceBuilder,
    /// The events that name something for the first time in this share,
    /// the metadata and the async slices: (seq, text), in file order.
    kept: Vec<(u64, Vec<u8>)>,
    /// The (name, category) pairs of slices seen.
    pairs: FxHashSet<(String, String)>,
    last_pair: Option<(String, String)>,
    /// The first `X` without `dur`: its seq.
    missing_seq: u64,
}

impl Survey {
    fn take(&mut self, seq: u64, ev: &Ev, batch: &Batch, text: &[u8]) -> Result<()> {
        let sizes = |s: &Survey| {
            (
                s.acc.threads.len(),
                s.acc.num_procs,
                s.b.states.len(),
                s.b.event_types.len(),
                s.b.counter_defs.len(),
            )
        };
        let before = sizes(self);
        let mut keep = matches!(ev.ph, b'M' | b'b' | b'e' | b'S' | b'F');
        if matches!(ev.ph, b'B' | b'X')
            && self
                .last_pair
                .as_ref()
                .is_none_or(|(n, c)| *n != ev.name || *c != ev.cat)
        {
            let pair = (ev.name.to_string(), ev.cat.to_string());
            keep |= self.pairs.insert(pair.clone());
            self.last_pair = Some(pair);
        }
        if ev.ph == b'X' && ev.dur.is_none() && self.acc.missing_dur.0 == 0 {
            self.missing_seq = seq;
        }
        // intake numbers the event seq
        self.acc.seq = seq - 1;
        intake(ev, &mut self.acc, &mut self.b, batch)?;
        if keep || sizes(self) != before {
            self.kept.push((seq, text.to_vec()));
        }
        Ok(())
    }

    /// What every process needs of this survey: totals, flow marks and
    /// kept events.
    fn to_words(&self, marks: &Marks, truncated: Option<&Truncation>, events: u64) -> Vec<u64> {
        let a = &self.acc;
        let mut w = vec![a.min_ts as u64, a.max_ts as u64, a.missing_dur.0];
        w.push(self.missing_seq);
        put_position(&mut w, a.missing_dur.1.unwrap_or_default());
        let ignored: Vec<(u8, u64)> = a
            .ignored
            .iter()
            .filter(|(ph, _)| **ph != b'M')
            .map(|(&ph, &n)| (ph, n))
            .collect();
        w.push(ignored.len() as u64);
        for (ph, n) in ignored {
            w.extend_from_slice(&[u64::from(ph), n]);
        }
        for c in [marks.instants, marks.samples] {
            w.extend_from_slice(&[c.n, c.last as u64]);
        }
        w.push(marks.flows.len() as u64);
        for &(e, ts) in &marks.flows {
            w.extend_from_slice(&[u64::from(e), ts as u64]);
        }
        w.push(self.kept.len() as u64);
        for (seq, text) in &self.kept {
            w.push(*seq);
            put_bytes(&mut w, text);
        }
        w.push(events);
        w.push(truncated.map_or(0, |t| t.bytes + 1));
        if let Some(t) = truncated {
            put_position(&mut w, t.pos);
        }
        w
    }
}

/// Every process's first pass, merged: what one process reading the whole
/// file would have.
struct Merged {
    min_ts: i64,
    max_ts: i64,
    missing: (u64, u64, Position),
    ignored: FxHashMap<u8, u64>,
    instants: Count,
    samples: Count,
    flows: Vec<(u32, i64)>,
    kept: Vec<(u64, Vec<u8>)>,
    /// Where the file ends inside the array, if it does (the process that
    /// read its end says it).
    truncated: Option<Truncation>,
    /// The events every process split, summed.
    events: u64,
}

fn merge_surveys(messages: &[&[u64]]) -> Result<Merged> {
    let mut m = Merged {
        min_ts: i64::MAX,
        max_ts: i64::MIN,
        missing: (0, u64::MAX, Position::none()),
        ignored: FxHashMap::default(),
        instants: Count::default(),
        samples: Count::default(),
        flows: Vec::new(),
        kept: Vec::new(),
        truncated: None,
        events: 0,
    };
    for &w in messages {
        let mut r = Words::new(w);
        m.min_ts = m.min_ts.min(r.one()? as i64);
        m.max_ts = m.max_ts.max(r.one()? as i64);
        let (missing, seq) = (r.one()?, r.one()?);
        let pos = r.position()?;
        m.missing.0 += missing;
        if missing > 0 && seq < m.missing.1 {
            m.missing = (m.missing.0, seq, pos);
        }
        for _ in 0..r.count(2)? {
            let (ph, n) = (r.one()?, r.one()?);
            *m.ignored.entry(ph as u8).or_default() += n;
        }
        for c in [&mut m.instants, &mut m.samples] {
            let (n, last) = (r.one()?, r.one()? as i64);
            if n > 0 {
                c.n += n;
                c.last = c.last.max(last);
            }
        }
        for _ in 0..r.count(2)? {
            let e = u32::try_from(r.one()?).map_err(|_| damaged())?;
            m.flows.push((e, r.one()? as i64));
        }
        for _ in 0..r.count(2)? {
            let seq = r.one()?;
            m.kept.push((seq, r.bytes()?));
        }
        m.events += r.one()?;
        let cut = r.one()?;
        if cut > 0 {
            let pos = r.position()?;
            m.truncated.get_or_insert(Truncation {
                pos,
                bytes: cut - 1,
            });
        }
        if !r.done() {
            return Err(damaged());
        }
    }
    // by epoch (a stripe that two shares hold has a mark from each: the
    // watermarks take the earlier)
    m.flows.sort_unstable_by_key(|&(e, _)| e);
    m.kept.sort_unstable_by_key(|&(seq, _)| seq);
    Ok(m)
}

/// Fails on the process that met the earliest error in file order (the
/// first process among those that met it at the same event: the ones
/// every process meets alike); the others stop with
/// [`Error::OtherProcess`]. `message` is sent to every process; what they
/// sent, when none failed.
fn gather_first_error(
    ex: &mut dyn Exchange,
    message: Vec<u64>,
    failed: Option<(u64, Error)>,
) -> Result<Inbox> {
    let mut w = vec![failed.as_ref().map_or(u64::MAX, |f| f.0)];
    w.extend(message);
    let inbox = all_gather(ex, &w, None)?;
    let first = (0..inbox.len())
        .map(|s| (inbox.from(s).first().copied().unwrap_or(u64::MAX), s))
        .min();
    match (first, failed) {
        (Some((seq, s)), Some((_, e))) if seq != u64::MAX && s == ex.rank() => Err(e),
        (Some((seq, _)), _) if seq != u64::MAX => Err(Error::OtherProcess),
        _ => Ok(inbox),
    }
}

/// A failure every process meets alike (they computed the same thing):
/// rank 0 says it, the others stop quietly.
fn alike<T>(rank: usize, r: Result<T>) -> Result<T> {
    match r {
        Err(_) if rank != 0 => Err(Error::OtherProcess),
        r => r,
    }
}

/// The hash of a flow's category and id that picks its owner: the same on
/// every process (Fx hashing has no random seed).
fn flow_hash(cat: &str, id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one((cat, id))
}

/// Kinds of the records of the second pass's exchange (the low two bits
/// of their first word; the thread above).
const X: u64 = 0;
const BEGIN: u64 = 1;
const END: u64 = 2;
const FLOW: u64 = 3;

/// Reduces this process's share of the Chrome trace at `path` into
/// `sink`, with the other processes of `ex` (each calls it), in stripes of
/// `stripe` events. On rank 0, what [`ChromeShare::finish`] needs once
/// the others' reductions are merged into `sink`. An error met by one
/// process is said by that process alone; the others stop with
/// [`Error::OtherProcess`].
pub fn read_share(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut (dyn IntervalSink + Send),
    ex: &mut dyn Exchange,
    stripe: u64,
) -> Result<ChromeShare> {
    let (rank, n) = (ex.rank(), ex.size().max(1));
    let stripe = stripe.max(1);

    // first pass: this process's events
    let inp = input::open(path)?;
    let damage = inp.damage.clone();
    let mut survey = Survey {
        acc: Acc::new(Some(Box::new(Marks {
            epoch_events: stripe,
            ..Default::default()
        }))),
        b: super::builder(path, opts),
        kept: Vec::new(),
        pairs: FxHashSet::default(),
        last_pair: None,
        missing_seq: u64::MAX,
    };
    let mut own_bytes = Vec::new();
    // the bytes this process splits: its share of them when the file can
    // be cut (it parses all its events), else the whole file (it parses
    // its stripes' events)
    let (share, source) = match byte_shares::plan(path, &inp, ex)? {
        Some((sh, src)) => (Some(sh), Some(src)),
        None => (None, None),
    };
    let (split, before) = match (&share, &source) {
        (Some(sh), Some(src)) => (sh.splitter_from(path, src.clone()), sh.before),
        _ => (Ok(Splitter::new(path, inp.reader)), 0),
    };
    let stripes_dealt = |seq: u64| u64::from(stripe_of(seq, stripe)) % n as u64 == rank as u64;
    let every = |_: u64| true;
    let mine: &(dyn Fn(u64) -> bool + Sync) = match share {
        Some(_) => &every,
        None => &stripes_dealt,
    };
    let split = split.map_err(|e| (before + 1, e)).and_then(|sp| {
        for_each_own(
            path,
            sp,
            (stripe, before, mine),
            &mut own_bytes,
            |seq, ev, batch, text| survey.take(seq, ev, batch, text),
        )
    });
    // a share followed by another holds the events the walks counted
    // (unless the file changed since)
    let expected = share.as_ref().and_then(|sh| sh.events);
    let split = match (split, expected) {
        (Ok((_, k)), Some(c)) if k != c => Err((
            before + k.min(c) + 1,
            Error::parse(
                path,
                Position::byte(share.as_ref().map_or(0, |sh| sh.start)),
                "the file changed while it was read (a share's events)",
            ),
        )),
        (r, _) => r,
    };
    let local_marks = *survey.acc.marks.take().unwrap_or_default();
    let (split, failed) = match split {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e)),
    };
    let truncated = split.as_ref().and_then(|(s, _)| s.truncated.as_ref());
    let local = split.as_ref().map_or(0, |(_, k)| *k);
    let inbox = gather_first_error(ex, survey.to_words(&local_marks, truncated, local), failed)?;
    // a gzip file's bytes, each span decoded whole by one process or
    // another, against its trailer's CRC-32
    if let Some(src) = &source {
        crate::readers::gzip_index::check_read_shared(path, src.as_ref(), ex)?;
    }
    let (split, events) =
        split.ok_or_else(|| Error::Invalid("the first pass lost its input".into()))?;
    drop(split);
    if share.is_some() {
        own_bytes = to_owners(ex, &own_bytes, rank)?;
    }
    let messages: Vec<&[u64]> = (0..inbox.len())
        .map(|s| inbox.from(s).get(1..).unwrap_or_default())
        .collect();
    let merged = merge_surveys(&messages)?;
    // the file's events: each share's, or the whole file's that each
    // process split
    let events = if share.is_some() {
        merged.events
    } else {
        events
    };
    // the rounds the first pass went through: every process's the same
    let rounds = match events {
        0 => 1,
        _ => u64::from(stripe_of(events, stripe)) / n as u64 + 1,
    };
    drop(messages);
    drop(inbox);

    // every process: one accumulator from every share's kept events, in
    // file order
    let mut acc = Acc::new(Some(Box::new(Marks {
        epoch_events: stripe,
        ..Default::default()
    })));
    let mut b = super::builder(path, opts);
    for (seq, text) in &merged.kept {
        let batch = Batch {
            data: text.clone(),
            spans: Vec::new(),
            base: 0,
            base_line: 1,
        };
        let ev = parse_event(text, 0).map_err(|e| Error::Invalid(format!("a kept event: {e}")))?;
        acc.seq = seq - 1;
        alike(rank, intake(&ev, &mut acc, &mut b, &batch))?;
    }
    // what the kept events cannot tell
    acc.min_ts = merged.min_ts;
    acc.max_ts = merged.max_ts;
    acc.missing_dur = (
        merged.missing.0,
        (merged.missing.0 > 0).then_some(merged.missing.2),
    );
    acc.ignored.retain(|ph, _| *ph == b'M');
    for (&ph, &c) in &merged.ignored {
        *acc.ignored.entry(ph).or_default() += c;
    }
    acc.marks = None;
    alike(
        rank,
        report_intake(&acc, &mut b, path, &damage, merged.truncated.as_ref()),
    )?;
    let mut async_nesting = Nesting::default();
    let Placed {
        origin,
        end_abs,
        any_ts,
        loc_of_thread,
        lanes,
    } = place(&mut acc, &mut b, &mut async_nesting);
    let rel = |t: i64| -> Time { (t - origin).max(0) as Time };
    let threads = acc.threads.len();

    // the slice marks of this share's threads, to their owners
    let mut to_owner: Vec<Vec<u64>> = vec![Vec::new(); n];
    let keys = survey.acc.thread_keys();
    for (i, m) in local_marks.per_thread.iter().enumerate() {
        let Some((pid, tid)) = keys.get(i) else {
            continue;
        };
        let t = acc.thread_of(pid, tid) as usize;
        if t >= threads {
            return Err(Error::Invalid(
                "a thread of this share is not among the merged threads".into(),
            ));
        }
        for &(e, ts) in m {
            to_owner[t % n].extend_from_slice(&[t as u64, u64::from(e), ts as u64]);
        }
    }
    drop(survey);
    let inbox = exchange_checked(ex, outbox(&to_owner), None)?;
    drop(to_owner);
    let mine = threads.saturating_sub(rank).div_ceil(n);
    let mut marks: Vec<Vec<(u32, i64)>> = vec![Vec::new(); mine];
    for s in 0..inbox.len() {
        for x in inbox.from(s).chunks_exact(3) {
            let t = x[0] as usize;
            let m = marks
                .get_mut(t / n)
                .filter(|_| t % n == rank)
                .ok_or_else(damaged)?;
            m.push((u32::try_from(x[1]).map_err(|_| damaged())?, x[2] as i64));
        }
    }
    drop(inbox);
    let owned: Vec<ThreadStream> = marks
        .into_iter()
        .map(|mut m| {
            // by epoch (a stripe that two shares hold has a mark from
            // each: the watermarks take the earlier)
            m.sort_unstable_by_key(|&(e, _)| e);
            ThreadStream::new(Watermarks::new(&m, rel))
        })
        .collect();

    sink.begin(b.locations.len(), if any_ts { rel(end_abs) } else { 0 })?;
    let mut second = Second {
        path,
        rank,
        n,
        threads,
        origin,
        acc,
        b,
        owned,
        flows: Flows {
            marks: Watermarks::new(&merged.flows, rel),
            ..Default::default()
        },
        flow_keys: FxHashMap::default(),
        nesting: Nesting::default(),
        touched: Vec::new(),
        send: vec![Vec::new(); n],
        loc_of_thread,
        out: Vec::new(),
        batch: Vec::new(),
        failed: None,
    };
    if rank == 0 {
        second.batch = lanes
            .into_iter()
            .map(|(loc, start, end, state)| RawInterval {
                loc,
                state,
                start,
                end,
            })
            .collect();
        second.failed = second.hand_over(sink).err();
    }

    // second pass: each event to the owner of its thread or flow, its
    // stripes read where they lie when the file was cut (a gzip file
    // through its index), else the whole file in order
    let reader: Box<dyn Ahead> = match source {
        Some(src) => {
            let end = src.size().map_err(|e| Error::io(path, e))?;
            Box::new(crate::readers::gzip_index::at::Positioned {
                src,
                at: 0,
                end,
                pause: u64::MAX,
            })
        }
        None => Box::new(InOrder(input::open(path)?.reader)),
    };
    let read = for_each_own_stripe(path, reader, &own_bytes, (rounds, n), |step| match step {
        Step::Event(seq, ev, batch) => {
            // an error is said at the next exchange, which every process
            // waits in
            if second.failed.is_none()
                && let Err(e) = ev.and_then(|ev| second.route(seq, ev, batch))
            {
                second.failed = Some(e);
            }
            Ok(())
        }
        Step::Round(r) => second.round(r, ex, sink),
    });
    read?;
    let end = rel(end_abs);
    let last = match second.failed.take() {
        Some(e) => Err(e),
        None => second.finish(end, sink),
    };
    let orphans = second.flows.orphans + second.flows.open.len() as u64;
    let nesting = &second.nesting;
    let totals = [
        nesting.unmatched_end,
        nesting.unclosed,
        nesting.clipped,
        orphans,
    ];
    let inbox = all_gather(ex, &totals, last.err())?;
    let mut sum = [0u64; 4];
    for s in 0..inbox.len() {
        for (x, y) in sum.iter_mut().zip(inbox.from(s)) {
            *x += y;
        }
    }
    Ok(ChromeShare {
        path: path.to_path_buf(),
        builder: (rank == 0).then_some(second.b),
        end: any_ts.then_some(end),
        instants: (merged.instants.n, rel(merged.instants.last)),
        samples: (merged.samples.n, rel(merged.samples.last)),
        nesting: Nesting {
            unmatched_end: sum[0] + async_nesting.unmatched_end,
            unclosed: sum[1] + async_nesting.unclosed,
            clipped: sum[2] + async_nesting.clipped,
        },
        orphans: sum[3],
    })
}

/// The second pass of one process: the events it parses go to their
/// owners; the slices of its own threads and the steps of its own flows
/// come back, to flatten and match.
struct Second<'p> {
    path: &'p Path,
    rank: usize,
    n: usize,
    threads: usize,
    origin: i64,
    /// The accumulator and builder every process merged (threads, states).
    acc: Acc,
    b: TraceBuilder,
    /// Threads `rank`, `rank + n`, …
    owned: Vec<ThreadStream>,
    flows: Flows,
    flow_keys: FxHashMap<Vec<u8>, u32>,
    nesting: Nesting,
    touched: Vec<u32>,
    /// What goes to each process at the end of the round.
    send: Vec<Vec<u64>>,
    loc_of_thread: Vec<LocId>,
    out: Vec<(Time, Time, StateId)>,
    batch: Vec<RawInterval>,
    /// The error this process met, said at the next exchange.
    failed: Option<Error>,
}

impl Second<'_> {
    fn rel(&self, t: i64) -> Time {
        (t - self.origin).max(0) as Time
    }

    /// Sends one of this process's events to its owner.
    fn route(&mut self, seq: u64, ev: &Ev, batch: &Batch) -> Result<()> {
        let t = match ev.ph {
            b'B' | b'E' | b'X' | b's' | b't' | b'f' => self.acc.thread_of_event(ev),
            _ => return Ok(()),
        };
        if t as usize >= self.threads {
            return Err(Error::parse(
                self.path,
                batch.position(ev.off),
                "the file changed while it was read (a thread is new)",
            ));
        }
        let (t, n) = (u64::from(t), self.n);
        let ts = ev.ts.unwrap_or(0);
        match ev.ph {
            b'B' | b'E' | b'X' => {
                let (kind, st) = match ev.ph {
                    b'E' => (END, 0),
                    b'B' => (BEGIN, self.acc.state_of(&mut self.b, &ev.name, &ev.cat)),
                    _ => (X, self.acc.state_of(&mut self.b, &ev.name, &ev.cat)),
                };
                let (start, end) = (self.rel(ts), self.rel(ts + ev.dur.unwrap_or(0)));
                self.send[t as usize % n].extend_from_slice(&[
                    kind | t << 2,
                    start,
                    end,
                    u64::from(st),
                    seq,
                ]);
            }
            _ => {
                let id = ev.id.as_deref().unwrap_or("");
                let ph = match ev.ph {
                    b's' => 0,
                    b't' => 1,
                    _ => 2,
                };
                let to = &mut self.send[(flow_hash(&ev.cat, id) % n as u64) as usize];
                to.extend_from_slice(&[
                    FLOW | t << 2,
                    ts as u64,
                    (seq << 2) | ph,
                    ev.lite.bytes.unwrap_or(0),
                ]);
                let mut key = Vec::with_capacity(ev.cat.len() + 1 + id.len());
                key.extend_from_slice(ev.cat.as_bytes());
                key.push(1);
                key.extend_from_slice(id.as_bytes());
                put_bytes(to, &key);
            }
        }
        Ok(())
    }

    /// The end of round `r`: the exchange (which says whether any process
    /// failed), then what it let go. An error after the exchange is said
    /// at the next one.
    fn round(
        &mut self,
        r: u64,
        ex: &mut dyn Exchange,
        sink: &mut (dyn IntervalSink + Send),
    ) -> Result<()> {
        let out = outbox(&self.send);
        for s in &mut self.send {
            s.clear();
        }
        let inbox = exchange_checked(ex, out, self.failed.take())?;
        if let Err(e) = self.take_round(r, &inbox, sink) {
            self.failed = Some(e);
        }
        Ok(())
    }

    fn take_round(
        &mut self,
        r: u64,
        inbox: &Inbox,
        sink: &mut (dyn IntervalSink + Send),
    ) -> Result<()> {
        let n = self.n;
        // in rank order: the round's stripes in file order
        for s in 0..inbox.len() {
            let mut w = Words::new(inbox.from(s));
            while !w.done() {
                let head = w.one()?;
                let t = (head >> 2) as usize;
                if head & 3 == FLOW {
                    let x = w.take(3)?;
                    let key = w.bytes()?;
                    let next = self.flow_keys.len() as u32;
                    let key = *self.flow_keys.entry(key).or_insert(next);
                    self.flows.pending.push(Flow {
                        ts: x[0] as i64,
                        seq_ph: x[1],
                        bytes: x[2],
                        tag: 0,
                        key,
                        thread: u32::try_from(t).map_err(|_| damaged())?,
                    });
                    continue;
                }
                let x = w.take(4)?;
                let th = self
                    .owned
                    .get_mut(t / n)
                    .filter(|_| t % n == self.rank)
                    .ok_or_else(damaged)?;
                let st = StateId::try_from(x[2]).map_err(|_| damaged())?;
                match head & 3 {
                    X => th.slices.push(NestedSlice {
                        start: x[0],
                        end: x[1],
                        state: st,
                        seq: x[3],
                    }),
                    k => th.be.push((x[0], x[3], k == BEGIN, st)),
                }
                if !th.touched {
                    th.touched = true;
                    self.touched.push(t as u32);
                }
            }
        }
        // every stripe up to the round's last is read
        let last = u32::try_from(((r + 1) * n as u64).saturating_sub(1)).unwrap_or(u32::MAX);
        for t in std::mem::take(&mut self.touched) {
            let th = &mut self.owned[t as usize / n];
            th.touched = false;
            let w = th.marks.after(last);
            self.out.clear();
            th.flush(w, &mut self.nesting, &mut self.out);
            keep(&mut self.batch, &self.out, self.loc_of_thread[t as usize]);
        }
        let w = self.flows.marks.after(last);
        self.match_flows(w, sink)?;
        self.hand_over(sink)
    }

    /// After the last round: every flow step matched, every begin closed,
    /// every slice flattened.
    fn finish(&mut self, end: Time, sink: &mut (dyn IntervalSink + Send)) -> Result<()> {
        self.match_flows(Time::MAX, sink)?;
        for i in 0..self.owned.len() {
            self.out.clear();
            self.owned[i].finish(end, &mut self.nesting, &mut self.out);
            self.owned[i] = ThreadStream::default();
            keep(
                &mut self.batch,
                &self.out,
                self.loc_of_thread[i * self.n + self.rank],
            );
            if self.batch.len() >= 1 << 16 {
                self.hand_over(sink)?;
            }
        }
        self.hand_over(sink)
    }

    fn hand_over(&mut self, sink: &mut (dyn IntervalSink + Send)) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let r = sink.intervals(&self.batch);
        self.batch.clear();
        r.map_err(|e| Error::parse(self.path, Position::none(), e))
    }

    /// Matches the flow steps before `w`, the messages to `sink`.
    fn match_flows(&mut self, w: Time, sink: &mut (dyn IntervalSink + Send)) -> Result<()> {
        let (origin, locs) = (self.origin, &self.loc_of_thread);
        let rel = |t: i64| (t - origin).max(0) as Time;
        self.flows
            .match_before(w, origin, |p, f| {
                let loc = |t: u32| {
                    locs.get(t as usize)
                        .copied()
                        .ok_or_else(|| "a flow step of an unknown thread".to_string())
                };
                sink.message(
                    loc(p.thread)?,
                    loc(f.thread)?,
                    rel(p.ts),
                    rel(f.ts),
                    p.bytes,
                )
            })
            .map_err(|e| Error::parse(self.path, Position::none(), e))
    }
}

/// One message per process, in rank order.
fn outbox(to: &[Vec<u64>]) -> Outbox {
    let mut o = Outbox::with_capacity(to.iter().map(|m| m.len() + 1).sum());
    for m in to {
        o.begin();
        o.words.extend_from_slice(m);
        o.end();
    }
    o
}

/// Adds a thread's flattened intervals (`out`) at location `loc` to
/// `batch`.
fn keep(batch: &mut Vec<RawInterval>, out: &[(Time, Time, StateId)], loc: LocId) {
    batch.extend(out.iter().map(|&(start, end, state)| RawInterval {
        loc,
        state,
        start,
        end,
    }));
}

#[cfg(test)]
mod tests {
    use super::super::stream::tests::{
        Collect, deep_chrome, messy_and_shared_chrome, messy_chrome,
    };
    use super::*;
    use crate::readers::exchange::ThreadExchange;

    /// The trace read by `n` processes (threads of this one) in stripes of
    /// `stripe` events, their sinks merged as `reduce` merges reductions:
    /// the trace and the merged sink, or the one error a process met.
    fn shared(path: &Path, n: usize, stripe: u64) -> std::result::Result<(Trace, Collect), String> {
        let opts = ReadOptions::default();
        let ends = ThreadExchange::group(n);
        let done: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = ends
                .into_iter()
                .map(|mut ex| {
                    let opts = &opts;
                    s.spawn(move || {
                        let mut c = Collect::default();
                        read_share(path, opts, &mut c, &mut ex, stripe).map(|sh| (sh, c))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let errors: Vec<String> = done
            .iter()
            .filter_map(|d| match d {
                Err(Error::OtherProcess) | Ok(_) => None,
                Err(e) => Some(e.to_string()),
            })
            .collect();
        if !errors.is_empty() {
            assert_eq!(errors.len(), 1, "one process says why: {errors:?}");
            assert!(done.iter().all(|d| d.is_err()), "every process stops");
            return Err(errors[0].clone());
        }
        let mut done = done.into_iter().map(|d| d.unwrap());
        let (share, mut all) = done.next().unwrap();
        for (_, c) in done {
            assert_eq!(c.locations, all.locations);
            for (l, v) in c.intervals.into_iter().enumerate() {
                if !v.is_empty() {
                    // a location's intervals come from its owner alone
                    assert!(
                        all.intervals[l].is_empty(),
                        "location {l} from two processes"
                    );
                    all.intervals[l] = v;
                }
            }
            all.messages.extend(c.messages);
            all.end = all.end.max(c.end);
            assert_eq!((c.events, c.samples), (0, 0));
        }
        let (t, keys) = share.finish(&mut all, &opts).map_err(|e| e.to_string())?;
        assert!(keys.iter().all(|&(k, id)| k == id));
        all.messages.sort_unstable();
        Ok((t, all))
    }

    fn alone(path: &Path) -> std::result::Result<(Trace, Collect), String> {
        let mut c = Collect::default();
        let (t, _) = super::super::stream::stream(path, &ReadOptions::default(), &mut c)
            .map_err(|e| e.to_string())?;
        c.messages.sort_unstable();
        Ok((t, c))
    }

    fn assert_shares_equal_the_stream(path: &Path) {
        assert_shares_equal_the_stream_in(
            path,
            &[1, 2, 3, 5],
            &[1, 3, 64, 1000, MAX_STRIPE_EVENTS],
        );
    }

    fn assert_shares_equal_the_stream_in(path: &Path, ns: &[usize], stripes: &[u64]) {
        let want = alone(path);
        for &n in ns {
            for &stripe in stripes {
                let what = format!("{} by {n} in stripes of {stripe}", path.display());
                let got = shared(path, n, stripe);
                match (&got, &want) {
                    (Ok((t, c)), Ok((tw, cw))) => {
                        let json = |t: &Trace| serde_json::to_string(t).unwrap();
                        assert!(json(t) == json(tw), "{what}: the trace");
                        assert_eq!(c.intervals, cw.intervals, "{what}");
                        assert_eq!(c.messages, cw.messages, "{what}");
                        assert_eq!((c.events, c.samples), (cw.events, cw.samples), "{what}");
                        assert_eq!(c.end, cw.end, "{what}");
                    }
                    (Err(e), Err(ew)) => assert_eq!(e, ew, "{what}"),
                    _ => panic!(
                        "{what}: {:?} against {:?}",
                        got.as_ref().err(),
                        want.as_ref().err()
                    ),
                }
            }
        }
    }

    /// Processes reading stripes dealt in turn give what one stream gives:
    /// the same trace (locations and their order, states and tags,
    /// repairs, ignored events, span), the same intervals per location
    /// and the same messages, on untidy traces, with 1 to 5 processes and
    /// stripes of 1 event to the whole file.
    #[test]
    fn shares_equal_the_stream_on_messy_traces() {
        let d = tempfile::tempdir().unwrap();
        for p in messy_and_shared_chrome(d.path()) {
            assert_shares_equal_the_stream(&p);
        }
    }

    /// A gzip trace, indexed by the processes together and cut in its
    /// decompressed bytes (the second pass reading its stripes through the
    /// index), gives what one stream gives: the LAMMPS run and a
    /// synthetic one compressed by zlib.
    #[test]
    fn gzip_shares_equal_the_stream() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        let lammps = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/traces/lammps-melt-16/lammps-melt-16.json.gz");
        let mut text = String::from("[");
        for k in 0..60_000u64 {
            let (tid, ts) = (k % 13, k * 7);
            text += &format!(
                r#"{{"ph":"X","pid":1,"tid":{tid},"ts":{ts},"dur":{},"name":"f{}","cat":"c"}},"#,
                k % 5 + 1,
                k % 11
            );
            text.push('\n');
        }
        text += r#"{"ph":"M","pid":1,"name":"process_name","args":{"name":"p"}}]"#;
        let synthetic = d.path().join("s.json.gz");
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&synthetic).unwrap(),
            flate2::Compression::default(),
        );
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap();
        for p in [lammps, synthetic] {
            // the index is built, so the shares are cut
            assert!(
                crate::readers::gzip_index::build(&p).unwrap().is_some() || {
                    let ends = ThreadExchange::group(2);
                    std::thread::scope(|s| {
                        ends.into_iter()
                            .map(|mut ex| {
                                let p = &p;
                                s.spawn(move || {
                                    crate::readers::gzip_index::build_shared(p, &mut ex, None)
                                })
                            })
                            .collect::<Vec<_>>()
                            .into_iter()
                            .all(|h| h.join().unwrap().unwrap().is_some())
                    })
                },
                "{}",
                p.display()
            );
            assert_shares_equal_the_stream_in(&p, &[2, 4, 5], &[700, MAX_STRIPE_EVENTS]);
        }
    }

    /// What a share names first: a state with a second category in a later
    /// stripe (its tags), threads, event types and counters first met in
    /// late stripes, metadata that renames and reorders them, ignored
    /// phases and `X` without `dur` in several shares.
    #[test]
    fn first_occurrences_in_any_share_keep_the_files_order() {
        let mut ev = Vec::new();
        for k in 0..40u32 {
            let (pid, tid) = (k % 3, k % 4);
            let ts = 10 * k;
            ev.push(format!(
                r#"{{"ph":"X","pid":{pid},"tid":{tid},"ts":{ts},"dur":5,"name":"s{}","cat":"c{}"}}"#,
                k % 5,
                k % 7
            ));
            if k % 6 == 5 {
                ev.push(format!(
                    r#"{{"ph":"i","pid":{pid},"tid":{},"ts":{ts},"name":"mark{}","s":"t"}}"#,
                    tid + 10,
                    k % 7
                ));
            }
            if k % 9 == 8 {
                ev.push(format!(
                    r#"{{"ph":"C","pid":{pid},"tid":{tid},"ts":{ts},"name":"ctr{}","args":{{"a":{k},"b{k}":1}}}}"#,
                    k % 2
                ));
                ev.push(format!(
                    r#"{{"ph":"O","pid":{pid},"ts":{ts},"name":"obj","id":"1"}}"#
                ));
                ev.push(format!(
                    r#"{{"ph":"X","pid":{pid},"tid":{tid},"ts":{ts},"name":"nodur","cat":"x,Y"}}"#
                ));
            }
            if k % 13 == 12 {
                ev.push(format!(
                    r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"thread_sort_index","args":{{"sort_index":{}}}}}"#,
                    40 - k
                ));
                ev.push(format!(
                    r#"{{"ph":"M","pid":{pid},"name":"process_name","args":{{"name":"p{k}"}}}}"#
                ));
                ev.push(format!(r#"{{"ph":"M","pid":{pid},"name":"unknown_meta"}}"#));
            }
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("firsts.json");
        std::fs::write(&p, format!("[{}]", ev.join(",\n"))).unwrap();
        assert_shares_equal_the_stream(&p);
        let (t, _) = alone(&p).unwrap();
        // what the test is about is there
        assert!(t.states.iter().any(|(_, s)| s.tags.len() > 1));
        assert!(
            t.counters.defs.len() == 6 && t.event_types.len() == 6,
            "{:?} {:?}",
            t.counters.defs,
            t.event_types
        );
    }

    /// Traces the processes cannot cut (a cut deep inside an event, a
    /// backslash outside a string) are read whole by each, with the same
    /// result.
    #[test]
    fn uncut_files_give_the_same_result() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("deep.json");
        std::fs::write(&p, deep_chrome(60)).unwrap();
        assert_shares_equal_the_stream(&p);
    }

    /// A malformed event is said once, by the process that parsed it, at
    /// the stream's line; one that every process meets (the array's
    /// structure) by rank 0.
    #[test]
    fn errors_are_said_once_at_the_streams_position() {
        let d = tempfile::tempdir().unwrap();
        let messy = messy_chrome(11, 5, 30, false);
        let lines: Vec<&str> = messy.lines().collect();
        for (name, text) in [
            (
                "bad-ts",
                lines
                    .iter()
                    .enumerate()
                    .map(|(i, l)| {
                        if i == lines.len() / 2 {
                            l.replacen("\"ts\":", "\"ts\":\"x\",\"was\":", 1)
                        } else {
                            l.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ("cut", messy[..messy.len() * 2 / 3].replace('[', "[ ")),
            ("not-json", format!("{}]]]", &messy[..messy.len() / 2])),
        ] {
            let p = d.path().join(format!("{name}.json"));
            std::fs::write(&p, text).unwrap();
            assert_shares_equal_the_stream(&p);
        }
    }
}
