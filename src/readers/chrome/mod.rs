//! Chrome Trace Event Format (JSON), as written by Chrome, Perfetto's JSON
//! export, catapult, PyTorch's profiler, and many HPC tools.
//!
//! * `B`/`E` nest per thread, `X` carries its `dur`; the flat timeline of a
//!   thread shows its innermost open slice (see [`crate::model::flatten_nested`]).
//! * `i`/`I`/`R`/`n`/`P` become instant events (`s: "g"` ones are global);
//!   `args.value`, when an integer, is the event value.
//! * `C` counters: each numeric member of `args` is a series, named after
//!   the event (`name`) for the member `value`, `name.member` otherwise.
//! * `M` metadata: process and thread names and sort indices.
//! * Flows `s`/`t`/`f` (matched by category and id) become messages from
//!   each step to the next; `args.bytes` and `args.tag` give size and tag.
//! * Async `b`/`e` (and legacy `S`/`F`) slices, matched by process,
//!   category and id, are packed into lanes: one location per lane.
//! * Object (`O`/`N`/`D`), clock-sync (`c`), context (`(`/`)`), memory-dump
//!   (`v`/`V`) and async-step (`T`/`p`) events are counted as ignored.
//!
//! `ts` and `dur` are microseconds, possibly fractional and as large as
//! epoch microseconds; they are converted exactly to integer nanoseconds
//! (never through `f64`), relative to the earliest event.
//!
//! Default state classes: a slice whose category contains `idle` is idle,
//! one whose category contains `overhead` is overhead, all others are busy.

use crate::phases;
use compact_str::{CompactString, format_compact};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use rustc_hash::FxHashMap;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::ReadOptions;
use super::chunked::Chunked;
use super::decimal::{digits_u64, parse_scaled};
use super::input;
use super::json_split::{Batch, ReadAhead, Splitter, Truncation};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::{
    CounterBlock, EventBlock, GLOBAL, IntervalBlock, LocationBlock, RawMessage, Staged,
};
use crate::model::{
    BuildOptions, Flattener, Format, GroupKind, LocId, LocationKind, NestedOrder, NestedSlice,
    StateClass, StateId, Time, TimeUnit, Trace, TraceBuilder, flatten_nested,
};
use fields::{Fields, LiteArgs, fields_fast, fields_serde};
use metas::Metas;

mod byte_shares;
mod deferred;
mod fields;
mod known;
mod metas;
mod ranges;
mod series;
pub mod share;
pub mod stream;

/// A process or thread id: a number or a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Ident<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

impl Ident<'_> {
    fn owned(&self) -> Ident<'static> {
        match self {
            Ident::Num(n) => Ident::Num(*n),
            Ident::Str(s) => Ident::Str(Cow::Owned(s.to_string())),
        }
    }
}

impl std::fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ident::Num(n) => write!(f, "{n}"),
            Ident::Str(s) => f.write_str(s),
        }
    }
}

/// One event after the parallel parse.
struct Ev<'a> {
    ph: u8,
    name: Cow<'a, str>,
    cat: Cow<'a, str>,
    pid: Option<Ident<'a>>,
    tid: Option<Ident<'a>>,
    ts: Option<i64>,
    dur: Option<i64>,
    id: Option<Cow<'a, str>>,
    scope: u8,
    args: Option<&'a str>,
    lite: LiteArgs<'a>,
    off: usize,
    /// Its thread, when the parse found it among those the intake had
    /// numbered ([`known::Known`]); [`NO_THREAD`] otherwise.
    thread: u32,
    /// A slice's state, when the parse found it so.
    state: Option<StateId>,
}

impl<'a> Ev<'a> {
    /// Its process and thread ids as the intake takes them: the `pid`
    /// without a `tid`, 0 without either.
    fn ids(&self) -> (&Ident<'a>, &Ident<'a>) {
        static ZERO: Ident<'static> = Ident::Num(0);
        let pid = self.pid.as_ref().unwrap_or(&ZERO);
        let tid = self.tid.as_ref().unwrap_or(pid);
        (pid, tid)
    }
}

/// The ids `(pid, tid)` as numbers, when both are.
fn numeric((pid, tid): (&Ident, &Ident)) -> Option<(i64, i64)> {
    match (pid, tid) {
        (Ident::Num(p), Ident::Num(t)) => Some((*p, *t)),
        _ => None,
    }
}

const HANDLED: &[u8] = b"BEXiIRnPCMstfbeSF";
const IGNORED: &[u8] = b"TpONDcvV()";

fn ident<'a>(t: &'a str, what: &str) -> std::result::Result<Ident<'a>, String> {
    if t.starts_with('"') {
        let s: Cow<str> =
            serde_json::from_str(t).map_err(|e| format!("bad string in {what}: {e}"))?;
        return Ok(Ident::Str(s));
    }
    if let Ok(n) = t.parse::<i64>() {
        return Ok(Ident::Num(n));
    }
    if let Ok(n) = parse_scaled(t.as_bytes(), 0) {
        return Ok(Ident::Num(n));
    }
    Err(format!(
        "expected {what} as an integer or a string, found {}",
        clip(t)
    ))
}

fn clip(s: &str) -> String {
    let mut t: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        t.push_str("...");
    }
    t
}

fn micros(t: &str, what: &str) -> std::result::Result<i64, String> {
    let t = t
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .unwrap_or(t);
    parse_scaled(t.as_bytes(), 3).map_err(|e| {
        format!(
            "expected {what} in microseconds, found {} ({})",
            clip(t),
            e.describe()
        )
    })
}

fn id_text(t: &str) -> Cow<'_, str> {
    if t.starts_with('{') {
        // id2: {"local": ...} or {"global": ...}
        if let Ok(m) = serde_json::from_str::<HashMap<String, serde_json::Value>>(t) {
            let mut keys: Vec<_> = m.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            keys.sort();
            return Cow::Owned(keys.join(","));
        }
    }
    Cow::Borrowed(t.trim_matches('"'))
}

fn parse_event(bytes: &[u8], off: usize) -> std::result::Result<Ev<'_>, String> {
    let mut raw = Fields::default();
    if fields_fast(bytes, &mut raw).is_none() {
        raw = fields_serde(bytes)?;
    }
    event_of(raw, off)
}

/// The event of an object's [`Fields`], from either path.
#[inline(always)]
fn event_of(raw: Fields<'_>, off: usize) -> std::result::Result<Ev<'_>, String> {
    let ph = raw
        .ph
        .ok_or("expected a \"ph\" (phase) member in the event, found none")?;
    let phb = ph.as_bytes();
    if phb.len() != 1 || !(HANDLED.contains(&phb[0]) || IGNORED.contains(&phb[0])) {
        return Err(format!(
            "expected a Chrome trace phase (B, E, X, i, C, M, s, t, f, b, e, ...), found \"{}\"",
            clip(&ph)
        ));
    }
    let ph = phb[0];
    let ts = match raw.ts {
        Some(v) => {
            let t = match raw.ts_ns {
                Some(t) => t,
                None => micros(v, "\"ts\"")?,
            };
            if t < 0 {
                return Err(format!("expected a non-negative \"ts\", found {}", clip(v)));
            }
            Some(t)
        }
        None => None,
    };
    if ts.is_none() && ph != b'M' && HANDLED.contains(&ph) {
        return Err(format!(
            "expected a \"ts\" member in a '{}' event, found none",
            char::from(ph)
        ));
    }
    let dur = match raw.dur {
        Some(v) => {
            let d = match raw.dur_ns {
                Some(d) => d,
                None => micros(v, "\"dur\"")?,
            };
            if d < 0 {
                return Err(format!(
                    "expected a non-negative \"dur\", found {}",
                    clip(v)
                ));
            }
            Some(d)
        }
        None => None,
    };
    if let (Some(t), Some(d)) = (ts, dur)
        && t.checked_add(d).is_none()
    {
        return Err("\"ts\" + \"dur\" overflows 64-bit nanoseconds".into());
    }
    let ident_of = |v, num: Option<i64>, what| match num {
        Some(n) => Ok(Ident::Num(n)),
        None => ident(v, what),
    };
    let pid = raw
        .pid
        .map(|v| ident_of(v, raw.pid_num, "\"pid\""))
        .transpose()?;
    let tid = raw
        .tid
        .map(|v| ident_of(v, raw.tid_num, "\"tid\""))
        .transpose()?;
    let id = raw.id.or(raw.id2).map(id_text);
    let scope = raw
        .s
        .as_deref()
        .and_then(|s| s.bytes().next())
        .unwrap_or(b't');
    let lite = match (ph, raw.args) {
        (b'C', _) | (_, None) => LiteArgs::default(),
        (_, Some(a)) => match raw.lite {
            Some(lite) => lite,
            None => serde_json::from_str(a).map_err(|e| format!("malformed \"args\": {e}"))?,
        },
    };
    Ok(Ev {
        ph,
        name: raw.name.unwrap_or(Cow::Borrowed("")),
        cat: raw.cat.unwrap_or(Cow::Borrowed("")),
        pid,
        tid,
        ts,
        dur,
        id,
        scope,
        args: raw.args,
        lite,
        off,
        thread: NO_THREAD,
        state: None,
    })
}

/// An `X` slice as a thread holds it until it is flattened, in 12 bytes:
/// its start as an offset from its chunk's base ([`HeldSlices`]), its
/// duration, and its state. Its place among the thread's slice events is
/// not kept: the `X` slices are held in order, and the `B`/`E` events
/// between them carry theirs ([`ThreadAcc::be`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HeldSlice {
    start: u32,
    /// [`SLICE_APART`]: the start and duration are in [`HeldSlices::apart`].
    dur: u32,
    state: StateId,
}

const _: () = assert!(std::mem::size_of::<HeldSlice>() == 12);

/// [`HeldSlice::dur`]: the slice is kept apart.
const SLICE_APART: u32 = u32::MAX;

/// Slices a chunk of [`HeldSlices`] holds.
const SLICE_CHUNK: usize = 256;

/// What a thread's slices are expected to come to, for the room its first
/// chunk is given ([`HeldSlices::push`]): it grows by half (a vector
/// doubles) while nothing is known; from a quarter of the way
/// through the bytes a read takes its events from, by what the slices so
/// far make at that pace, and a 32nd more. Read by 16 ranges, a 241 MB
/// trace of 512 threads held some 172 slices a thread in each, and the
/// room left by growing by half was a sixth of them (3.9 MB).
#[derive(Debug, Clone, Copy, Default)]
enum Expect {
    #[default]
    Unknown,
    /// `done` of the `len` bytes the events are taken from are read.
    Read { done: u64, len: u64 },
}

impl Expect {
    /// Where the read stands in `batch`: halfway through it, in the bytes
    /// from `reach.0` on, `reach.1` of them.
    fn of_batch(reach: Option<(u64, u64)>, batch: &Batch) -> Expect {
        match reach {
            Some((from, len)) if len > 0 => Expect::Read {
                done: (batch.base + batch.data.len() as u64 / 2).saturating_sub(from),
                len,
            },
            _ => Expect::Unknown,
        }
    }

    /// The slices expected in all where `so_far` have come (`None`: not
    /// known, or too early to tell).
    fn all(self, so_far: usize) -> Option<usize> {
        match self {
            Expect::Unknown => None,
            Expect::Read { done, len } => {
                if done.saturating_mul(4) < len {
                    return None;
                }
                let done = done.min(len).max(1);
                let all = so_far as u128 * u128::from(len) / u128::from(done);
                // and a 32nd more, for a pace that picks up
                Some(usize::try_from(all + all / 32 + 1).unwrap_or(usize::MAX))
            }
        }
    }

    /// The room of a full first chunk of `cap` slices (all the thread's)
    /// grown for one more: the slices expected in all (at least an eighth
    /// more, at most twice `cap`), or half more when none are; never more
    /// than [`SLICE_CHUNK`].
    fn grown(self, cap: usize) -> usize {
        let grown = match self.all(cap + 1) {
            Some(all) => all
                .max(cap + 1)
                .clamp(cap + (cap / 8).max(4), (2 * cap).max(cap + 4)),
            None => cap + (cap / 2).max(4),
        };
        grown.min(SLICE_CHUNK)
    }
}

/// A thread's `X` slices in file order, in chunks of [`SLICE_CHUNK`]: a
/// chunk's starts are offsets from its base, 2^31 ns (2.1 s) before its
/// first slice's start. A slice starting more than 2.1 s before or after
/// that, or lasting 4.3 s or more, is kept apart.
///
/// The first chunk is held inline, and grows with the room that [`Expect`]
/// gives it; the later chunks (made whole), their bases and the slices kept
/// apart are boxed. Most threads of a range ([`ranges`]) have a few slices:
/// at 65,536 threads read by 16 ranges, a vector of chunks and one of bases
/// took some 180 bytes per thread and range.
#[derive(Debug, Default, Clone)]
struct HeldSlices {
    first: Vec<HeldSlice>,
    /// The first chunk's base.
    base: u64,
    more: Option<Box<MoreSlices>>,
}

/// The slices of [`HeldSlices`] past its first chunk, and those kept apart.
#[derive(Debug, Default, Clone)]
struct MoreSlices {
    /// The chunks after the first: all full but the last, as a read makes
    /// them; of any length up to [`SLICE_CHUNK`] where a later range's
    /// were taken over ([`HeldSlices::append`]).
    chunks: Vec<Vec<HeldSlice>>,
    /// The slices in `chunks`.
    len: usize,
    /// Each chunk's base.
    bases: Vec<u64>,
    /// The slices kept apart: (start, duration), in order.
    apart: Vec<(u64, u64)>,
}

/// A chunk's base for its first slice's start.
fn chunk_base(start: u64) -> u64 {
    start.saturating_sub(1 << 31)
}

impl HeldSlices {
    /// Holds a slice, growing the first chunk for the slices that `expect`
    /// says are still to come (the later chunks are made whole).
    fn push(&mut self, start: u64, dur: u64, state: StateId, expect: Expect) {
        let in_first = self.first.len() < SLICE_CHUNK
            && self.more.as_ref().is_none_or(|m| m.chunks.is_empty());
        let base = if in_first {
            if self.first.is_empty() {
                self.base = chunk_base(start);
            }
            self.base
        } else {
            let more = self.more();
            if more.chunks.last().is_none_or(|c| c.len() >= SLICE_CHUNK) {
                more.bases.push(chunk_base(start));
                more.chunks.push(Vec::with_capacity(SLICE_CHUNK));
            }
            more.bases.last().copied().unwrap_or(0)
        };
        let held = match fit(base, start, dur) {
            Some((off, d)) => HeldSlice {
                start: off,
                dur: d,
                state,
            },
            None => self.more().held_apart(start, dur, state),
        };
        if in_first {
            let cap = self.first.capacity();
            if self.first.len() == cap {
                let grown = expect.grown(cap);
                self.first.reserve_exact(grown.saturating_sub(cap).max(1));
            }
            self.first.push(held);
        } else {
            let more = self.more();
            if let Some(c) = more.chunks.last_mut() {
                c.push(held);
                more.len += 1;
            }
        }
    }

    /// Where its next slice will be written (a hint for
    /// [`crate::memory::prefetch`]: it moves when the chunk grows).
    fn next_slot(&self) -> *const HeldSlice {
        match self.more.as_ref().and_then(|m| m.chunks.last()) {
            Some(c) => c.as_ptr().wrapping_add(c.len()),
            None => self.first.as_ptr().wrapping_add(self.first.len()),
        }
    }

    /// Takes `later`'s slices (a later range's of the same thread) after
    /// its own, their states renumbered by `state`: its chunks are taken
    /// over as they are (each keeps its base), and so are its slices kept
    /// apart, after its own (in the order of the slices that hold
    /// their places). No slice is copied: a merge of 16 ranges copied
    /// the later ranges' slices into the first's on one thread, at most 16 MB
    /// of a 241 MB trace's 1.4 M intervals (0.02 s, each page new).
    fn append(&mut self, mut later: HeldSlices, state: impl Fn(StateId) -> StateId) {
        let renumber = |c: &mut [HeldSlice]| c.iter_mut().for_each(|r| r.state = state(r.state));
        renumber(&mut later.first);
        let mut more = later.more.take().map_or_else(MoreSlices::default, |m| *m);
        more.chunks.iter_mut().for_each(|c| renumber(c));
        if later.first.is_empty() {
            // (no slice: nothing in its later chunks, nothing apart)
            return;
        }
        if self.is_empty() {
            let some = more.len > 0 || !more.apart.is_empty();
            *self = HeldSlices {
                more: some.then(|| Box::new(more)),
                ..later
            };
            return;
        }
        // the room its read left free at the end of its first chunk
        later.first.shrink_to_fit();
        let to = self.more();
        to.len += later.first.len() + more.len;
        to.bases.push(later.base);
        to.chunks.push(later.first);
        to.bases.append(&mut more.bases);
        to.chunks.append(&mut more.chunks);
        to.apart.append(&mut more.apart);
    }

    fn more(&mut self) -> &mut MoreSlices {
        self.more.get_or_insert_with(Box::default)
    }

    fn len(&self) -> usize {
        self.first.len() + self.more.as_ref().map_or(0, |m| m.len)
    }

    /// (Its first chunk is filled first, and taken over whole by
    /// [`Self::append`] when empty.)
    fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// Bytes its records take.
    fn bytes(&self) -> usize {
        self.len() * std::mem::size_of::<HeldSlice>()
            + self
                .more
                .as_ref()
                .map_or(0, |m| std::mem::size_of_val(m.apart.as_slice()))
    }

    /// The slices in order: (start, duration, state).
    fn iter(&self) -> impl Iterator<Item = (u64, u64, StateId)> + '_ {
        let more = self.more.as_deref();
        let later = more.into_iter().flat_map(|m| {
            m.bases
                .iter()
                .copied()
                .zip(m.chunks.iter().map(Vec::as_slice))
        });
        let mut apart = more.map_or(&[][..], |m| m.apart.as_slice()).iter();
        std::iter::once((self.base, self.first.as_slice()))
            .chain(later)
            .flat_map(|(base, c)| c.iter().map(move |r| (base, r)))
            .map(move |(base, r)| {
                if r.dur == SLICE_APART {
                    // every slice held apart has its entry, in order
                    let &(start, dur) = apart.next().unwrap_or(&(0, 0));
                    (start, dur, r.state)
                } else {
                    (base + u64::from(r.start), u64::from(r.dur), r.state)
                }
            })
    }

    /// `f` on the slices in order, (start, duration, state), until it
    /// returns false: whether it never did. [`Self::iter`] as one loop a
    /// chunk, for the passes over every thread's slices at the end of a
    /// read (the nested chains of `iter` took a third of the flattening of
    /// 65,536 threads' slices).
    fn try_each(&self, mut f: impl FnMut(u64, u64, StateId) -> bool) -> bool {
        let more = self.more.as_deref();
        let mut apart = more.map_or(&[][..], |m| m.apart.as_slice()).iter();
        let mut chunk = |base: u64, c: &[HeldSlice]| {
            c.iter().all(|r| {
                let (start, dur) = if r.dur == SLICE_APART {
                    // every slice held apart has its entry, in order
                    apart.next().copied().unwrap_or((0, 0))
                } else {
                    (base + u64::from(r.start), u64::from(r.dur))
                };
                f(start, dur, r.state)
            })
        };
        chunk(self.base, &self.first)
            && more.is_none_or(|m| (m.bases.iter().zip(&m.chunks)).all(|(&base, c)| chunk(base, c)))
    }

    /// The slices kept apart.
    #[cfg(test)]
    fn apart(&self) -> usize {
        self.more.as_ref().map_or(0, |m| m.apart.len())
    }
}

/// The offset from `base` and the duration of a slice, when they fit.
fn fit(base: u64, start: u64, dur: u64) -> Option<(u32, u32)> {
    let off = u32::try_from(start.checked_sub(base)?).ok()?;
    let d = u32::try_from(dur).ok().filter(|&d| d != SLICE_APART)?;
    Some((off, d))
}

impl MoreSlices {
    /// A slice kept apart.
    fn held_apart(&mut self, start: u64, dur: u64, state: StateId) -> HeldSlice {
        self.apart.push((start, dur));
        HeldSlice {
            start: 0,
            dur: SLICE_APART,
            state,
        }
    }
}

/// One thread's records as a one-pass read holds them: 48 bytes, and its
/// `X` slices (most threads have no `B`/`E` events, which are boxed; the
/// names and sort indices of all threads are in [`Acc::thread_metas`]).
#[derive(Default, Clone)]
struct ThreadAcc {
    slices: HeldSlices,
    be: Option<Box<BeEvents>>,
}

/// A thread's `B` and `E` events, (ts, place, begin?, state): the place is
/// the event's among this thread's slice events (`B`, `E` and `X`),
/// counted from 0.
type BeEvents = Chunked<(i64, u64, bool, StateId), 256>;

impl ThreadAcc {
    /// Holds an `X` slice (`ts` and `ts + dur` are non-negative and do not
    /// overflow: [`parse_event`] checks it).
    fn push_x(&mut self, ts: i64, dur: i64, state: StateId, expect: Expect) {
        self.slices.push(ts as u64, dur as u64, state, expect);
    }

    /// Where its next `X` slice will be written ([`HeldSlices::next_slot`]).
    fn next_slot(&self) -> *const HeldSlice {
        self.slices.next_slot()
    }

    /// Holds a `B` (`begin`) or `E` event.
    fn push_be(&mut self, ts: i64, begin: bool, state: StateId) {
        // its place: the slice events before it
        let place = (self.slices.len() + self.be_len()) as u64;
        self.be_mut().push((ts, place, begin, state));
    }

    fn be_mut(&mut self) -> &mut BeEvents {
        self.be.get_or_insert_with(Box::default)
    }

    fn be_len(&self) -> usize {
        self.be.as_ref().map_or(0, |be| be.len())
    }

    /// Bytes its slice records take.
    fn record_bytes(&self) -> usize {
        self.slices.bytes() + self.be_bytes()
    }

    /// Bytes its `B`/`E` events take.
    fn be_bytes(&self) -> usize {
        self.be.as_ref().map_or(0, |be| be.bytes())
    }

    /// Its flat timeline as a block of location `loc`'s own, its records
    /// freed, when it holds only X slices, in the order the flattening
    /// takes them ([`held_order_span`]): the intervals go into the block a
    /// few at a time, not through the list [`Self::flatten`] makes (24
    /// bytes an interval beside the block). None otherwise (nothing
    /// taken).
    fn flatten_block(
        &mut self,
        loc: LocId,
        origin: i64,
    ) -> Option<(Option<IntervalBlock>, Nesting)> {
        if self.be_len() > 0 {
            return None;
        }
        let o = origin.max(0) as Time;
        let (first, last) = held_order_span(&self.slices, o)?;
        let mut block = LocationBlock::new(loc, (first, last), self.slices.len());
        let mut out = Vec::with_capacity(2 * FEED_SLICES);
        // (in order: its span was found)
        let clipped = feed(&self.slices, o, &mut out, |out| {
            block.extend(out);
            out.clear();
        })?;
        self.slices = HeldSlices::default();
        Some((
            block.finish(),
            Nesting {
                clipped,
                ..Nesting::default()
            },
        ))
    }

    /// Its flat timeline after what `flat` holds (times relative to
    /// `origin`, slices still open end at `end_abs`), its records freed:
    /// what was repaired.
    fn flatten(
        &mut self,
        origin: i64,
        end_abs: i64,
        flat: &mut Vec<(Time, Time, StateId)>,
    ) -> Nesting {
        let rel = |t: i64| -> Time { (t - origin).max(0) as Time };
        let mut nesting = Nesting::default();
        // (a vector of exactly their number: they are many on some threads)
        let mut be = Vec::with_capacity(self.be_len());
        if let Some(held) = self.be.take() {
            be.extend(held.iter().copied());
        }
        // the X slices made relative (the times and the origin are never
        // negative), each given back its place among the thread's slice
        // events: the places the B/E events (in file order) do not take
        let held = std::mem::take(&mut self.slices);
        let o = origin.max(0) as Time;
        if be.is_empty() {
            // fed as they come, their order checked on the way: undone at
            // the first slice out of order (a trace not written in time
            // order), to be sorted below
            let at = flat.len();
            if let Some(clipped) = feed(&held, o, flat, |_| {}) {
                nesting.clipped += clipped;
                return nesting;
            }
            flat.truncate(at);
        }
        let mut slices = Vec::with_capacity(held.len() + be.len() / 2);
        let (mut next_be, mut place) = (0, 0u64);
        for (start, dur, state) in held.iter() {
            while be.get(next_be).is_some_and(|e| e.1 == place) {
                next_be += 1;
                place += 1;
            }
            slices.push(nested_slice((start, dur, state), o, place));
            place += 1;
        }
        drop(held);
        be.sort_by_key(|&(ts, seq, _, _)| (ts, seq));
        let mut stack: Vec<(i64, u64, StateId)> = Vec::new();
        for &(ts, seq, begin, st) in &be {
            if begin {
                stack.push((ts, seq, st));
            } else if let Some((bt, bseq, bst)) = stack.pop() {
                slices.push(NestedSlice {
                    start: rel(bt),
                    end: rel(ts),
                    state: bst,
                    seq: bseq,
                });
            } else {
                nesting.unmatched_end += 1;
            }
        }
        drop(be);
        for (bt, bseq, bst) in stack {
            nesting.unclosed += 1;
            slices.push(NestedSlice {
                start: rel(bt),
                end: rel(end_abs),
                state: bst,
                seq: bseq,
            });
        }
        nesting.clipped += flatten_nested(&mut slices, flat);
        nesting
    }
}

/// The slice of `held` at (start, duration, state) as the flattening
/// takes it: times made relative to `o`, numbered `seq`.
fn nested_slice((start, dur, state): (u64, u64, StateId), o: Time, seq: u64) -> NestedSlice {
    NestedSlice {
        start: start.saturating_sub(o),
        end: (start + dur).saturating_sub(o),
        state,
        seq,
    }
}

/// [`crate::model::nested_order_span`] of the slices of `held` as the
/// flattening takes them ([`nested_slice`]), in one loop a chunk.
fn held_order_span(held: &HeldSlices, o: Time) -> Option<(Time, Time)> {
    let mut seq = 0;
    let mut span: Option<(Time, Time)> = None;
    let mut order = NestedOrder::default();
    let in_order = held.try_each(|start, dur, state| {
        let s = nested_slice((start, dur, state), o, seq);
        seq += 1;
        span = Some(span.map_or((s.start, s.end), |(a, z)| (a, z.max(s.end))));
        order.takes(&s)
    });
    in_order.then(|| span.unwrap_or((0, 0)))
}

/// The slices of `held` fed to the flattening one at a time, their order
/// checked on the way: its intervals go to `out`, handed to `take` after
/// every [`FEED_SLICES`] slices and at the end. What was clipped; `None`
/// at the first slice out of the order the flattening takes (those before
/// it fed, nothing after).
fn feed(
    held: &HeldSlices,
    o: Time,
    out: &mut Vec<(Time, Time, StateId)>,
    mut take: impl FnMut(&mut Vec<(Time, Time, StateId)>),
) -> Option<u64> {
    let mut f = Flattener::default();
    let mut order = NestedOrder::default();
    let mut seq = 0;
    let in_order = held.try_each(|start, dur, state| {
        let s = nested_slice((start, dur, state), o, seq);
        if !order.takes(&s) {
            return false;
        }
        f.push(&s, out);
        seq += 1;
        if seq % FEED_SLICES as u64 == 0 {
            take(out);
        }
        true
    });
    if !in_order {
        return None;
    }
    f.finish(out);
    take(out);
    Some(f.clipped)
}

/// Slices fed to the flattening at a time, where a thread's slices come
/// in its order ([`ThreadAcc::flatten`]).
const FEED_SLICES: usize = 4096;

/// The threads flattened at once in [`assemble`] hold up to about this
/// many bytes of records together (one thread may hold more). A group's
/// quiet threads are listed as records (24 bytes each, their slices take
/// 13) before they become one block: at 8 MiB that list added 14 MB to
/// the peak of a read of 65,536 threads, at 2 MiB it adds 3.5.
const FLATTEN_GROUP_BYTES: usize = 2 << 20;

/// Threads with at least this many intervals hand them to the builder as
/// one block of their own.
const GROUPED_THREAD: usize = 1024;

/// A flow step a stream's second pass holds until it is matched
/// ([`stream`], [`share`]: few at a time).
struct Flow {
    ts: i64,
    /// The event's sequence number times 4 plus its phase (0 `s`, 1 `t`,
    /// 2 `f`): sorting by it sorts by the sequence number.
    seq_ph: u64,
    bytes: u64,
    /// The message tag: the event's `args.tag`, or the flow's key.
    tag: i64,
    key: u32,
    thread: u32,
}

impl Flow {
    fn ph(&self) -> u8 {
        [b's', b't', b'f', b'f'][(self.seq_ph & 3) as usize]
    }
}

/// A flow event as a one-pass read holds it until the end, in 20 bytes
/// (aligned to 4); a step that starts a message (`s`, `t`) has its bytes
/// and tag in [`FlowPayloads`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
struct HeldFlow {
    ts: i64,
    key: u32,
    thread: u32,
    /// The event's place among the flow events times 4 plus its phase (0
    /// `s`, 1 `t`, 2 `f`): sorting by it sorts by the place in the file.
    place_ph: u32,
}

const _: () = assert!(std::mem::size_of::<HeldFlow>() == 20);

/// Flow events one pass can hold: their places take 30 bits.
const MAX_FLOWS: usize = 1 << 30;

impl HeldFlow {
    fn ph(&self) -> u8 {
        [b's', b't', b'f', b'f'][(self.place_ph & 3) as usize]
    }

    fn place(&self) -> u32 {
        self.place_ph >> 2
    }
}

/// [`FlowPayloads::pairs`]: the bytes and tag are kept apart.
const BYTES_APART: u32 = u32::MAX;
/// [`FlowPayloads::pairs`]: no tag given; the message's is the flow's key.
const TAG_KEY: i32 = i32::MIN;

/// The bytes and tags of the flow events that start a message (`s`, `t`;
/// an `f` ends one, and its own are never read), found by place: a bit
/// per flow event says whether it has them, and they are in file order,
/// 8 bytes each (12 bytes a message where the events held them whole in
/// each of their 16).
#[derive(Default)]
struct FlowPayloads {
    /// Bit `place`: the flow event at `place` has a payload.
    has: Vec<u64>,
    /// Per word of `has`, the payloads before it ([`FlowPayloads::index`]).
    before: Vec<u32>,
    /// (bytes, tag) in file order: bytes [`BYTES_APART`], kept in `apart`;
    /// tag [`TAG_KEY`], the flow's key.
    pairs: Vec<(u32, i32)>,
    /// (place, bytes, tag: `None` for the flow's key) of the payloads
    /// whose bytes take more than 32 bits, or whose tag is outside `i32` or
    /// is `i32::MIN`, by place.
    apart: Vec<(u32, u64, Option<i64>)>,
}

impl FlowPayloads {
    /// Bytes its vectors take.
    fn bytes(&self) -> usize {
        std::mem::size_of_val(self.has.as_slice())
            + std::mem::size_of_val(self.before.as_slice())
            + std::mem::size_of_val(self.pairs.as_slice())
            + std::mem::size_of_val(self.apart.as_slice())
    }

    /// Notes the flow event at `place` (the next one), with its bytes and
    /// tag (`None`: the flow's key) if it starts a message.
    fn push(&mut self, place: u32, payload: Option<(u64, Option<i64>)>) {
        let (w, bit) = ((place / 64) as usize, place % 64);
        if w == self.has.len() {
            self.has.push(0);
        }
        let Some((bytes, tag)) = payload else {
            return;
        };
        self.has[w] |= 1 << bit;
        let tag32 = match tag {
            None => Some(TAG_KEY),
            Some(t) => i32::try_from(t).ok().filter(|&t| t != TAG_KEY),
        };
        let pair = match (u32::try_from(bytes), tag32) {
            (Ok(b), Some(t)) if b != BYTES_APART => (b, t),
            _ => {
                self.apart.push((place, bytes, tag));
                (BYTES_APART, 0)
            }
        };
        self.pairs.push(pair);
    }

    /// Takes `later`'s payloads, those of the `places` flow events that
    /// follow the `at` noted here, as many [`FlowPayloads::push`]es would:
    /// its bitmap shifted in a word at a time, its pairs copied on, its
    /// payloads kept apart moved on by `at` (a merge of ranges: no
    /// payload looked up one by one).
    fn append_shifted(&mut self, later: FlowPayloads, at: u32, places: u32) {
        let words = |places: u64| places.div_ceil(64) as usize;
        let (at64, places64) = (u64::from(at), u64::from(places));
        self.has.resize(words(at64), 0);
        self.has.resize(words(at64 + places64), 0);
        let (w0, shift) = ((at / 64) as usize, at % 64);
        for (i, &x) in later.has.iter().enumerate() {
            if let Some(w) = self.has.get_mut(w0 + i) {
                *w |= x << shift;
            }
            if shift > 0
                && let Some(w) = self.has.get_mut(w0 + i + 1)
            {
                *w |= x >> (64 - shift);
            }
        }
        self.pairs.extend_from_slice(&later.pairs);
        self.apart.extend(
            later
                .apart
                .iter()
                .map(|&(place, bytes, tag)| (place + at, bytes, tag)),
        );
    }

    /// Counts the payloads before each word, for [`FlowPayloads::get`].
    fn index(&mut self) {
        let mut n = 0u32;
        self.before = self
            .has
            .iter()
            .map(|w| {
                let b = n;
                n += w.count_ones();
                b
            })
            .collect();
    }

    /// The bytes and tag of `f` (a step that has them; indexed).
    fn get(&self, f: &HeldFlow) -> (u64, i64) {
        let (bytes, tag) = self.given(f.place());
        (bytes, tag.unwrap_or(i64::from(f.key)))
    }

    /// The bytes and tag (`None`: the flow's key) of the flow event at
    /// `place` as it gave them (a step that has them; indexed).
    fn given(&self, place: u32) -> (u64, Option<i64>) {
        let (w, bit) = ((place / 64) as usize, place % 64);
        let below = self.has.get(w).map_or(0, |&x| x & ((1u64 << bit) - 1));
        let i = self.before.get(w).map_or(0, |&b| b as usize) + below.count_ones() as usize;
        let Some(&(bytes, tag)) = self.pairs.get(i) else {
            return (0, None);
        };
        if bytes == BYTES_APART
            && let Ok(k) = self.apart.binary_search_by_key(&place, |a| a.0)
        {
            return (self.apart[k].1, self.apart[k].2);
        }
        let tag = (tag != TAG_KEY).then_some(i64::from(tag));
        (u64::from(bytes), tag)
    }
}

struct AsyncEv {
    pid: u32,
    key: u32,
    begin: bool,
    ts: i64,
    name: String,
    seq: u64,
}

/// The flow keys of one category whose ids are plain decimal numbers
/// from `base` on ([`Acc::flow_tables`]).
#[derive(Default)]
struct FlowTable {
    /// The id of `keys[0]`: 0, unless the category's first id was far
    /// above the keys so far.
    base: u64,
    /// Each id's key + 1 (0: none yet).
    keys: Vec<u32>,
}

/// No thread, in a table of threads by pid ([`known::ByPid`]).
const NO_THREAD: u32 = u32::MAX;

/// No group yet, in a table of each process's group ([`place_threads`]).
const NO_GROUP: u32 = u32::MAX;

/// Room a flow table leaves past twice its keys (and below its first id
/// when that is high).
const FLOW_TABLE_SLACK: u64 = 1024;

#[derive(Default)]
struct Acc {
    /// The threads by number, in order of first appearance; their ids are
    /// the keys of `thread_idx` and `num_thread_idx` ([`Acc::thread_keys`]),
    /// held once: every range of a read by ranges holds a record of each
    /// thread it meets.
    threads: Vec<ThreadAcc>,
    /// Threads whose process or thread id is a string.
    thread_idx: FxHashMap<(Ident<'static>, Ident<'static>), u32>,
    /// Threads whose process and thread ids are numbers (most).
    num_thread_idx: FxHashMap<(i64, i64), u32>,
    /// The threads' names and sort indices, by number.
    thread_metas: Metas,
    /// How many processes; their ids are the keys of `proc_idx` and
    /// `num_proc_idx` ([`Acc::proc_keys`]), by number.
    num_procs: usize,
    /// The processes' names and sort indices, by number.
    proc_metas: Metas,
    /// Processes whose id is a string.
    proc_idx: FxHashMap<Ident<'static>, u32>,
    /// Processes whose id is a number (most).
    num_proc_idx: FxHashMap<i64, u32>,
    /// Instants (time, thread or `u32::MAX` for a global one, type,
    /// value) and counter samples (time, thread, counter, value), packed a
    /// block at a time as they come ([`pack_instants`], [`pack_samples`]):
    /// some 10 bytes a sample of Extrae-like counters, from 24.
    instants: Staged<(i64, u32, u32, i64), EventBlock>,
    counters: Staged<(i64, u32, u32, f64), CounterBlock>,
    /// The shapes of the latest counter events and their counters in the
    /// builder: the next event of the same members finds its counters
    /// without naming its series or the builder's map.
    series: series::SeriesCache,
    flows: Vec<HeldFlow>,
    /// The bytes the events are taken from, (first, how many), where
    /// known: how far the read is, for the room of the threads' slices
    /// ([`Expect`]).
    reach: Option<(u64, u64)>,
    /// The flow events of the later ranges of a read by ranges
    /// ([`ranges`]), one vector each (their keys, threads and places the
    /// merged ones): kept apart rather than copied into `flows`, which
    /// would hold them twice for a while.
    flow_runs: Vec<Vec<HeldFlow>>,
    flow_payloads: FlowPayloads,
    flow_keys: FxHashMap<String, u32>,
    /// Flow keys whose id is a plain decimal number: per category, each
    /// id's key + 1 (0: none yet), for ids from the table's base up to
    /// about twice the keys so far past it (tools number their flows from
    /// 0 or 1: 4 bytes an id where a hash map takes some 50; a later range
    /// of a read by ranges starts high); ids beyond in `flow_num_keys` as
    /// (category, id). All keys are numbered in order of first appearance.
    flow_tables: Vec<FlowTable>,
    flow_num_keys: FxHashMap<(u32, u64), u32>,
    /// Flow keys so far.
    flow_count: u32,
    flow_cats: FxHashMap<String, u32>,
    asyncs: Vec<AsyncEv>,
    async_keys: FxHashMap<String, u32>,
    key_buf: String,
    ignored: HashMap<u8, u64>,
    missing_dur: (u64, Option<Position>),
    min_ts: i64,
    max_ts: i64,
    seq: u64,
    /// The last thread with numeric ids looked up: (pid, tid, thread).
    last_thread: Option<(i64, i64, u32)>,
    /// By pid: the last thread of that process looked up. A cache of
    /// `num_thread_idx`: at 65,536 threads its table (3 MB) missed the
    /// caches at every event and the lookup took a fifth of a one-core
    /// read; this takes 1 MB, read at one place.
    by_pid: known::ByPid<{ 1 << 24 }>,
    /// Every slice name and category seen and its state: the key is the
    /// name then the category, told apart by the name's length kept with
    /// the state. Interning and tagging a pair again took some 250
    /// instructions (two hash lookups, the category's tags, two substring
    /// searches for its class), and a cache of the last slice's pair missed
    /// where a rank's slices alternate (`compute`, `MPI_Bcast`).
    states_seen: FxHashMap<String, (usize, StateId)>,
    /// In the first pass of a stream ([`stream`]): where each thread's
    /// slices start, instead of the slices, instants, samples and flows.
    marks: Option<Box<stream::Marks>>,
    /// In one pipeline: the slice events held back from their threads'
    /// records, to be given to them on all threads ([`deferred`];
    /// [`Acc::give_held`] before the records are read).
    deferred: Option<Box<deferred::Deferred>>,
    /// In one pipeline on several threads: what the intake numbered since
    /// the parse's copy was brought up to date, and the copy
    /// ([`known`]).
    fresh: Option<Box<known::Fresh>>,
}

impl Acc {
    /// Where a slice event of `batch` is to be held back, and the batch's
    /// offset and [`Expect`] to hold it with: when the read holds them
    /// back ([`Acc::deferred`]) and has met [`deferred::MIN_THREADS`]
    /// threads (those held before are given to their threads first when
    /// they come from another batch or are many). `None`: the event goes
    /// into its thread's records now.
    fn hold(&mut self, batch: &Batch) -> Option<(&mut deferred::Deferred, (u64, Expect))> {
        let d = self.deferred.as_deref_mut()?;
        if self.threads.len() < deferred::MIN_THREADS {
            return None;
        }
        if !d.has_room(batch.base) {
            d.give(&mut self.threads);
        }
        Some((d, (batch.base, Expect::of_batch(self.reach, batch))))
    }

    /// Gives the slice events held back to their threads' records.
    fn give_held(&mut self) {
        if let Some(d) = self.deferred.as_deref_mut() {
            d.give(&mut self.threads);
        }
    }

    /// Interns the key made of `parts` in `map` without allocating on hits.
    fn key(map: &mut FxHashMap<String, u32>, buf: &mut String, parts: &[&str]) -> u32 {
        buf.clear();
        for p in parts {
            buf.push_str(p);
            buf.push('\u{1}');
        }
        if let Some(&k) = map.get(buf.as_str()) {
            return k;
        }
        let k = map.len() as u32;
        map.insert(buf.clone(), k);
        k
    }

    /// The number of the flow of category `cat` and id `id`, in order of
    /// first appearance: without building a string when the id is a plain
    /// decimal number (as most are).
    fn flow_key(&mut self, cat: &str, id: &str) -> u32 {
        if let Some(n) = plain_decimal(id) {
            return self.flow_key_number(cat, n);
        }
        self.key_buf.clear();
        self.key_buf.push_str(cat);
        self.key_buf.push('\u{1}');
        self.key_buf.push_str(id);
        self.flow_key_text()
    }

    /// The number of the flow of category `cat` whose id is the plain
    /// decimal number `n` ([`Acc::flow_key`]).
    fn flow_key_number(&mut self, cat: &str, n: u64) -> u32 {
        let c = self.flow_cat(cat);
        if let Some(k) = self.flow_number_get(c, n) {
            return k;
        }
        let next = self.flow_count;
        self.flow_count += 1;
        self.flow_number_put(c, n, next);
        next
    }

    /// The number of flow category `cat`.
    fn flow_cat(&mut self, cat: &str) -> u32 {
        match self.flow_cats.get(cat) {
            Some(&c) => c,
            None => {
                let c = self.flow_cats.len() as u32;
                self.flow_cats.insert(cat.to_string(), c);
                c
            }
        }
    }

    /// The key of the flow of category number `c` and plain decimal id
    /// `n`, if it has one.
    fn flow_number_get(&self, c: u32, n: u64) -> Option<u32> {
        if let Some(table) = self.flow_tables.get(c as usize)
            && let Some(&k) = n
                .checked_sub(table.base)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| table.keys.get(i))
            && k != 0
        {
            return Some(k - 1);
        }
        self.flow_num_keys.get(&(c, n)).copied()
    }

    /// Gives the flow of category number `c` and plain decimal id `n` (not
    /// numbered yet) the key `key`.
    fn flow_number_put(&mut self, c: u32, n: u64, key: u32) {
        if self.flow_tables.len() <= c as usize {
            self.flow_tables
                .resize_with(c as usize + 1, FlowTable::default);
        }
        let table = &mut self.flow_tables[c as usize];
        let room = 2 * u64::from(self.flow_count) + FLOW_TABLE_SLACK;
        if table.keys.is_empty() && n > room {
            // ids that start high (a range of a read by ranges): the table
            // starts a little below the first
            table.base = n - FLOW_TABLE_SLACK;
        }
        match n.checked_sub(table.base).filter(|&i| i <= room) {
            Some(i) => {
                let i = i as usize;
                if i >= table.keys.len() {
                    table.keys.resize(i + 1, 0);
                }
                table.keys[i] = key + 1;
            }
            None => {
                self.flow_num_keys.insert((c, n), key);
            }
        }
    }

    /// The number of the flow whose category and id (not a plain decimal
    /// number) `key_buf` holds, joined by U+0001 ([`Acc::flow_key`]).
    fn flow_key_text(&mut self) -> u32 {
        if let Some(&k) = self.flow_keys.get(self.key_buf.as_str()) {
            return k;
        }
        let next = self.flow_count;
        self.flow_count += 1;
        self.flow_keys.insert(self.key_buf.clone(), next);
        next
    }

    /// The number of the process `pid`, when it is known.
    fn proc_index(&self, pid: &Ident) -> Option<u32> {
        match pid {
            Ident::Num(n) => self.num_proc_idx.get(n),
            Ident::Str(_) => self.proc_idx.get(pid),
        }
        .copied()
    }

    fn proc_of(&mut self, pid: &Ident) -> u32 {
        if let Some(i) = self.proc_index(pid) {
            return i;
        }
        let i = self.num_procs as u32;
        self.num_procs += 1;
        match pid {
            Ident::Num(n) => self.num_proc_idx.insert(*n, i),
            Ident::Str(_) => self.proc_idx.insert(pid.owned(), i),
        };
        i
    }

    /// Each process's id, by number.
    fn proc_keys(&self) -> Vec<Ident<'static>> {
        let mut keys = vec![Ident::Num(0); self.num_procs];
        for (&n, &i) in &self.num_proc_idx {
            if let Some(k) = keys.get_mut(i as usize) {
                *k = Ident::Num(n);
            }
        }
        for (id, &i) in &self.proc_idx {
            if let Some(k) = keys.get_mut(i as usize) {
                *k = id.clone();
            }
        }
        keys
    }

    /// `f` of each thread's number and its process and thread ids.
    fn each_thread_ids(&self, mut f: impl FnMut(u32, &Ident, &Ident)) {
        for (&(p, t), &i) in &self.num_thread_idx {
            f(i, &Ident::Num(p), &Ident::Num(t));
        }
        for ((pid, tid), &i) in &self.thread_idx {
            f(i, pid, tid);
        }
    }

    /// Each thread's process (its number: a thread's process is numbered
    /// before it) and thread id, by number: half the room of
    /// [`Acc::thread_keys`] (1.5 MB at 65,536 threads, while the threads
    /// are placed, where a trace of many threads peaks).
    fn thread_procs_and_tids(&self) -> (Vec<u32>, Vec<Ident<'static>>) {
        let n = self.threads.len();
        let (mut procs, mut tids) = (vec![0; n], vec![Ident::Num(0); n]);
        self.each_thread_ids(|i, pid, tid| {
            if let (Some(p), Some(t)) = (procs.get_mut(i as usize), tids.get_mut(i as usize)) {
                *p = self.proc_index(pid).unwrap_or(0);
                *t = tid.owned();
            }
        });
        (procs, tids)
    }

    /// Each thread's process and thread id, by number.
    fn thread_keys(&self) -> Vec<(Ident<'static>, Ident<'static>)> {
        let mut keys = vec![(Ident::Num(0), Ident::Num(0)); self.threads.len()];
        self.each_thread_ids(|i, pid, tid| {
            if let Some(k) = keys.get_mut(i as usize) {
                *k = (pid.owned(), tid.owned());
            }
        });
        keys
    }

    /// The thread of an event: its `pid` and `tid` (the `pid` without
    /// one; 0 without either).
    fn thread_of_event(&mut self, ev: &Ev) -> u32 {
        if ev.thread != NO_THREAD {
            return ev.thread;
        }
        let (pid, tid) = ev.ids();
        self.thread_of(pid, tid)
    }

    fn thread_of(&mut self, pid: &Ident, tid: &Ident) -> u32 {
        let nums = numeric((pid, tid));
        if let (Some((p, t)), Some((lp, lt, i))) = (nums, self.last_thread)
            && (p, t) == (lp, lt)
        {
            return i;
        }
        if let Some((p, t)) = nums
            && let Some(ci) = self.by_pid.get((p, t))
        {
            self.last_thread = Some((p, t, ci));
            return ci;
        }
        let known = match nums {
            Some(k) => self.num_thread_idx.get(&k),
            None => self.thread_idx.get(&(pid.clone(), tid.clone())),
        };
        if let Some(&i) = known {
            if let Some(k) = nums {
                self.remember(k, i);
            }
            return i;
        }
        self.proc_of(pid);
        let i = self.threads.len() as u32;
        self.threads.push(ThreadAcc::default());
        match nums {
            Some(k) => {
                self.num_thread_idx.insert(k, i);
                self.remember(k, i);
                if let Some(f) = &mut self.fresh {
                    f.thread(k, i);
                }
            }
            None => {
                self.thread_idx.insert((pid.owned(), tid.owned()), i);
            }
        }
        i
    }

    /// Notes that thread `i` has the numeric ids `(p, t)`: the last
    /// thread looked up, and the last of process `p` where `by_pid` can
    /// take it.
    fn remember(&mut self, (p, t): (i64, i64), i: u32) {
        self.last_thread = Some((p, t, i));
        if let Some(slot) = self.by_pid.slot(p, self.threads.len()) {
            *slot = (t, i);
        }
    }

    /// The state of a slice named `name` in category `cat`: interned
    /// (its class from the category when new) and tagged with the
    /// category the first time the pair comes.
    fn state_of(&mut self, b: &mut TraceBuilder, name: &str, cat: &str) -> StateId {
        self.key_buf.clear();
        self.key_buf.push_str(name);
        self.key_buf.push_str(cat);
        if let Some(&(len, st)) = self.states_seen.get(self.key_buf.as_str())
            && len == name.len()
        {
            return st;
        }
        let st = b.states.intern(name, class_of(cat));
        b.states.tag(st, "cat", cat);
        self.states_seen
            .insert(self.key_buf.clone(), (name.len(), st));
        if let Some(f) = &mut self.fresh {
            f.state(&self.key_buf, name.len(), st);
        }
        st
    }

    /// The state of slice event `ev`: as its parse found it, or
    /// [`Acc::state_of`] its name and category.
    fn state_of_event(&mut self, b: &mut TraceBuilder, ev: &Ev) -> StateId {
        match ev.state {
            Some(st) => st,
            None => self.state_of(b, &ev.name, &ev.cat),
        }
    }
}

/// `t` as a number when it is written as one plainly (digits without a
/// leading zero, or `0`, up to 19 digits): two such texts are equal exactly
/// when their numbers are.
fn plain_decimal(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    digits_u64(b)
}

fn class_of(cat: &str) -> StateClass {
    // case-insensitive `contains` without a lower-case copy (once per event)
    let has = |word: &[u8]| {
        cat.as_bytes()
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word))
    };
    if has(b"idle") {
        StateClass::Idle
    } else if has(b"overhead") {
        StateClass::Overhead
    } else {
        StateClass::Busy
    }
}

/// A member's name in a counter event's `args`, borrowed from the file
/// unless it has escapes.
#[derive(serde::Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct MemberName<'a>(#[serde(borrow)] Cow<'a, str>);

/// A member of a counter event's `args`: a number (a sample), or anything
/// else (no sample).
enum CounterArg {
    Number(f64),
    Other,
}

impl<'de> serde::Deserialize<'de> for CounterArg {
    /// Read where it lies (as an untagged enum, each member was first
    /// copied into serde's buffered form).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Arg;
        impl<'de> serde::de::Visitor<'de> for Arg {
            type Value = CounterArg;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_f64<E>(self, x: f64) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Number(x))
            }
            fn visit_i64<E>(self, x: i64) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Number(x as f64))
            }
            fn visit_u64<E>(self, x: u64) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Number(x as f64))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Other)
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Other)
            }
            fn visit_unit<E>(self) -> std::result::Result<CounterArg, E> {
                Ok(CounterArg::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<CounterArg, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(CounterArg::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<CounterArg, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(CounterArg::Other)
            }
        }
        d.deserialize_any(Arg)
    }
}

/// The samples of a counter (`C`) event, each given to `each` with its
/// series' name: each numeric member of `args` is a series, named after
/// the event for the member `value`, `name.member` otherwise (with `[id]`
/// when the event has an id); in the order of the members' names, the
/// last of a name repeated. The members are read where they lie and the
/// names made in one buffer (with a `String` a member for its name, one
/// for its value and one for the series' name, a trace whose counter
/// events had 8 members each read at 72 MB/s). The readers give them
/// through a [`series::SeriesCache`]; this is what it is tested against.
#[cfg(test)]
fn counter_samples(ev: &Ev, each: &mut dyn FnMut(&str, f64)) {
    let Some(args) = ev.args else {
        return;
    };
    let mut name = String::with_capacity(ev.name.len() + 16);
    let mut fast = [("", None); fields::FAST_MEMBERS];
    if let Some(n) = fields::counter_members_fast(args, &mut fast) {
        // by name, stably, the last of a name kept (the map's order)
        let members = &mut fast[..n];
        members.sort_by(|a, b| a.0.cmp(b.0));
        for (i, &(k, v)) in members.iter().enumerate() {
            if let (Some(x), false) = (v, members.get(i + 1).is_some_and(|m| m.0 == k)) {
                series_sample(ev, k, x, &mut name, each);
            }
        }
        return;
    }
    counter_samples_serde(ev, args, &mut name, each);
}

/// A counter (`C`) event of `name`, `id` and `args` at time 0, for tests.
#[cfg(test)]
fn counter_event<'a>(name: &'a str, id: Option<&'a str>, args: &'a str) -> Ev<'a> {
    Ev {
        ph: b'C',
        name: Cow::Borrowed(name),
        cat: Cow::Borrowed(""),
        pid: None,
        tid: None,
        ts: Some(0),
        dur: None,
        id: id.map(Cow::Borrowed),
        scope: 0,
        args: Some(args),
        lite: LiteArgs::default(),
        off: 0,
        thread: NO_THREAD,
        state: None,
    }
}

/// [`counter_samples`] through serde, for any `args`.
fn counter_samples_serde(ev: &Ev, args: &str, name: &mut String, each: &mut dyn FnMut(&str, f64)) {
    let Ok(members) = serde_json::from_str::<BTreeMap<MemberName<'_>, CounterArg>>(args) else {
        return;
    };
    for (MemberName(k), v) in members {
        let CounterArg::Number(x) = v else {
            continue;
        };
        series_sample(ev, &k, x, name, each);
    }
}

/// The sample `x` of the member `k` of a counter event, given to `each`
/// with its series' name (made in `name`).
#[inline]
fn series_sample(ev: &Ev, k: &str, x: f64, name: &mut String, each: &mut dyn FnMut(&str, f64)) {
    series_name(ev, k, name);
    each(name, x);
}

/// The name of the series of member `k` of counter event `ev`, made in
/// `name`: the event's name for the member `value`, `name.member`
/// otherwise, with `[id]` when the event has an id.
fn series_name(ev: &Ev, k: &str, name: &mut String) {
    name.clear();
    name.push_str(&ev.name);
    if k != "value" {
        name.push('.');
        name.push_str(k);
    }
    if let Some(id) = ev.id.as_deref() {
        name.push('[');
        name.push_str(id);
        name.push(']');
    }
}

/// Whether an instant event is global (`s: "g"`; not for `n`), on no
/// thread.
fn is_global_instant(ev: &Ev) -> bool {
    ev.scope == b'g' && ev.ph != b'n'
}

fn intake(ev: &Ev, acc: &mut Acc, b: &mut TraceBuilder, batch: &Batch) -> Result<()> {
    acc.seq += 1;
    let seq = acc.seq;
    let pid = ev.pid.clone().unwrap_or(Ident::Num(0));
    let thread = |acc: &mut Acc| acc.thread_of_event(ev);
    if ev.ph != b'M'
        && let Some(ts) = ev.ts
    {
        acc.min_ts = acc.min_ts.min(ts);
        acc.max_ts = acc.max_ts.max(ts + ev.dur.unwrap_or(0));
    }
    let ts = ev.ts.unwrap_or(0);
    match ev.ph {
        b'B' => {
            let t = thread(acc);
            let st = acc.state_of_event(b, ev);
            match &mut acc.marks {
                Some(m) => m.slice(t, seq, ts),
                None => match acc.hold(batch) {
                    Some((d, at)) => d.be(t, ts, true, st, at),
                    None => acc.threads[t as usize].push_be(ts, true, st),
                },
            }
        }
        b'E' => {
            let t = thread(acc);
            match &mut acc.marks {
                Some(m) => m.slice(t, seq, ts),
                None => match acc.hold(batch) {
                    Some((d, at)) => d.be(t, ts, false, 0, at),
                    None => acc.threads[t as usize].push_be(ts, false, 0),
                },
            }
        }
        b'X' => {
            let t = thread(acc);
            let st = acc.state_of_event(b, ev);
            let dur = match ev.dur {
                Some(d) => d,
                None => {
                    acc.missing_dur.0 += 1;
                    acc.missing_dur.1.get_or_insert(batch.position(ev.off));
                    0
                }
            };
            match &mut acc.marks {
                Some(m) => m.slice(t, seq, ts),
                None => match acc.hold(batch) {
                    Some((d, at)) => d.x(t, ts, dur, st, at),
                    None => {
                        let expect = Expect::of_batch(acc.reach, batch);
                        acc.threads[t as usize].push_x(ts, dur, st, expect)
                    }
                },
            }
        }
        b'i' | b'I' | b'R' | b'n' | b'P' => {
            let loc = if is_global_instant(ev) {
                u32::MAX
            } else {
                thread(acc)
            };
            let kind = b.event_types.intern(&ev.name);
            let value = ev.lite.value.as_ref().and_then(|v| v.as_i64()).unwrap_or(0);
            match &mut acc.marks {
                Some(m) => m.instants.add(ts),
                None => acc.instants.push((ts, loc, kind, value), pack_instants),
            }
        }
        b'C' => {
            let t = thread(acc);
            let (marks, counters) = (&mut acc.marks, &mut acc.counters);
            acc.series.samples(
                ev,
                b,
                |b, name| b.counter_def(name, ""),
                |_, c, x| match marks {
                    Some(m) => m.samples.add(ts),
                    None => counters.push((ts, t, c, x), pack_samples),
                },
            );
        }
        b'M' => {
            let name = ev.lite.name.as_ref().map(|t| &t.0);
            let sort = ev.lite.sort_index;
            match ev.name.as_ref() {
                "process_name" => {
                    let p = acc.proc_of(&pid);
                    if let Some(name) = name {
                        acc.proc_metas.set_name(p, name);
                    }
                }
                "process_sort_index" => {
                    let p = acc.proc_of(&pid);
                    acc.proc_metas.set_sort(p, sort);
                }
                "thread_name" => {
                    let t = thread(acc);
                    if let Some(name) = name {
                        acc.thread_metas.set_name(t, name);
                    }
                }
                "thread_sort_index" => {
                    let t = thread(acc);
                    acc.thread_metas.set_sort(t, sort);
                }
                _ => *acc.ignored.entry(b'M').or_default() += 1,
            }
        }
        b's' | b't' | b'f' => {
            let t = thread(acc);
            if let Some(m) = &mut acc.marks {
                // the stream's second pass matches them
                m.flow(seq, ts);
                return Ok(());
            }
            let id = ev.id.as_deref().unwrap_or("");
            let key = acc.flow_key(&ev.cat, id);
            let bytes = ev.lite.bytes.unwrap_or(0);
            let ph = match ev.ph {
                b's' => 0,
                b't' => 1,
                _ => 2,
            };
            let place = acc.flows.len();
            if place >= MAX_FLOWS {
                return Err(Error::parse(
                    &b.source,
                    batch.position(ev.off),
                    format!(
                        "more than {MAX_FLOWS} flow events, more than one pass \
                         holds: read the trace with --stream"
                    ),
                ));
            }
            let place = place as u32;
            let payload = (ph != 2).then_some((bytes, ev.lite.tag));
            acc.flow_payloads.push(place, payload);
            acc.flows.push(HeldFlow {
                ts,
                key,
                thread: t,
                place_ph: (place << 2) | ph,
            });
        }
        b'b' | b'e' | b'S' | b'F' => {
            let p = acc.proc_of(&pid);
            let id = ev.id.as_deref().unwrap_or("");
            let pkey = p.to_string();
            let key = Acc::key(&mut acc.async_keys, &mut acc.key_buf, &[&pkey, &ev.cat, id]);
            acc.asyncs.push(AsyncEv {
                pid: p,
                key,
                begin: ev.ph == b'b' || ev.ph == b'S',
                ts,
                name: ev.name.to_string(),
                seq,
            });
        }
        other => *acc.ignored.entry(other).or_default() += 1,
    }
    Ok(())
}

/// Reads the events of the file at `path` in file order, a batch at a
/// time: each batch is cut into [`PIPELINE_CHUNKS`] runs of events, and
/// while one run's events go to `take` one by one (in file order, on one
/// thread), the next run is parsed in parallel by the others. The splitter
/// reads up to two batches ahead meanwhile, beside the whole batch's work.
/// The serial chain of a batch is then its intake alone, where it was a
/// parse (of all of its events, every thread waiting at its end) and then
/// the intake. With `intake` [`Intake::Inline`] each event is taken as it
/// is parsed. The splitter at the end (what it found past the last event).
fn for_each_event(
    path: &Path,
    split: Splitter,
    intake: Intake,
    mut take: impl Taker,
) -> Result<Splitter> {
    let mut ahead = ReadAhead::new(split);
    let mut all = Vec::new();
    while let Some(batch) = ahead.next() {
        let batch = batch?;
        all.clear();
        all.extend(0..batch.spans.len());
        // (held by this batch's parse alone: the next is brought up to
        // date in place; only a pipelined parse looks anything up)
        let known = (intake == Intake::Pipelined)
            .then(|| take.known())
            .flatten();
        let ((), taken) = rayon::join(
            || {
                let _p = phases::span("chrome: split (beside the rest)");
                ahead.top_up();
                ahead.top_up();
            },
            || {
                take_batch(
                    path,
                    &batch,
                    &all,
                    intake,
                    known.as_deref(),
                    &mut |_, ev| take.take(ev, &batch),
                )
            },
        );
        taken.map_err(|(_, e)| e)?;
        ahead.split.recycle(batch.data);
    }
    Ok(ahead.split)
}

/// What takes a pipeline's events, one at a time in file order
/// ([`for_each_event`]).
trait Taker: Send {
    fn take(&mut self, ev: &Ev, batch: &Batch) -> Result<()>;

    /// Between batches, no parse under way: what the next batch's parse
    /// may look up for the intake, on all threads ([`known`]). Asked only
    /// where the parse is pipelined ([`Intake::Pipelined`]).
    fn known(&mut self) -> Option<Arc<known::Known>> {
        None
    }
}

impl<F: FnMut(&Ev, &Batch) -> Result<()> + Send> Taker for F {
    fn take(&mut self, ev: &Ev, batch: &Batch) -> Result<()> {
        self(ev, batch)
    }
}

/// `f` as a [`Taker`] (a closure's signature is inferred for any
/// lifetimes only where it is passed as such a function).
fn taker<F: FnMut(&Ev, &Batch) -> Result<()> + Send>(f: F) -> F {
    f
}

/// The [`intake`] of events into `acc` and `b`, whose parse looks up what
/// `acc` had numbered where it keeps a log of it ([`Acc::fresh`]).
struct IntakeInto<'a> {
    acc: &'a mut Acc,
    b: &'a mut TraceBuilder,
}

/// `acc` keeps its log of what it numbers from the first time a pipelined
/// parse asks for it ([`Taker::known`], before the first batch) until the
/// intake is dropped.
impl Drop for IntakeInto<'_> {
    fn drop(&mut self) {
        self.acc.fresh = None;
    }
}

impl Taker for IntakeInto<'_> {
    fn take(&mut self, ev: &Ev, batch: &Batch) -> Result<()> {
        intake(ev, self.acc, self.b, batch)
    }

    fn known(&mut self) -> Option<Arc<known::Known>> {
        Some(self.acc.fresh.get_or_insert_with(Box::default).known())
    }
}

/// The events `which` (indices of `batch.spans`, increasing) of `batch`
/// to `take` in that order, with their index, each run's intake
/// overlapping the parse of the next run ([`for_each_event`]), or each as
/// soon as it is parsed ([`Intake::Inline`]). Their threads and states
/// looked up in `known`, where given, as they are parsed. An error comes
/// with the index of the event it was met at.
fn take_batch(
    path: &Path,
    batch: &Batch,
    which: &[usize],
    intake: Intake,
    known: Option<&known::Known>,
    take: &mut (impl FnMut(usize, &Ev) -> Result<()> + Send),
) -> std::result::Result<(), (usize, Error)> {
    let parse_one = |k: usize| {
        let (s, e) = batch.spans[k];
        parse_event(&batch.data[s as usize..e as usize], s as usize)
    };
    // event `k` parsed (or its fault, named with its place) to `take`,
    // where it lies: an event is some 280 bytes, and moving it by value
    // (out of the parsed run, through the result, into `take`) copied it
    // several times (12 % of the samples of a 708 MB read of 65,536
    // threads on two threads, whose intake holds the read up)
    fn take_one(
        path: &Path,
        batch: &Batch,
        k: usize,
        ev: &std::result::Result<Ev, String>,
        take: &mut impl FnMut(usize, &Ev) -> Result<()>,
    ) -> std::result::Result<(), (usize, Error)> {
        match ev {
            Ok(ev) => take(k, ev).map_err(|e| (k, e)),
            Err(msg) => {
                let pos = batch.position(batch.spans[k].0 as usize);
                Err((k, Error::parse(path, pos, msg.clone())))
            }
        }
    }
    if intake == Intake::Inline {
        let _p = phases::span("chrome: parse and intake (one thread)");
        for &k in which {
            take_one(path, batch, k, &parse_one(k), take)?;
        }
        return Ok(());
    }
    let runs = pipeline_runs(which.len());
    let parse = |r: &std::ops::Range<usize>| -> Vec<std::result::Result<Ev, String>> {
        match known {
            None => which[r.clone()].par_iter().map(|&k| parse_one(k)).collect(),
            Some(known) => which[r.clone()]
                .par_iter()
                .map_init(String::new, |buf, &k| {
                    let mut ev = parse_one(k);
                    if let Ok(ev) = &mut ev {
                        known.resolve(ev, buf);
                    }
                    ev
                })
                .collect(),
        }
    };
    let mut parsed = parse(&runs[0]);
    for (j, run) in runs.iter().enumerate() {
        let (taken, next) = rayon::join(
            || -> std::result::Result<(), (usize, Error)> {
                let _p = phases::span("chrome: intake (one thread)");
                for (&k, ev) in which[run.clone()].iter().zip(&parsed) {
                    take_one(path, batch, k, ev, take)?;
                }
                Ok(())
            },
            || runs.get(j + 1).map(parse),
        );
        taken?;
        parsed = next.unwrap_or_default();
    }
    Ok(())
}

/// How a pipeline's events reach its intake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intake {
    /// A run of events is parsed by all threads while the run before is
    /// taken, on one thread.
    Pipelined,
    /// Each event is taken as soon as it is parsed, on one thread, while
    /// it is in the cache: the pipeline's parsed events (some 280 bytes
    /// each) were written out and read back, and its intake waited on
    /// memory for them (on one thread the read took 1.09× as long, 512
    /// threads, 241 MB).
    Inline,
}

impl Intake {
    /// Inline on one thread, pipelined on more.
    fn for_threads() -> Self {
        if rayon::current_num_threads() == 1 {
            Intake::Inline
        } else {
            Intake::Pipelined
        }
    }
}

/// Runs of a batch's events in [`for_each_event`]'s pipeline (at most
/// this many).
const PIPELINE_CHUNKS: usize = 8;

/// The runs of `n` events: up to [`PIPELINE_CHUNKS`] of about equal
/// length, none shorter than 256 events unless there is one (the empty
/// run when `n` is 0).
fn pipeline_runs(n: usize) -> Vec<std::ops::Range<usize>> {
    let k = (n / 256).clamp(1, PIPELINE_CHUNKS);
    let per = n.div_ceil(k).max(1);
    let mut runs: Vec<_> = (0..n).step_by(per).map(|a| a..(a + per).min(n)).collect();
    if runs.is_empty() {
        runs.push(0..0);
    }
    runs
}

/// The repairs and ignored events met while the events were taken: the
/// damaged input, the file cut short, `X` events without a duration, the
/// phases not shown.
fn report_intake(
    acc: &Acc,
    b: &mut TraceBuilder,
    path: &Path,
    damage: &input::DamageHandle,
    truncated: Option<&Truncation>,
) -> Result<()> {
    damage.report(&mut b.diagnostics, path, "events")?;
    if let Some(t) = truncated.cloned() {
        b.diagnostics.repair("truncated-file", path, t.pos, 1, || {
            format!(
                "the file ends before the event array is closed; {} byte(s) after the last complete event ignored",
                t.bytes
            )
        })?;
    }
    if acc.missing_dur.0 > 0 {
        let n = acc.missing_dur.0;
        b.diagnostics.repair(
            "missing-duration",
            path,
            acc.missing_dur.1.unwrap_or_default(),
            n,
            || format!("{n} complete ('X') event(s) without \"dur\"; taken as empty"),
        )?;
    }
    let mut ignored: Vec<_> = acc.ignored.iter().map(|(k, v)| (*k, *v)).collect();
    ignored.sort_unstable();
    for (ph, n) in ignored {
        b.ignore(&format!("Chrome '{}' events", char::from(ph)), n);
    }
    Ok(())
}

/// Reads a Chrome trace.
///
/// A plain file of at least [`ranges::MIN_RANGE_BYTES`] a thread is cut
/// into one range of events per thread, read side by side and merged
/// ([`ranges`]); otherwise (one thread, gzip, a file that cannot be cut)
/// its events are read in file order by one pipeline. Both give the same
/// model.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    read_in(path, opts, None)
}

/// [`read`], by `ranges` ranges when given (1: one pipeline), by one a
/// thread otherwise.
fn read_in(path: &Path, opts: &ReadOptions, ranges: Option<usize>) -> Result<Trace> {
    read_with(path, opts, ranges, None)
}

/// [`read_in`], one pipeline reading batches of about `batch_bytes` where
/// given.
fn read_with(
    path: &Path,
    opts: &ReadOptions,
    ranges: Option<usize>,
    batch_bytes: Option<usize>,
) -> Result<Trace> {
    let inp = input::open(path)?;
    let damage = inp.damage.clone();
    let n = ranges.unwrap_or_else(|| ranges::count(path, &inp));
    if let Some((acc, mut b, truncated)) = ranges::read(path, opts, &inp, n)? {
        report_intake(&acc, &mut b, path, &damage, truncated.as_ref())?;
        return assemble(acc, b, path, opts);
    }
    let mut b = builder(path, opts);
    let mut acc = Acc::new(None);
    acc.reach = (!inp.compressed).then_some((0, inp.file_len));
    acc.deferred = Some(Box::new(deferred::Deferred::new()));
    let events = phases::span("chrome: events (split, parse, intake)");
    let mut split = Splitter::new(path, inp.reader);
    if let Some(n) = batch_bytes {
        split = split.with_batch_bytes(n);
    }
    let split = for_each_event(
        path,
        split,
        Intake::for_threads(),
        IntakeInto {
            acc: &mut acc,
            b: &mut b,
        },
    )?;
    acc.give_held();
    drop(events);
    report_intake(&acc, &mut b, path, &damage, split.truncated.as_ref())?;
    // its buffers (3 MB) are done with, before the threads are placed
    drop(split);
    assemble(acc, b, path, opts)
}

/// How many event objects the Chrome trace at `path` holds, as the one
/// pipeline's splitter finds them (nothing parsed), on the threads it has:
/// for the readers bench. That splitter's chain is what a read of a trace
/// of many threads on many cores waits on.
#[doc(hidden)]
pub fn split_events(path: &Path) -> Result<u64> {
    let inp = input::open(path)?;
    let mut split = Splitter::new(path, inp.reader);
    let mut events = 0;
    while let Some(batch) = split.next_batch()? {
        events += batch.spans.len() as u64;
        split.recycle(batch.data);
    }
    Ok(events)
}

/// The builder of a Chrome trace's model.
fn builder(path: &Path, opts: &ReadOptions) -> TraceBuilder {
    TraceBuilder::new(
        Format::ChromeJson,
        path,
        TimeUnit::microseconds(),
        opts.strict,
    )
}

impl Acc {
    /// An accumulator before the first event (with `marks` for a stream's
    /// first pass).
    fn new(marks: Option<Box<stream::Marks>>) -> Acc {
        Acc {
            min_ts: i64::MAX,
            max_ts: i64::MIN,
            marks,
            ..Default::default()
        }
    }

    /// The time all others are relative to: the earliest event's (0 when
    /// none has a time).
    fn origin(&self) -> i64 {
        if self.min_ts == i64::MAX {
            0
        } else {
            self.min_ts
        }
    }

    /// The end of the last slice or event, absolute.
    fn end_abs(&self) -> i64 {
        self.max_ts.max(self.origin())
    }
}

/// The threads' locations in the model's order (processes by (sort index,
/// pid), threads by (sort index, tid)), from each thread's process and tid
/// ([`Acc::thread_procs_and_tids`]): each thread's location, and each
/// process's group so far.
fn place_threads(
    acc: &Acc,
    b: &mut TraceBuilder,
    (proc_of, tids): (Vec<u32>, Vec<Ident<'static>>),
    pids: &[Ident<'static>],
) -> (Vec<LocId>, Vec<u32>) {
    let mut order: Vec<u32> = (0..acc.threads.len() as u32).collect();
    let proc_key = |p: u32| {
        let sort = acc.proc_metas.sort(p);
        (sort.unwrap_or(i64::MAX), pids.get(p as usize))
    };
    let thread_sort = |t: u32| acc.thread_metas.sort(t).unwrap_or(i64::MAX);
    order.sort_by(|&x, &y| {
        let (tx, ty) = (&tids[x as usize], &tids[y as usize]);
        let kx = proc_key(proc_of[x as usize]);
        let ky = proc_key(proc_of[y as usize]);
        kx.cmp(&ky)
            .then(thread_sort(x).cmp(&thread_sort(y)))
            .then(tx.cmp(ty))
    });
    let mut group_of_proc = vec![NO_GROUP; acc.num_procs];
    let mut loc_of_thread = vec![0 as LocId; acc.threads.len()];
    // into lists of their exact size
    b.locations.locations.reserve_exact(order.len());
    b.locations.groups.reserve_exact(acc.num_procs);
    for &t in &order {
        let tid = &tids[t as usize];
        let p = proc_of[t as usize];
        let g = group_of(&mut group_of_proc, p, || {
            let name = process_name(acc, pids, p);
            b.locations.add_group(name, GroupKind::Process, None)
        });
        // in place where it fits (24 bytes), with no allocation
        let name = match acc.thread_metas.name(t) {
            Some(name) => CompactString::from(name),
            None => format_compact!("tid {tid}"),
        };
        let ext = match tid {
            Ident::Num(n) => *n,
            Ident::Str(_) => t as i64,
        };
        loc_of_thread[t as usize] = b.locations.add(name, LocationKind::Thread, Some(g), ext);
    }
    (loc_of_thread, group_of_proc)
}

/// The name of process `p` (`pids`: the processes' ids by number): its
/// metadata's, else its id's.
fn process_name(acc: &Acc, pids: &[Ident<'static>], p: u32) -> CompactString {
    match acc.proc_metas.name(p) {
        Some(name) => CompactString::from(name),
        None => match pids.get(p as usize) {
            Some(pid) => format_compact!("pid {pid}"),
            None => CompactString::from("pid "),
        },
    }
}

/// The group of process `p` in `groups` (by process, [`NO_GROUP`] for
/// none yet), made by `make` the first time (a table of 256 KiB at 65,536
/// processes, where a map took 1.2 MB while the threads were placed).
fn group_of(groups: &mut [u32], p: u32, make: impl FnOnce() -> u32) -> u32 {
    match groups.get(p as usize) {
        Some(&g) if g != NO_GROUP => g,
        _ => {
            let g = make();
            if let Some(slot) = groups.get_mut(p as usize) {
                *slot = g;
            }
            g
        }
    }
}

/// Repairs of begins and ends, counted over every thread and async slice.
#[derive(Debug, Default, Clone, Copy)]
struct Nesting {
    /// Ends (`E` or async `e`) without a begin.
    unmatched_end: u64,
    /// Begins never ended (closed at the end of the trace).
    unclosed: u64,
    /// Slices clipped to their enclosing slice.
    clipped: u64,
}

impl Nesting {
    fn add(&mut self, o: &Nesting) {
        self.unmatched_end += o.unmatched_end;
        self.unclosed += o.unclosed;
        self.clipped += o.clipped;
    }

    fn report(&self, b: &mut TraceBuilder, src: &Path) -> Result<()> {
        let Nesting {
            unmatched_end,
            unclosed,
            clipped,
        } = *self;
        b.diagnostics.repair(
            "unmatched-end",
            src,
            Position::none(),
            unmatched_end,
            || {
                format!(
                    "{unmatched_end} end event(s) ('E' or async 'e') without a matching begin; ignored"
                )
            },
        )?;
        b.diagnostics
            .repair("unclosed-begin", src, Position::none(), unclosed, || {
                format!("{unclosed} begin event(s) never ended; closed at the end of the trace")
            })?;
        b.diagnostics
            .repair("improper-nesting", src, Position::none(), clipped, || {
                format!("{clipped} slice(s) end after their enclosing slice; clipped to it")
            })
    }
}

/// Reports the flow events that made no message.
fn report_orphans(b: &mut TraceBuilder, src: &Path, orphans: u64) -> Result<()> {
    b.diagnostics.repair("unterminated-flow", src, Position::none(), orphans, || {
        format!("{orphans} flow event(s) without a start ('s') or a finish ('f'); no message for them")
    })
}

/// The async slices, matched by process, category and id and packed into
/// lanes, a location each (added to `b` after the threads'): the lanes'
/// intervals `(location, start, end, state)`, each lane's in time order.
fn pack_async(
    acc: &mut Acc,
    b: &mut TraceBuilder,
    group_of_proc: &mut [u32],
    pids: &[Ident<'static>],
    nesting: &mut Nesting,
) -> Vec<(LocId, Time, Time, StateId)> {
    let origin = acc.origin();
    let end_abs = acc.end_abs();
    let rel = |t: i64| -> Time { (t - origin).max(0) as Time };
    let mut intervals = Vec::new();
    // async slices: per process and name, packed into lanes
    acc.asyncs.sort_by_key(|a| (a.key, a.ts, a.seq));
    let mut async_slices: Vec<(u32, String, i64, i64)> = Vec::new();
    let mut i = 0;
    while i < acc.asyncs.len() {
        let key = acc.asyncs[i].key;
        // open begins: all of them in order (closed ones marked), and per
        // name the positions of its open ones: an end by name closes the
        // newest of its name, an end without a name the newest of all —
        // O(1) amortised however deep the stack
        let mut open: Vec<(i64, String, bool)> = Vec::new();
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        while i < acc.asyncs.len() && acc.asyncs[i].key == key {
            let a = &acc.asyncs[i];
            if a.begin {
                by_name.entry(a.name.clone()).or_default().push(open.len());
                open.push((a.ts, a.name.clone(), true));
            } else {
                let k = if a.name.is_empty() {
                    while open.last().is_some_and(|o| !o.2) {
                        open.pop();
                    }
                    open.len().checked_sub(1).inspect(|&k| {
                        if let Some(v) = by_name.get_mut(&open[k].1) {
                            v.pop();
                        }
                    })
                } else {
                    by_name.get_mut(&a.name).and_then(|v| v.pop())
                };
                match k {
                    Some(k) => {
                        open[k].2 = false;
                        async_slices.push((a.pid, open[k].1.clone(), open[k].0, a.ts));
                    }
                    None => nesting.unmatched_end += 1,
                }
            }
            i += 1;
        }
        let pid = acc.asyncs[i - 1].pid;
        for (bt, name, still) in open {
            if still {
                nesting.unclosed += 1;
                async_slices.push((pid, name, bt, end_abs));
            }
        }
    }
    async_slices.sort_by(|a, b| (a.0, &a.1, a.2, b.3).cmp(&(b.0, &b.1, b.2, a.3)));
    let mut j = 0;
    while j < async_slices.len() {
        let (pid, name) = (async_slices[j].0, async_slices[j].1.clone());
        let g = group_of(group_of_proc, pid, || {
            let n = process_name(acc, pids, pid);
            b.locations.add_group(n, GroupKind::Process, None)
        });
        let state = b.states.intern(&name, StateClass::Busy);
        let mut lanes: Vec<(LocId, i64)> = Vec::new();
        // first fit by lane number in O(log lanes): lanes still busy in a
        // heap by their end, lanes free at this start in a set by number
        let mut busy: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
        let mut free: BTreeSet<usize> = BTreeSet::new();
        while j < async_slices.len() && async_slices[j].0 == pid && async_slices[j].1 == name {
            let (_, _, s, e) = async_slices[j];
            while let Some(&Reverse((end, k))) = busy.peek() {
                if end > s {
                    break;
                }
                busy.pop();
                free.insert(k);
            }
            let lane = match free.pop_first() {
                Some(k) => k,
                None => {
                    let lname = if lanes.is_empty() {
                        name.clone()
                    } else {
                        format!("{name} ({})", lanes.len())
                    };
                    let l = b.locations.add(lname, LocationKind::Async, Some(g), -1);
                    lanes.push((l, i64::MIN));
                    lanes.len() - 1
                }
            };
            lanes[lane].1 = e;
            busy.push(Reverse((e, lane)));
            intervals.push((lanes[lane].0, rel(s), rel(e), state));
            j += 1;
        }
    }

    intervals
}

/// Adds each thread's flat timeline to `b` at its location: its `B`/`E`
/// matched, flattened with its `X` slices (times relative to `origin`;
/// slices still open end at `end_abs`). The threads of a group, holding
/// about `group_bytes` of records together, are flattened in parallel,
/// in runs of consecutive threads, each run in one task with one buffer:
/// a busy thread ([`GROUPED_THREAD`] intervals or more) becomes a block of
/// its own (no growth slack, no location column), the run's quiet threads
/// one block of records. Each location's intervals come from its one
/// thread, so the model does not depend on the grouping. Each group's
/// records leave as its intervals come, and leave the process after each
/// group once a sixteenth of all, and at least 4 MiB, is freed: the
/// threads' chunks of slices are small and interleaved in the heap, so
/// glibc keeps them until given back (a trace of 8 threads of 150,000
/// slices each held 16 MB of freed chunks beside the new blocks when
/// they left every 16 MiB, 1.41x its model at the peak against 1.32x).
fn add_threads(
    threads: &mut [ThreadAcc],
    b: &mut TraceBuilder,
    loc_of_thread: &[LocId],
    (origin, end_abs): (i64, i64),
    group_bytes: usize,
    nesting: &mut Nesting,
) {
    let tasks = 4 * rayon::current_num_threads().max(1);
    // (at most 16 times, and each time 4 MiB or more: a trim walks every
    // arena, 13 ms at 16 threads)
    let every = (threads.iter().map(ThreadAcc::record_bytes).sum::<usize>() / 16).max(4 << 20);
    let mut freed = 0usize;
    let mut t0 = 0;
    while t0 < threads.len() {
        let mut t1 = t0;
        let mut bytes = 0;
        while t1 < threads.len() && (t1 == t0 || bytes < group_bytes) {
            bytes += threads[t1].record_bytes();
            t1 += 1;
        }
        let run = (t1 - t0).div_ceil(tasks).max(1);
        let done: Vec<(Vec<IntervalBlock>, Nesting)> = threads[t0..t1]
            .par_chunks_mut(run)
            .zip(loc_of_thread[t0..t1].par_chunks(run))
            .map(|(ths, locs)| {
                let mut blocks = Vec::new();
                // the quiet threads' intervals, one after the other, and
                // each one's (location, intervals)
                let mut quiet: Vec<(Time, Time, StateId)> = Vec::new();
                let mut runs: Vec<(LocId, u32)> = Vec::new();
                let mut nesting = Nesting::default();
                for (ta, &loc) in ths.iter_mut().zip(locs) {
                    if ta.slices.len() >= GROUPED_THREAD
                        && let Some((block, n)) = ta.flatten_block(loc, origin)
                    {
                        nesting.add(&n);
                        blocks.extend(block);
                        continue;
                    }
                    let at = quiet.len();
                    nesting.add(&ta.flatten(origin, end_abs, &mut quiet));
                    let n = quiet.len() - at;
                    if n >= GROUPED_THREAD {
                        blocks.push(IntervalBlock::of_location(loc, &quiet[at..]));
                        quiet.truncate(at);
                    } else if n > 0 {
                        runs.push((loc, n as u32));
                    }
                }
                // as runs of their threads (12 bytes a record, where
                // packed records take 16)
                if !quiet.is_empty() {
                    blocks.push(IntervalBlock::of_flat_runs(&runs, &quiet));
                }
                (blocks, nesting)
            })
            .collect();
        for (blocks, n) in done {
            nesting.add(&n);
            for block in blocks {
                b.add_interval_block(block);
            }
        }
        freed += bytes;
        if freed >= every {
            crate::memory::return_freed_memory();
            freed = 0;
        }
        t0 = t1;
    }
}

/// A run of flows is shrunk to what is left of it once this many were
/// paired since it last was, or a quarter of what was left then if fewer,
/// but at least [`SHRINK_FLOWS_MIN`] ([`add_messages`]).
const SHRINK_FLOWS: usize = 1 << 16;
const SHRINK_FLOWS_MIN: usize = 1 << 12;

/// Where the flows are several runs (a read by ranges), what their
/// shrinking frees is given back to the system every this many bytes, or
/// every [`MESSAGES_TRIMS`]th of the flows if more. Unreturned, it stayed
/// resident beside the messages: a 241 MB trace of 512 threads (19 MB of
/// flows) read by 16 ranges peaked 18 MiB above its 57 MiB in pairing
/// them, 1.62× its model.
const MESSAGES_TRIM_BYTES: usize = 4 << 20;
const MESSAGES_TRIMS: usize = 8;

/// The messages of the flows, each step to the next per (category, id),
/// the flows freed as they go: how many steps had no other end.
fn add_messages(
    runs: Vec<Vec<HeldFlow>>,
    payloads: &FlowPayloads,
    b: &mut TraceBuilder,
    loc_of_thread: &[LocId],
    rel: impl Fn(i64) -> Time + Sync,
) -> u64 {
    let at = b.messages.len();
    let orphans = pair_flows(runs, (payloads, loc_of_thread), b, &rel, ROUND_FLOWS);
    // paired from the highest keys down, the messages come in about the
    // reverse of the order in which their flows were first met (which is
    // often the order of their send times): turned round, the builder's
    // sort by send time finds them nearly sorted and sorts them in
    // chunks on every thread, where in reverse it sorted them whole, with
    // a first partition on one thread
    crate::model::nearly_sorted::par_reverse(&mut b.messages[at..]);
    orphans
}

/// The flows paired a round at a time, from the highest keys down: each
/// round at least this many flows (at most [`ROUNDS`] rounds), after which
/// the runs are cut to what is left and shrunk (finer rounds free the
/// flows sooner). A round's keys are cut into pieces (4 a pool thread),
/// each paired on a thread of its own into room at the end of the
/// messages, the gaps between them closed after.
const ROUND_FLOWS: usize = 1 << 14;
const ROUNDS: usize = 64;

/// [`add_messages`] in rounds of at least `round_flows` flows.
fn pair_flows(
    runs: Vec<Vec<HeldFlow>>,
    (payloads, loc_of_thread): (&FlowPayloads, &[LocId]),
    b: &mut TraceBuilder,
    rel: &(impl Fn(i64) -> Time + Sync),
    round_flows: usize,
) -> u64 {
    let mut runs: Vec<Vec<HeldFlow>> = runs.into_iter().filter(|r| !r.is_empty()).collect();
    // the place in the file makes the order total (a sort in place gives
    // the one order); a read by ranges has a vector per range, each sorted
    // on its own, and a key's flows are gathered from all
    runs.par_iter_mut()
        .for_each(|r| r.sort_unstable_by_key(|f| (f.key, f.ts, f.place_ph)));
    // a message per step at most, in one allocation; the keys are taken
    // from the last, the flows freed as they go (the builder orders the
    // messages itself)
    let steps = runs.iter().flatten().filter(|f| f.ph() != b's').count();
    b.messages.reserve_exact(steps);
    let total: usize = runs.iter().map(Vec::len).sum();
    // the pieces' bounds, keys from 0 up, a round's pieces together (on
    // one thread one piece a round, paired into the messages in place)
    let threads = rayon::current_num_threads().max(1);
    let rounds = (total / round_flows.max(1)).clamp(1, ROUNDS);
    let per_round = if threads == 1 { 1 } else { 4 * threads };
    let bounds = key_bounds(&runs, rounds * per_round);
    let mut orphans = 0u64;
    let mut freed: Vec<usize> = runs.iter().map(Vec::len).collect();
    // a range's run is small enough to lie in an arena, where what its
    // shrinking frees stays resident beside the messages (one vector,
    // taken whole: it cannot reuse it) until given back; one pipeline's
    // run has a mapping of its own, which shrinks in place
    let held = total * std::mem::size_of::<HeldFlow>();
    let mut give_back = (runs.len() > 1)
        .then(|| crate::memory::GiveBack::every((held / MESSAGES_TRIMS).max(MESSAGES_TRIM_BYTES)));
    let pieces = bounds.len() - 1;
    let mut hi_piece = pieces;
    while hi_piece > 0 {
        let lo_piece = hi_piece.saturating_sub(per_round);
        let slices = |k0: u64, k1: u64| -> Vec<&[HeldFlow]> {
            runs.iter()
                .map(|r| {
                    let a = r.partition_point(|f| u64::from(f.key) < k0);
                    let z = r.partition_point(|f| u64::from(f.key) < k1);
                    &r[a..z]
                })
                .collect()
        };
        // the round's pieces from the highest keys down, as one thread
        // takes them, each paired into room of its own at the messages'
        // end (a message per step at most), the gaps closed after
        let parts: Vec<Vec<&[HeldFlow]>> = (lo_piece..hi_piece)
            .rev()
            .map(|p| slices(bounds[p], bounds[p + 1]))
            .collect();
        let room: Vec<usize> = parts
            .par_iter()
            .map(|part| {
                part.iter()
                    .flat_map(|r| r.iter())
                    .filter(|f| f.ph() != b's')
                    .count()
            })
            .collect();
        // the pieces write into the list's spare room, each into its own
        // part of it, on their own threads: its pages are first touched
        // there, not filled on this thread before (a third of the pairing
        // of a 241 MB trace's 470,000 messages on one thread)
        let at = b.messages.len();
        let want: usize = room.iter().sum();
        b.messages.reserve(want);
        let mut rest = &mut b.messages.spare_capacity_mut()[..want];
        let mut outs = Vec::with_capacity(room.len());
        for &r in &room {
            let (out, after) = std::mem::take(&mut rest).split_at_mut(r);
            outs.push(out);
            rest = after;
        }
        let done: Vec<(usize, u64)> = parts
            .into_par_iter()
            .zip(outs)
            .map(|(part, out)| pair_keys(&part, payloads, loc_of_thread, rel, out))
            .collect();
        // each piece's messages (the first of its room) moved down to
        // follow the last piece's
        let spare = &mut b.messages.spare_capacity_mut()[..want];
        let (mut len, mut from) = (0, 0);
        for (&(n, o), r) in done.iter().zip(&room) {
            spare.copy_within(from..from + n, len);
            len += n;
            from += r;
            orphans += o;
        }
        // SAFETY: the `len` slots after the `at` messages were written:
        // each piece wrote the first `n` of its room (`pair_keys`), and
        // those were moved to follow each other from the first slot
        unsafe { b.messages.set_len(at + len) };
        let lo = bounds[lo_piece];
        for (r, freed) in runs.iter_mut().zip(&mut freed) {
            let first = r.partition_point(|f| u64::from(f.key) < lo);
            r.truncate(first);
            // (a quarter of what is left: a range's run is a share of them
            // all, often short of the fixed count)
            if *freed - first >= SHRINK_FLOWS.min(*freed / 4).max(SHRINK_FLOWS_MIN) {
                r.shrink_to_fit();
                if let Some(g) = &mut give_back {
                    g.freed((*freed - first) * std::mem::size_of::<HeldFlow>());
                }
                *freed = first;
            }
        }
        hi_piece = lo_piece;
    }
    orphans
}

/// The bounds of `pieces` pieces of the keys of `runs` (each sorted by
/// key) of about as many flows each, from 0 up to past the highest key;
/// fewer where keys hold many flows.
fn key_bounds(runs: &[Vec<HeldFlow>], pieces: usize) -> Vec<u64> {
    let end = runs
        .iter()
        .filter_map(|r| r.last())
        .map(|f| u64::from(f.key) + 1)
        .max()
        .unwrap_or(0);
    let total: usize = runs.iter().map(Vec::len).sum();
    // every stride-th flow's key (some 16 a piece)
    let stride = (total / (16 * pieces.max(1))).max(1);
    let mut sample: Vec<u32> = runs
        .iter()
        .flat_map(|r| r.iter().step_by(stride).map(|f| f.key))
        .collect();
    sample.sort_unstable();
    let mut bounds = vec![0];
    for p in 1..pieces {
        if let Some(&k) = sample.get(p * sample.len() / pieces) {
            let k = u64::from(k);
            if k > *bounds.last().unwrap_or(&0) && k < end {
                bounds.push(k);
            }
        }
    }
    bounds.push(end.max(1));
    bounds
}

/// Pairs the steps of the keys held in `part` (a slice of each run, all
/// within the same keys) into `out` (room for a message per step), from
/// the highest key down: the messages made and the steps that could not
/// be paired.
fn pair_keys(
    part: &[&[HeldFlow]],
    payloads: &FlowPayloads,
    loc_of_thread: &[LocId],
    rel: &impl Fn(i64) -> Time,
    out: &mut [std::mem::MaybeUninit<RawMessage>],
) -> (usize, u64) {
    let runs: Vec<&[HeldFlow]> = part.iter().copied().filter(|r| !r.is_empty()).collect();
    let mut orphans = 0u64;
    let mut made = 0;
    let mut pair = |flows: &[HeldFlow]| {
        // (`out` has room for every step: never full)
        let mut emit = |m: RawMessage| {
            if let Some(slot) = out.get_mut(made) {
                slot.write(m);
                made += 1;
            }
        };
        for key_run in flows.chunk_by(|a, b| a.key == b.key).rev() {
            orphans += pair_steps(key_run, payloads, &mut emit, loc_of_thread, rel);
        }
    };
    match runs[..] {
        [] => {}
        // (always with one pipeline) each key's flows where they lie
        [one] => pair(one),
        // a key's steps in several ranges: gathered in file order (a run
        // is sorted by key, time and place)
        _ => {
            let mut gathered: Vec<HeldFlow> = runs.concat();
            gathered.sort_unstable_by_key(|f| (f.key, f.ts, f.place_ph));
            pair(&gathered);
        }
    }
    (made, orphans)
}

/// Pairs the steps of one flow (`run`, in file order) into messages: the
/// steps that could not be paired.
fn pair_steps(
    run: &[HeldFlow],
    payloads: &FlowPayloads,
    emit: &mut impl FnMut(RawMessage),
    loc_of_thread: &[LocId],
    rel: &impl Fn(i64) -> Time,
) -> u64 {
    let mut orphans = 0;
    let mut prev: Option<&HeldFlow> = None;
    for f in run {
        match (prev, f.ph()) {
            (None, b's') => prev = Some(f),
            (None, _) => orphans += 1,
            (Some(_), b's') => {
                orphans += 1;
                prev = Some(f);
            }
            (Some(p), ph) => {
                let (bytes, tag) = payloads.get(p);
                emit(RawMessage {
                    src: loc_of_thread[p.thread as usize],
                    dst: loc_of_thread[f.thread as usize],
                    send: rel(p.ts),
                    recv: rel(f.ts),
                    bytes,
                    tag,
                });
                prev = if ph == b'f' { None } else { Some(f) };
            }
        }
    }
    orphans + u64::from(prev.is_some())
}

/// A timestamp (any sign) as a [`Time`] in the same order.
fn ordered(ts: i64) -> Time {
    (ts as u64) ^ (1 << 63)
}

/// The timestamp of an [`ordered`] time.
fn from_ordered(t: Time) -> i64 {
    (t ^ (1 << 63)) as i64
}

/// A block of instants (timestamp, thread, type, value), their times
/// [`ordered`].
pub(super) fn pack_instants(v: &[(i64, u32, u32, i64)]) -> EventBlock {
    EventBlock::pack_with(v.len(), |i| {
        let (ts, t, k, x) = v[i];
        (ordered(ts), t, k, x)
    })
}

/// A block of counter samples (timestamp, thread, counter, value), their
/// times [`ordered`].
pub(super) fn pack_samples(v: &[(i64, u32, u32, f64)]) -> CounterBlock {
    CounterBlock::pack_with(v.len(), |i| {
        let (ts, t, c, x) = v[i];
        (ordered(ts), t, c, x)
    })
}

fn assemble(mut acc: Acc, mut b: TraceBuilder, path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let origin = acc.origin();
    let end_abs = acc.end_abs();
    b.set_origin(origin);
    let rel = |t: i64| -> Time { (t - origin).max(0) as Time };
    let to_model = phases::span("chrome: threads and messages");
    // the flows' numbering is done with (8 MB at 2.6 M flows): freed
    // before the locations and the messages come
    acc.flow_keys = FxHashMap::default();
    acc.flow_tables = Vec::new();
    acc.flow_num_keys = FxHashMap::default();
    crate::memory::return_freed_memory();
    // the threads and processes are numbered: their maps and the cache by
    // pid are done with once each thread's process and tid and each
    // process's id are listed, 6.5 MB at 65,536 threads in as many
    // processes, freed before their locations are made (where a trace of
    // many threads and few events peaks)
    let ids = acc.thread_procs_and_tids();
    let pids = acc.proc_keys();
    acc.thread_idx = FxHashMap::default();
    acc.num_thread_idx = FxHashMap::default();
    acc.by_pid = Default::default();
    acc.proc_idx = FxHashMap::default();
    acc.num_proc_idx = FxHashMap::default();
    let (loc_of_thread, mut group_of_proc) = place_threads(&acc, &mut b, ids, &pids);
    // the threads are placed: their names and sort indices are done with,
    // freed before the messages come
    acc.thread_metas = Metas::default();
    // the flows before the slices: as the flows leave, the messages take
    // less room than they did, where the slices' intervals take more
    acc.flow_payloads.index();
    let mut runs = std::mem::take(&mut acc.flow_runs);
    runs.insert(0, std::mem::take(&mut acc.flows));
    let paired = phases::span("chrome: flows paired into messages");
    let orphans = add_messages(runs, &acc.flow_payloads, &mut b, &loc_of_thread, rel);
    drop(paired);
    acc.flow_payloads = FlowPayloads::default();
    let mut nesting = Nesting::default();

    add_threads(
        &mut acc.threads,
        &mut b,
        &loc_of_thread,
        (origin, end_abs),
        FLATTEN_GROUP_BYTES,
        &mut nesting,
    );

    for (l, s, e, st) in pack_async(&mut acc, &mut b, &mut group_of_proc, &pids, &mut nesting) {
        b.interval(l, s, e, st);
    }
    drop(pids);
    acc.proc_metas = Metas::default();

    let src = path.to_path_buf();
    nesting.report(&mut b, &src)?;

    // the instants' and counter samples' blocks take the model's times
    // and locations
    let thread_loc = |t: u32| {
        if t == u32::MAX {
            GLOBAL
        } else {
            loc_of_thread[t as usize]
        }
    };
    let in_model = |blk: &mut EventBlock| {
        blk.map_times(|t| rel(from_ordered(t)));
        blk.map_locations(thread_loc);
    };
    let mut instants = std::mem::take(&mut acc.instants).finish(pack_instants);
    instants.par_iter_mut().for_each(in_model);
    for blk in instants {
        b.add_event_block(blk);
    }
    let mut samples = std::mem::take(&mut acc.counters).finish(pack_samples);
    samples
        .par_iter_mut()
        .for_each(|blk| in_model(blk.rows_mut()));
    for blk in samples {
        b.add_counter_block(blk);
    }

    report_orphans(&mut b, &src, orphans)?;

    // what is left of the records leaves before the model is built
    let any_ts = acc.min_ts != i64::MAX;
    drop(acc);
    drop(to_model);
    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    if any_ts {
        t.meta.span = t.meta.span.max(rel(end_abs));
    }
    t.reclassify(&opts.classes)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pipeline on several threads: each batch's parse looks its
    /// events' threads and slices' states up in what the intake had
    /// numbered by then ([`known`]), and the intake numbers the rest. Over
    /// batches of 4 KiB (a hundred and more) the model is the one read on
    /// one thread, where the intake looks everything up: for the untidy
    /// and shared traces, and for one whose slices' names and categories
    /// make the same text ("ab" in "c", "a" in "bc"), whose ids are
    /// strings, missing, negative or past the table by pid, and whose
    /// processes have many threads.
    #[test]
    fn a_pipelines_parse_numbers_as_its_intake() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("ids.json");
        let mut rng = crate::test_rng::XorShift(41);
        let pids = ["1", "-3", "2000000", "\"svc\"", "7"];
        let tids = ["1", "2", "\"w\"", "-1", "99999999999"];
        let names = [
            ("ab", "c"),
            ("a", "bc"),
            ("abc", ""),
            ("", "abc"),
            ("x", "idle"),
            ("x", ""),
        ];
        let mut ev = Vec::new();
        for k in 0..6000u64 {
            let pid = pids[rng.below(5) as usize];
            let tid = match rng.below(3) {
                0 => tids[rng.below(5) as usize].to_string(),
                _ => rng.below(300).to_string(),
            };
            let ids = match rng.below(6) {
                0 => format!(r#","pid":{pid}"#),
                1 => format!(r#","tid":{tid}"#),
                2 => String::new(),
                _ => format!(r#","pid":{pid},"tid":{tid}"#),
            };
            let (name, cat) = names[rng.below(names.len() as u64) as usize];
            let ts = k * 10;
            ev.push(match rng.below(5) {
                0 => format!(r#"{{"ph":"B","ts":{ts}{ids},"name":"{name}","cat":"{cat}"}}"#),
                1 => format!(r#"{{"ph":"E","ts":{ts}{ids}}}"#),
                2 => format!(r#"{{"ph":"i","ts":{ts}{ids},"name":"{name}"}}"#),
                _ => format!(
                    r#"{{"ph":"X","ts":{ts},"dur":{}{ids},"name":"{name}","cat":"{cat}"}}"#,
                    rng.below(30)
                ),
            });
        }
        std::fs::write(&p, format!("[{}]", ev.join(",\n"))).unwrap();
        let mut paths = stream::tests::messy_and_shared_chrome(d.path());
        paths.push(p);
        for p in &paths {
            let read = |threads: usize| {
                crate::test_pool::pool(threads).install(|| {
                    read_with(p, &ReadOptions::default(), Some(1), Some(4096))
                        .map(|t| serde_json::to_string(&t).unwrap())
                        .map_err(|e| e.to_string())
                })
            };
            let want = read(1);
            assert!(read(3) == want, "{}", p.display());
        }
    }

    /// Flows held in several runs (a read by ranges: a run a range, each
    /// sorted on its own) pair into the messages that one run gives, in
    /// the same order and with as many steps unpaired, with runs long
    /// enough to be shrunk (and their memory given back) as they go.
    #[test]
    fn flows_in_several_runs_pair_as_in_one() {
        let mut rng = crate::test_rng::XorShift(0xf10e_5a1e);
        let n = 60_000u32;
        let mut payloads = FlowPayloads::default();
        let mut flows = Vec::new();
        for place in 0..n {
            let r = rng.next();
            // s, t or f; some keys reused far apart, some steps orphans
            let ph = [0u32, 0, 0, 1, 2, 2, 2, 2][(r % 8) as usize];
            let bytes = (r >> 40) % 5000;
            payloads.push(
                place,
                (ph == 0).then_some((bytes, bytes.is_multiple_of(3).then_some(-7))),
            );
            flows.push(HeldFlow {
                ts: ((r >> 8) % 1_000_000) as i64,
                key: ((r >> 28) % 9000) as u32,
                thread: ((r >> 50) % 8) as u32,
                place_ph: place * 4 + ph,
            });
        }
        payloads.index();
        let loc_of_thread: Vec<LocId> = (0..8).collect();
        let pair = |runs: Vec<Vec<HeldFlow>>, threads: usize, round: usize| {
            let mut b = builder(Path::new("t.json"), &ReadOptions::default());
            let orphans = crate::test_pool::pool(threads).install(|| {
                pair_flows(
                    runs,
                    (&payloads, &loc_of_thread),
                    &mut b,
                    &|t| t as Time,
                    round,
                )
            });
            (orphans, b.messages.len(), format!("{:?}", b.messages))
        };
        let one = pair(vec![flows.clone()], 1, ROUND_FLOWS);
        assert!(one.0 > 1000 && one.1 > 10_000, "{} {}", one.0, one.1);
        // what a key at a time from the highest down gives, each key's
        // steps in order of time and place
        let mut by_key: BTreeMap<u32, Vec<HeldFlow>> = BTreeMap::new();
        for f in &flows {
            by_key.entry(f.key).or_default().push(*f);
        }
        let mut messages = Vec::new();
        let mut orphans = 0;
        for steps in by_key.values_mut().rev() {
            steps.sort_by_key(|f| (f.ts, f.place_ph));
            orphans += pair_steps(
                steps,
                &payloads,
                &mut |m| messages.push(m),
                &loc_of_thread,
                &|t| t as Time,
            );
        }
        assert!((orphans, messages.len(), format!("{messages:?}")) == one);
        // one vector or several, in rounds of every size, on 1 to 8 threads
        for (k, threads, round) in [
            (1, 3, 4096),
            (1, 8, 1),
            (2, 1, ROUND_FLOWS),
            (2, 2, 1000),
            (3, 1, 7000),
            (3, 5, ROUND_FLOWS),
            (7, 8, 3000),
            (7, 2, 1),
        ] {
            let runs = flows
                .chunks(flows.len().div_ceil(k))
                .map(<[_]>::to_vec)
                .collect();
            assert!(
                pair(runs, threads, round) == one,
                "{k} runs, {threads} threads, rounds of {round}"
            );
        }
    }

    /// Threads looked up by numeric ids get the numbers of their first
    /// appearance whatever the cache by pid holds: several threads of a
    /// process taking turns, pids negative, beyond what the cache takes,
    /// and at its bounds; string ids beside.
    #[test]
    fn threads_are_numbered_by_first_appearance_through_the_pid_cache() {
        let mut rng = crate::test_rng::XorShift(0x05ee_d0f7_ead5);
        let mut acc = Acc::new(None);
        let mut seen: HashMap<(i64, i64), u32> = HashMap::new();
        let mut strs = 0u32;
        for n in 0..200_000u64 {
            let r = rng.next();
            let p = match r % 10 {
                0 => -(((r >> 8) % 50) as i64),
                1 => (1 << 24) + (r >> 8) as i64 % 3,
                2 => 4 * acc.threads.len() as i64 + (r >> 8) as i64 % 3 - 1,
                _ => ((r >> 8) % 3000) as i64,
            };
            let t = p + ((r >> 20) % 4) as i64;
            if n % 997 == 0 {
                let i = acc.thread_of(&Ident::Str(format!("s{p}").into()), &Ident::Num(t));
                strs += u32::from(i as usize + 1 == acc.threads.len());
                continue;
            }
            let next = acc.threads.len() as u32;
            let want = *seen.entry((p, t)).or_insert(next);
            assert_eq!(
                acc.thread_of(&Ident::Num(p), &Ident::Num(t)),
                want,
                "{p} {t}"
            );
        }
        assert_eq!(acc.threads.len(), seen.len() + strs as usize);
        assert!(acc.by_pid.len() <= (4 * acc.threads.len()).clamp(1024, 1 << 24));
        assert!(acc.by_pid.filled() > 0);
    }

    /// A thread of X slices only, in the order the flattening takes them,
    /// gathered into its block a few at a time gives the intervals and the
    /// clipped count its flat list gives: slices nested, overlapping
    /// (clipped), of equal starts, empty, before the origin, and spans too
    /// long to pack (some slices held apart). Out of order, or with B/E
    /// events, it is not taken.
    #[test]
    fn x_slices_in_order_gathered_into_a_block_give_their_flat_list() {
        let expand = |b: &IntervalBlock| -> Vec<(LocId, Time, Time, StateId)> {
            let IntervalBlock::Grouped(g) = b else {
                panic!("not grouped")
            };
            let mut i = 0;
            let mut out = Vec::new();
            for &(loc, k) in &g.runs {
                for _ in 0..k {
                    let (s, e) = match &g.times {
                        crate::model::builder::GroupedTimes::Packed { base, start, len } => (
                            base + Time::from(start[i]),
                            base + Time::from(start[i]) + Time::from(len[i]),
                        ),
                        crate::model::builder::GroupedTimes::Full { start, end } => {
                            (start[i], end[i])
                        }
                    };
                    out.push((loc, s, e, g.state[i]));
                    i += 1;
                }
            }
            out
        };
        let mut rng = crate::test_rng::XorShift(0x5_11ce5);
        let (mut taken, mut packed, mut clipped) = (0, 0, 0);
        for round in 0..40 {
            let mut ta = ThreadAcc::default();
            let n = 1 + rng.below(3 * FEED_SLICES as u64) as usize;
            let gap = if round % 4 == 0 { 1 << 33 } else { 40 };
            let mut ts = 500 + rng.below(1000) as i64;
            // open slices' ends: a slice longer than its parent is clipped
            // equal starts (the longer not always first) in some rounds
            let least = u64::from(round % 3 != 0);
            for _ in 0..n {
                ts += (least + rng.below(gap)) as i64;
                let dur = match rng.below(6) {
                    0 => 0,
                    1 => 3 * gap as i64,
                    _ => rng.below(gap) as i64,
                };
                ta.push_x(ts, dur, rng.below(4) as StateId, Expect::Unknown);
            }
            if round % 10 == 9 {
                ta.push_be(ts, true, 1);
            }
            // what the general flattening makes of them: all listed,
            // sorted, flattened
            let mut listed: Vec<NestedSlice> = (ta.slices.iter().enumerate())
                .map(|(i, (s, d, st))| NestedSlice {
                    start: s.saturating_sub(900),
                    end: (s + d).saturating_sub(900),
                    state: st,
                    seq: i as u64,
                })
                .collect();
            let in_order = crate::model::in_nested_order(listed.iter().copied());
            let mut flat = Vec::new();
            let want_clipped = flatten_nested(&mut listed, &mut flat);
            match ta.flatten_block(7, 900) {
                Some((block, n_block)) => {
                    assert!(in_order && ta.be_len() == 0 && round % 10 != 9);
                    assert!(ta.slices.is_empty());
                    assert_eq!(n_block.clipped, want_clipped, "round {round}");
                    let want = IntervalBlock::of_location(7, &flat);
                    assert_eq!(
                        block.as_ref().map_or(Vec::new(), expand),
                        expand(&want),
                        "round {round}"
                    );
                    taken += 1;
                    clipped += n_block.clipped;
                    packed += usize::from(gap < 1 << 32);
                }
                None => {
                    assert!(!in_order || round % 10 == 9, "round {round}");
                    assert_eq!(ta.slices.len(), n);
                }
            }
        }
        assert!(
            taken >= 20 && packed >= 10 && clipped > 0,
            "{taken} {packed} {clipped}"
        );
    }

    /// Threads flattened a group at a time give the model of threads
    /// flattened all at once, whatever the groups: nested `B`/`E`, `X`
    /// slices, unmatched ends and unclosed begins, busy threads (a block
    /// of their own) and quiet ones.
    #[test]
    fn threads_flattened_in_groups_give_one_model() {
        let mut rng = crate::test_rng::XorShift(0x0dd_ba11_5ca1_ab1e);
        let make = |rng: &mut crate::test_rng::XorShift| {
            let mut threads = Vec::new();
            for t in 0..40i64 {
                let mut ta = ThreadAcc::default();
                let n = if t % 7 == 0 {
                    3000
                } else {
                    (rng.next() % 60) as usize
                };
                let mut ts = 1_000i64;
                for _ in 0..n {
                    ts += (rng.next() % 50) as i64;
                    let st = (rng.next() % 5) as StateId;
                    match rng.next() % 3 {
                        0 => ta.push_x(ts, (rng.next() % 80) as i64, st, Expect::Unknown),
                        1 => ta.push_be(ts, true, st),
                        _ => ta.push_be(ts, false, 0),
                    }
                }
                threads.push(ta);
            }
            threads
        };
        let threads = make(&mut rng);
        let mut results = Vec::new();
        for group in [1usize, 700, 64 << 10, usize::MAX] {
            let mut threads: Vec<_> = threads.to_vec();
            let mut b = TraceBuilder::new(
                Format::ChromeJson,
                Path::new("t.json"),
                TimeUnit::microseconds(),
                false,
            );
            for st in 0..5 {
                b.states.intern(&format!("s{st}"), StateClass::Busy);
            }
            let locs: Vec<LocId> = (0..threads.len())
                .map(|t| {
                    b.locations
                        .add(format!("t{t}"), LocationKind::Thread, None, t as i64)
                })
                .collect();
            let mut nesting = Nesting::default();
            add_threads(
                &mut threads,
                &mut b,
                &locs,
                (900, 99_000),
                group,
                &mut nesting,
            );
            assert!(
                threads
                    .iter()
                    .all(|ta| ta.be_len() == 0 && ta.slices.is_empty())
            );
            let t = b
                .finish(BuildOptions {
                    warn_unsorted: false,
                })
                .unwrap();
            let per_loc: Vec<Vec<(Time, Time, StateId)>> = (0..t.locations.len())
                .map(|l| {
                    let s = t.intervals.of(l as LocId);
                    (0..s.start.len())
                        .map(|i| (s.start[i], s.end[i], s.state[i]))
                        .collect()
                })
                .collect();
            results.push((
                per_loc,
                (nesting.unmatched_end, nesting.unclosed, nesting.clipped),
            ));
        }
        let (first, counts) = &results[0];
        assert!(first.iter().map(Vec::len).sum::<usize>() > 10_000);
        assert!(counts.0 > 0 && counts.1 > 0 && counts.2 > 0, "{counts:?}");
        for r in &results[1..] {
            assert_eq!(&r.0, first);
            assert_eq!(&r.1, counts);
        }
    }

    /// Every thread of every range of a read by ranges holds one: 65,536
    /// threads read by 16 ranges took some 560 bytes per thread and range
    /// (vectors of chunks and bases, metadata and `B`/`E` lists inline).
    #[test]
    fn thread_records_stay_small() {
        assert!(std::mem::size_of::<ThreadAcc>() <= 48);
        // a thread with slices but no B/E events: one allocation, its
        // first chunk
        let mut ta = ThreadAcc::default();
        ta.push_x(5, 10, 1, Expect::Unknown);
        assert!(ta.be.is_none() && ta.slices.more.is_none());
    }

    /// Slices come back in order at every count around the chunks' size,
    /// those kept apart among them, and are counted.
    #[test]
    fn held_slices_come_back_in_order() {
        for n in [0usize, 1, 255, 256, 257, 511, 512, 513, 1300] {
            let mut h = HeldSlices::default();
            let want: Vec<(u64, u64, StateId)> = (0..n as u64)
                .map(|i| {
                    let start = 7_000_000_000 + i * 1_000 + (i % 97 == 3) as u64 * (5 << 32);
                    let dur = if i % 101 == 5 { 1 << 33 } else { i % 7 };
                    (start, dur, (i % 5) as StateId)
                })
                .collect();
            for &(s, d, st) in &want {
                h.push(s, d, st, Expect::Unknown);
            }
            assert_eq!(h.len(), n);
            assert_eq!(h.bytes(), 12 * n + 16 * h.apart());
            assert_eq!(h.iter().collect::<Vec<_>>(), want, "{n}");
        }
    }

    /// Slices taken over from later ranges (chunks of any length, slices
    /// kept apart among them, empty ones) come back after their own, in
    /// order, their states renumbered, their count and bytes summed; and
    /// slices held after them come after them.
    #[test]
    fn held_slices_take_over_later_ones_in_order() {
        let slice = |i: u64| {
            // some far from the chunk's base or too long: kept apart
            let start = 5_000_000_000 + i * 1_000 + (i % 89 == 7) as u64 * (3 << 32);
            let dur = if i % 97 == 11 { 1 << 33 } else { i % 13 };
            (start, dur, (i % 4) as StateId)
        };
        let renumber = |st: StateId| st * 10 + 1;
        for sizes in [
            &[0usize, 0][..],
            &[5, 0, 3],
            &[0, 300],
            &[1, 1, 1, 1],
            &[256, 256, 1],
            &[700, 40, 0, 1300, 256, 9],
        ] {
            let mut want = Vec::new();
            let mut merged = HeldSlices::default();
            let mut i = 0u64;
            for (r, &n) in sizes.iter().enumerate() {
                let mut h = HeldSlices::default();
                for _ in 0..n {
                    let (s, d, st) = slice(i);
                    i += 1;
                    h.push(s, d, st, Expect::Unknown);
                    want.push((s, d, if r == 0 { st } else { renumber(st) }));
                }
                if r == 0 {
                    merged = h;
                } else {
                    merged.append(h, renumber);
                }
            }
            // held after the take-over
            for _ in 0..300 {
                let (s, d, st) = slice(i);
                i += 1;
                merged.push(s, d, st, Expect::Unknown);
                want.push((s, d, st));
            }
            assert_eq!(merged.len(), want.len(), "{sizes:?}");
            assert_eq!(merged.bytes(), 12 * want.len() + 16 * merged.apart());
            assert!(merged.iter().collect::<Vec<_>>() == want, "{sizes:?}");
        }
    }

    /// The room a thread's chunks take (in slices).
    fn room(h: &HeldSlices) -> usize {
        h.first.capacity()
            + h.more
                .as_ref()
                .map_or(0, |m| m.chunks.iter().map(Vec::capacity).sum())
    }

    /// Whatever the read expects, the slices come back in order; the
    /// room of the first chunk is what was expected (a read at an even
    /// pace: within a 16th), and twice its slices at most
    /// when the pace was wrong; the later chunks are whole.
    #[test]
    fn held_slices_take_the_room_expected() {
        // (slice i of n, the bytes read before it of 10,000)
        type Pace = fn(usize, usize) -> u64;
        let even: Pace = |i, n| (i as u64 * 10_000 + 5_000) / n as u64;
        let early: Pace = |i, n| i as u64 * 3_000 / n as u64;
        let late: Pace = |i, n| 7_000 + i as u64 * 3_000 / n as u64;
        let burst: Pace = |i, n| if i < n / 2 { 2_500 + i as u64 } else { 9_000 };
        for n in [1usize, 3, 40, 172, 255, 256, 257, 600, 1300] {
            let want: Vec<(u64, u64, StateId)> = (0..n as u64)
                .map(|i| (1_000_000 + i * 100, i % 50, (i % 3) as StateId))
                .collect();
            // the first chunk's slices, and the later chunks' room
            let first = n.min(SLICE_CHUNK);
            let later = (n - first).next_multiple_of(SLICE_CHUNK);
            let check = |expect: &dyn Fn(usize) -> Expect, most: usize, what: &str| {
                let mut h = HeldSlices::default();
                for (i, &(s, d, st)) in want.iter().enumerate() {
                    h.push(s, d, st, expect(i));
                }
                assert_eq!(h.iter().collect::<Vec<_>>(), want, "{what} {n}");
                let most = most.min(SLICE_CHUNK) + later;
                assert!(
                    room(&h) >= n && room(&h) <= most,
                    "{what} {n}: {}",
                    room(&h)
                );
            };
            check(&|_| Expect::Unknown, 2 * first + 8, "unknown");
            let read = |pace: Pace| {
                move |i: usize| Expect::Read {
                    done: pace(i, n),
                    len: 10_000,
                }
            };
            check(&read(even), first + first / 16 + 4, "even");
            for (pace, what) in [(early, "early"), (late, "late"), (burst, "burst")] {
                check(&read(pace), 2 * first + 8, what);
            }
            // nothing to go by
            check(
                &|_| Expect::Read { done: 0, len: 0 },
                2 * first + 8,
                "empty",
            );
        }
    }

    /// A thread's slices held in 12 bytes (their places among its slice
    /// events implied; starts far from their chunk's and durations past
    /// 32 bits kept apart) flatten as the same events held whole with
    /// their sequence numbers in the file: `X` slices and `B`/`E` pairs of
    /// equal extents (the order of appearance decides which is inside),
    /// slices of 4.3 s and more, jumps of 3 s, parents written 6 s after
    /// they start, many chunks, unmatched ends and unclosed begins.
    #[test]
    fn held_slices_flatten_as_the_events_held_whole() {
        let mut rng = crate::test_rng::XorShift(0x005e_ed1e_55c0_ffee);
        let (origin, end_abs) = (500i64, 1_000_000_000_000i64);
        let mut apart = 0;
        // rounds of X slices only, in the order the flattening takes them
        // and not (fed as they come, then undone and sorted)
        let (mut x_in_order, mut x_out_of_order) = (0, 0);
        for round in 0..200 {
            let only_x = round % 3 == 0;
            // (starts that only grow: in that order whatever the lengths)
            let growing = round % 6 == 0;
            let mut ta = ThreadAcc::default();
            // the events as the reader held them before: X slices with
            // their sequence numbers in the file (other threads' events
            // between), B/E with theirs
            let mut x = Vec::new();
            let mut be = Vec::new();
            let mut seq = 0u64;
            let mut ts = 10_000_000_000i64;
            let n = 1 + (rng.next() % 700) as usize;
            for _ in 0..n {
                // few distinct times and lengths: equal extents are common;
                // now and then a jump of 3 s (past a chunk's offsets)
                ts += (rng.next() % 3) as i64 * 10 + i64::from(growing);
                if rng.next().is_multiple_of(60) {
                    ts += 3_000_000_000;
                }
                seq += 1 + rng.next() % 3;
                let st = (rng.next() % 4) as StateId;
                match rng.next() % if only_x { 2 } else { 4 } {
                    0 | 1 => {
                        let dur = match rng.next() % 16 {
                            0 => u32::MAX as i64 + (rng.next() % 3) as i64 - 1,
                            1 => 9_000_000_000,
                            k => (k as i64 % 4) * 10,
                        };
                        // a parent written after its children, 6 s back
                        let ts = if rng.next().is_multiple_of(40) && !growing {
                            ts - 6_000_000_000
                        } else {
                            ts
                        };
                        ta.push_x(ts, dur, st, Expect::Unknown);
                        x.push(NestedSlice {
                            start: (ts - origin) as Time,
                            end: (ts + dur - origin) as Time,
                            state: st,
                            seq,
                        });
                    }
                    2 => {
                        ta.push_be(ts, true, st);
                        be.push((ts, seq, true, st));
                    }
                    _ => {
                        ta.push_be(ts, false, 0);
                        be.push((ts, seq, false, 0));
                    }
                }
            }
            if only_x {
                if crate::model::in_nested_order(x.iter().copied()) {
                    x_in_order += 1;
                } else {
                    x_out_of_order += 1;
                }
            }
            be.sort_by_key(|&(ts, seq, _, _)| (ts, seq));
            let mut stack = Vec::new();
            let (mut unmatched, mut unclosed) = (0, 0);
            for &(ts, seq, begin, st) in &be {
                if begin {
                    stack.push((ts, seq, st));
                } else if let Some((bt, bseq, bst)) = stack.pop() {
                    x.push(NestedSlice {
                        start: (bt - origin) as Time,
                        end: (ts - origin) as Time,
                        state: bst,
                        seq: bseq,
                    });
                } else {
                    unmatched += 1;
                }
            }
            for (bt, bseq, bst) in stack {
                unclosed += 1;
                x.push(NestedSlice {
                    start: (bt - origin) as Time,
                    end: (end_abs - origin) as Time,
                    state: bst,
                    seq: bseq,
                });
            }
            let mut want = Vec::new();
            let clipped = flatten_nested(&mut x, &mut want);
            apart += ta.slices.apart();
            // (after what the list held, whether the slices came in
            // order or were sorted)
            let mut got = vec![(1, 2, 3)];
            let n = ta.flatten(origin, end_abs, &mut got);
            assert_eq!(got[0], (1, 2, 3), "round {round}");
            assert_eq!(got[1..], want[..], "round {round}");
            assert_eq!(
                (n.unmatched_end, n.unclosed, n.clipped),
                (unmatched, unclosed, clipped),
                "round {round}"
            );
            assert!(ta.slices.is_empty() && ta.be_len() == 0);
        }
        assert!(apart > 500, "{apart}");
        assert!(
            x_in_order > 5 && x_out_of_order > 20,
            "{x_in_order} {x_out_of_order}"
        );
    }

    /// Payloads taken whole from a later part ([`FlowPayloads::append_shifted`])
    /// are the ones pushed one by one: at every offset within a word and
    /// across words, with parts that end within a word, and payloads
    /// kept apart.
    #[test]
    fn flow_payloads_appended_as_pushed() {
        let mut rng = crate::test_rng::XorShift(0x00a9_9e4d);
        let payload = |rng: &mut crate::test_rng::XorShift| match rng.below(5) {
            0 | 1 => None,
            2 => Some((rng.below(1000), None)),
            3 => Some((rng.below(1000), Some(rng.below(50) as i64))),
            _ => Some((5_000_000_000, Some(i64::MIN))),
        };
        for round in 0..200 {
            type Payload = Option<(u64, Option<i64>)>;
            let parts: Vec<Vec<Payload>> = (0..1 + round % 4)
                .map(|_| {
                    let n = rng.below(if round % 2 == 0 { 70 } else { 300 });
                    (0..n).map(|_| payload(&mut rng)).collect()
                })
                .collect();
            let mut pushed = FlowPayloads::default();
            let mut appended = FlowPayloads::default();
            let mut at = 0u32;
            for (i, part) in parts.iter().enumerate() {
                let mut own = FlowPayloads::default();
                for (p, &x) in part.iter().enumerate() {
                    pushed.push(at + p as u32, x);
                    own.push(p as u32, x);
                    if i == 0 {
                        appended.push(p as u32, x);
                    }
                }
                if i > 0 {
                    appended.append_shifted(own, at, part.len() as u32);
                }
                at += part.len() as u32;
            }
            assert_eq!(pushed.has, appended.has, "round {round}");
            assert_eq!(pushed.pairs, appended.pairs, "round {round}");
            assert_eq!(pushed.apart, appended.apart, "round {round}");
        }
    }

    /// Every byte count and tag comes back for a flow event that starts
    /// a message, at the bounds of each field and among events without
    /// (`f`) across words of the bitmap; only those that do not fit in 8
    /// bytes are kept apart.
    #[test]
    fn flow_payloads_come_back_whole() {
        let mut p = FlowPayloads::default();
        let bytes = [
            0u64,
            1,
            u32::MAX as u64 - 1,
            u32::MAX as u64,
            1 << 32,
            u64::MAX,
        ];
        let tags = [
            None,
            Some(0i64),
            Some(-1),
            Some(i32::MAX as i64),
            Some(i32::MIN as i64 + 1),
            Some(i32::MIN as i64),
            Some(i32::MAX as i64 + 1),
            Some(i64::MIN),
            Some(i64::MAX),
        ];
        let mut flows = Vec::new();
        let mut want = Vec::new();
        let mut apart = 0;
        for key in [0u32, 7, u32::MAX] {
            for &b in &bytes {
                for (k, &t) in tags.iter().enumerate() {
                    // an end now and then, none or several in a row
                    for _ in 0..(k + b as usize) % 3 {
                        p.push(flows.len() as u32, None);
                        flows.push((key, None));
                    }
                    p.push(flows.len() as u32, Some((b, t)));
                    flows.push((key, Some((b, t.unwrap_or(i64::from(key))))));
                    let fits = b < u32::MAX as u64
                        && t.is_none_or(|t| i32::try_from(t).is_ok_and(|t| t != i32::MIN));
                    apart += usize::from(!fits);
                }
            }
        }
        p.index();
        for (place, &(key, payload)) in flows.iter().enumerate() {
            let f = HeldFlow {
                ts: 5,
                key,
                thread: 1,
                place_ph: (place as u32) << 2,
            };
            if let Some(pair) = payload {
                want.push(pair);
                assert_eq!(p.get(&f), pair, "place {place}");
            }
        }
        assert!(flows.len() > 200 && want.len() < flows.len());
        assert_eq!(p.pairs.len(), want.len());
        assert_eq!(p.apart.len(), apart);
        assert!(apart > 0 && apart < want.len());
    }

    #[test]
    fn pipeline_runs_cover_a_batch_in_order() {
        for n in [0usize, 1, 255, 256, 511, 512, 2047, 2048, 10_000, 65_537] {
            let runs = pipeline_runs(n);
            assert!(!runs.is_empty() && runs.len() <= PIPELINE_CHUNKS, "{n}");
            assert_eq!(runs[0].start, 0);
            assert_eq!(runs[runs.len() - 1].end, n);
            for w in runs.windows(2) {
                assert_eq!(w[0].end, w[1].start, "{n}");
                assert!(!w[1].is_empty());
            }
            if n >= 256 * PIPELINE_CHUNKS {
                assert_eq!(runs.len(), PIPELINE_CHUNKS, "{n}");
            }
        }
    }

    /// Many batches through the three overlapping stages: every event is
    /// taken, and of two faults the earlier in the file is the one
    /// reported, whichever stage meets it first.
    #[test]
    fn batches_in_flight_keep_file_order_for_events_and_errors() {
        let d = tempfile::tempdir().unwrap();
        let event = |i: usize| {
            format!(
                r#"{{"ph":"X","pid":{p},"tid":{p},"ts":{i},"dur":1,"name":"s{k}","cat":"busy"}}"#,
                p = i % 7,
                k = i % 3
            )
        };
        let n = 80_000; // about 6 MiB: several batches
        let events: Vec<String> = (0..n).map(event).collect();
        let write = |name: &str, events: &[String], tail: &str| {
            let f = d.path().join(name);
            std::fs::write(&f, format!("[\n{}\n]{tail}", events.join(",\n"))).unwrap();
            f
        };
        let opts = ReadOptions::default();
        let ok = write("ok.json", &events, "");
        // one thread parses and takes each event in turn; more overlap a
        // run's intake with the next run's parse
        let mut models = Vec::new();
        for threads in [1, 2, 3] {
            crate::test_pool::pool(threads).install(|| {
                let t = read(&ok, &opts).unwrap();
                assert_eq!(t.intervals.len(), n);
                models.push(serde_json::to_string(&t).unwrap());
                // a bad event in the last batch but one, and the file's
                // end broken (met by the splitter, reading ahead, before
                // that batch's events are taken): the bad event is named,
                // by its line
                for at in [1000, n - 12_000, n - 500] {
                    let mut bad = events.clone();
                    bad[at] = r#"{"ph":"X","pid":0,"tid":0,"ts":"soon","dur":1}"#.into();
                    let e = read(&write("bad.json", &bad, " trailing"), &opts)
                        .unwrap_err()
                        .to_string();
                    assert!(e.contains(&format!("line {}", at + 2)), "{threads}: {e}");
                    assert!(e.contains("\"ts\""), "{e}");
                }
                // only the end broken: that is what is said
                let e = read(&write("tail.json", &events, " trailing"), &opts)
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("end of the file"), "{threads}: {e}");
            });
        }
        assert!(models.iter().all(|m| *m == models[0]));
    }

    #[test]
    fn flow_keys_are_numbered_by_first_appearance_whatever_the_id() {
        let mut acc = Acc::default();
        let ids = [
            ("a", "5"),
            ("a", "x"),
            ("a", "05"),
            ("b", "5"),
            ("a", "5"),
            ("a", "0"),
            ("a", "18446744073709551615"),
            ("a", "x"),
            ("b", "05"),
            ("a", "1"),
        ];
        let got: Vec<u32> = ids.iter().map(|(c, i)| acc.flow_key(c, i)).collect();
        assert_eq!(got, [0, 1, 2, 3, 0, 4, 5, 1, 6, 7]);
        // numeric ids in tables and beyond them, as one numbering: against
        // a map of every (category, id) seen
        let mut acc = Acc::default();
        let mut want: HashMap<(String, String), u32> = HashMap::new();
        let mut rng = crate::test_rng::XorShift(0x51_7cc1_b727_220a);
        for i in 0..40_000u64 {
            let cat = ["a", "b", "c"][(rng.next() % 3) as usize];
            let id = match rng.next() % 6 {
                0 => format!("{}", rng.next() % 100_000),
                1 => format!("{}", u64::MAX - rng.next() % 50),
                2 => format!("x{}", rng.next() % 500),
                _ => format!("{}", i / 2 + rng.next() % 64),
            };
            let n = want.len() as u32;
            let k = *want.entry((cat.to_string(), id.clone())).or_insert(n);
            assert_eq!(acc.flow_key(cat, &id), k, "{cat} {id}");
        }
        assert_eq!(
            plain_decimal("1234567890123456789"),
            Some(1234567890123456789)
        );
        for t in ["", "05", "-1", "+1", "1.0", "12345678901234567890", "1e3"] {
            assert_eq!(plain_decimal(t), None, "{t}");
        }
    }
}

#[cfg(test)]
mod state_tests {
    use super::*;

    /// The states remembered by name and category give what interning and
    /// tagging each slice gives: pairs whose concatenations are equal are
    /// told apart, a name keeps one state whatever its categories.
    #[test]
    fn slice_states_are_told_apart_by_name_and_category() {
        let mut acc = Acc::default();
        let mut b = builder(Path::new("t.json"), &ReadOptions::default());
        let ab_c = acc.state_of(&mut b, "ab", "c");
        let a_bc = acc.state_of(&mut b, "a", "bc");
        assert_ne!(ab_c, a_bc);
        assert_eq!(acc.state_of(&mut b, "ab", "c"), ab_c);
        assert_eq!(acc.state_of(&mut b, "a", "idle"), a_bc);
        assert_eq!(acc.state_of(&mut b, "ab", "c"), ab_c);
        assert_eq!(acc.state_of(&mut b, "a", "bc"), a_bc);
        let tags = |id| b.states.get(id).map(|s| s.tags.clone()).unwrap_or_default();
        assert_eq!(tags(ab_c), ["cat:c"]);
        assert_eq!(tags(a_bc), ["cat:bc", "cat:idle"]);
    }
}

/// The fast path's events against serde's, on objects of every shape the
/// fast path takes or must refuse.
#[cfg(test)]
mod fields_tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS: &[&str] = &[
        "ph",
        "name",
        "cat",
        "s",
        "pid",
        "tid",
        "ts",
        "dur",
        "id",
        "id2",
        "args",
        "x",
        "sort",
        "idx",
        "na\\u006de",
        "pidx",
        "t",
        "argsx",
        "p\\\"h",
    ];

    const VALUES: &[&str] = &[
        "\"X\"",
        "\"B\"",
        "\"i\"",
        "\"s\"",
        "\"C\"",
        "\"M\"",
        "\"\"",
        "\"XX\"",
        "\"Waiting a message\"",
        "\"caf\u{e9} \u{20ac}\"",
        "\"a\\\"b\"",
        "\"tab\there\"",
        "\"g\"",
        "0",
        "-0",
        "3",
        "-7",
        "12.5",
        "0.910",
        "1.2345",
        "1e3",
        "1E-2",
        "01",
        "1.",
        "-",
        "123456789012345678901",
        "999999999999999999",
        "1795396027283346.750",
        "9999999999999999999",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775.808",
        "99999999999999999.5",
        "-9223372036854775808",
        "9223372036854775.807",
        "true",
        "false",
        "null",
        "tru",
        "nul",
        "{\"a\":1}",
        "[1,2]",
        "[1,{\"b\":[]}]",
        "{\"a\":[}",
        "{\"bytes\":4096,\"tag\":1}",
        "{\"bytes\":-1}",
        "{\"bytes\":4096.0}",
        "{\"bytes\":1e3}",
        "{\"bytes\":18446744073709551615}",
        "{\"tag\":-0}",
        "{\"tag\":-12}",
        "{\"value\":3}",
        "{\"value\":-2.5e3}",
        "{\"value\":null}",
        "{\"value\":\"3\"}",
        "{\"name\":\"rank 1\"}",
        "{\"name\":\"r\\u0041\"}",
        "{\"name\":7}",
        "{\"sort_index\":2,\"x\":[1]}",
        "{\"sort_index\":2,\"x\":\"y\",\"z\":true}",
        "{\"bytes\":1,\"bytes\":2}",
        "{\"x\":{\"y\":tru}}",
        "{}",
        "{ \"tag\" : 5 , \"value\" : 0.25 }",
        "{\"tag\":5,}",
        "{\"tag\" 5}",
        "\"1.5\"",
        "\"17\"",
        "[]",
    ];

    const SPACES: &[&str] = &["", "", "", " ", "\n", " \t"];

    fn object(members: &[(usize, usize, usize)], tail: usize) -> String {
        let mut o = String::from("{");
        for (k, &(key, value, ws)) in members.iter().enumerate() {
            let w = SPACES[ws % SPACES.len()];
            if k > 0 {
                o.push(',');
                o.push_str(w);
            }
            o.push('"');
            o.push_str(KEYS[key % KEYS.len()]);
            o.push('"');
            o.push_str(w);
            o.push(':');
            o.push_str(w);
            o.push_str(VALUES[value % VALUES.len()]);
        }
        o.push_str(SPACES[tail % SPACES.len()]);
        o.push('}');
        o
    }

    fn summary(ev: &std::result::Result<Ev, String>) -> String {
        match ev {
            Err(e) => format!("error: {e}"),
            Ok(ev) => format!(
                "{} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {:?} | {:?} {:?} {:?} {:?} {:?} | {}",
                ev.ph,
                ev.name,
                ev.cat,
                ev.pid,
                ev.tid,
                ev.ts,
                ev.dur,
                ev.id,
                ev.scope,
                ev.args,
                ev.lite.value.as_ref().map(ToString::to_string),
                ev.lite.bytes,
                ev.lite.tag,
                ev.lite.name.as_deref(),
                ev.lite.sort_index,
                ev.off,
            ),
        }
    }

    /// Malformed objects and arrays: the fast path only balances the
    /// brackets of the values it does not use (and of `args` it leaves to
    /// serde), so it takes events serde refuses whole.
    const LOOSE: &[&str] = &[
        "{\"a\":[}",
        "{\"x\":{\"y\":tru}}",
        "{\"tag\":5,}",
        "{\"tag\" 5}",
    ];

    fn is_strict(members: &[(usize, usize, usize)]) -> bool {
        members
            .iter()
            .all(|&(_, v, _)| !LOOSE.contains(&VALUES[v % VALUES.len()]))
    }

    /// Where the fast path gives fields and serde takes the object, the
    /// event is serde's (value or error); `strict`: serde must take what
    /// the fast path takes. Whether the fast path took the object.
    fn check(b: &[u8], strict: bool) -> bool {
        let mut fast = Fields::default();
        if fields_fast(b, &mut fast).is_none() {
            return false;
        }
        let serde = fields_serde(b);
        if serde.is_err() && !strict {
            return true;
        }
        assert!(
            serde.is_ok(),
            "fast path took what serde refuses: {}",
            String::from_utf8_lossy(b)
        );
        let (want, got) = (
            summary(&serde.and_then(|f| event_of(f, 7))),
            summary(&event_of(fast, 7)),
        );
        assert_eq!(got, want, "{}", String::from_utf8_lossy(b));
        true
    }

    /// A counter event's samples, read where its members lie, are those a
    /// map of its `args` gives (series named after the event, or after it
    /// and the member, with the id; numbers only; by name; the last of a
    /// repeated name), for numbers, strings, arrays, escapes, repeats and
    /// broken `args`.
    #[test]
    fn counter_samples_are_those_of_the_args_map() {
        let reference = |ev: &Ev| -> Vec<(String, f64)> {
            let Some(m) = ev.args.and_then(|a| {
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(a).ok()
            }) else {
                return Vec::new();
            };
            m.into_iter()
                .filter_map(|(k, v)| {
                    let x = v.as_f64()?;
                    let mut name = if k == "value" {
                        ev.name.to_string()
                    } else {
                        format!("{}.{k}", ev.name)
                    };
                    if let Some(id) = ev.id.as_deref() {
                        name = format!("{name}[{id}]");
                    }
                    Some((name, x))
                })
                .collect()
        };
        let mut seen = 0;
        for args in [
            r#"{"value":3}"#,
            r#"{"rss":1,"heap":2.5,"value":-7}"#,
            r#"{"b":[2],"a":"x","c":{"d":1},"e":null,"f":true,"g":1e300}"#,
            r#"{"a\"b":4,"\u0041":5}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"big":18446744073709551615,"neg":-9223372036854775808}"#,
            r#"{}"#,
            r#"{"a":1"#,
            r#"[1,2]"#,
            r#"7"#,
        ] {
            for id in [None, Some("x1")] {
                let ev = counter_event("mem", id, args);
                let mut got = Vec::new();
                counter_samples(&ev, &mut |name, x| got.push((name.to_string(), x)));
                assert_eq!(got, reference(&ev), "{args} {id:?}");
                seen += got.len();
            }
        }
        assert_eq!(seen, 20);
    }

    /// The members read where they lie give the samples serde gives, to
    /// the bit, for `args` of numbers written every way JSON allows,
    /// repeated names, strings, literals, nested values, whitespace and
    /// escapes, and for `args` cut short or with something after them.
    #[test]
    fn counter_members_read_in_place_are_serdes() {
        let mut rng = crate::test_rng::XorShift(0xC0DE5);
        let numbers = [
            "0",
            "-0",
            "7",
            "-7",
            "0.1",
            "-0.5",
            "2.50",
            "123456.789",
            "1e3",
            "1E-2",
            "-2.5e+3",
            "9007199254740993.5",
            "9007199254740992.5",
            "900719925474099.25",
            "0.0000000000000000001",
            "1234567890123456789",
            "12345678901234567890",
            "18446744073709551615",
            "-9223372036854775808",
            "-9223372036854775809",
            "3.14159265358979323846",
        ];
        // (not JSON: the whole `args` then gives no sample)
        let broken = ["1.", "01", "-", ".5", "1e"];
        let others = [
            "\"s\"",
            "\"a\\\"b\"",
            "true",
            "null",
            "[1,{\"x\":2}]",
            "{\"y\":[]}",
            // (nested, not JSON inside: no sample at all)
            "[1,,2]",
            "{\"y\"}",
        ];
        let keys = ["value", "rss", "heap", "a", "b", "A", "a\\u0041", ""];
        let (mut fast, mut total) = (0, 0);
        for round in 0..4000 {
            let n = rng.below(12) as usize;
            let mut args = String::from(if round % 7 == 0 { " { " } else { "{" });
            for i in 0..n {
                if i > 0 {
                    args.push_str(if rng.below(5) == 0 { " ,\n" } else { "," });
                }
                let k = keys[rng.below(keys.len() as u64) as usize];
                let v = if rng.below(4) == 0 {
                    others[rng.below(others.len() as u64) as usize]
                } else if rng.below(100) == 0 {
                    broken[rng.below(broken.len() as u64) as usize]
                } else {
                    numbers[rng.below(numbers.len() as u64) as usize]
                };
                args.push_str(&format!(
                    "\"{k}\"{}:{v}",
                    if rng.below(6) == 0 { " " } else { "" }
                ));
            }
            args.push('}');
            match round % 11 {
                0 => args.push_str(" \n"),
                1 => args.push('x'),
                2 => {
                    args.pop();
                }
                _ => {}
            }
            let ev = counter_event("m", (round % 3 == 0).then_some("i"), &args);
            let mut got = Vec::new();
            counter_samples(&ev, &mut |name, x| {
                got.push((name.to_string(), x.to_bits()))
            });
            let mut want = Vec::new();
            counter_samples_serde(&ev, &args, &mut String::new(), &mut |name, x| {
                want.push((name.to_string(), x.to_bits()))
            });
            assert_eq!(got, want, "{args}");
            let mut members = [("", None); fields::FAST_MEMBERS];
            fast += usize::from(fields::counter_members_fast(&args, &mut members).is_some());
            total += want.len();
        }
        // both paths taken, and samples compared
        assert!(
            fast > 300 && fast < 3700,
            "{fast} read in place, {total} samples"
        );
        assert!(total > 5_000, "{fast} read in place, {total} samples");
    }

    #[test]
    fn fast_and_serde_paths_make_the_same_events() {
        // the shapes the synthetic traces write, and what readers meet
        for t in [
            r#"{"ph":"X","pid":3,"tid":3,"ts":0,"dur":6.820,"name":"Waiting a message","cat":"overhead"}"#,
            r#"{"ph":"s","pid":0,"tid":0,"ts":0.910,"name":"message","cat":"message","id":2,"args":{"bytes":4096,"tag":2}}"#,
            r#"{"ph":"i","pid":1,"tid":1,"ts":0,"s":"t","name":"Workload phase","args":{"value":3}}"#,
            r#"{"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"rank 0"}}"#,
            r#"{"ph":"C","pid":"p","tid":"t","ts":"12.5","name":"c","args":{"a":1,"b":[2]}}"#,
            r#" { "ph" : "B" , "pid" : -4 , "tid" : 2 , "ts" : 1700000000123456.789 } "#,
        ] {
            assert!(check(t.as_bytes(), true), "fast path refused {t}");
        }
        // what it must leave to serde
        for t in [
            r#"{"ph":"X","ph":"X","ts":1}"#,
            r#"{"ph":"X","ts":01}"#,
            r#"{"ph":"X","ts":1,"name":"a\"b"}"#,
            r#"{"ph":"X","ts":1,}"#,
            r#"{"ph":"X","ts":1}x"#,
            r#"{"ph":X,"ts":1}"#,
            r#"{"ph":"X","ts":1"#,
            // serde's `null` is an absent member, whichever it is
            r#"{"ts":null,"ph":"X"}"#,
            r#"{"ph":"X","ts":1,"dur":null}"#,
            r#"{"ph":"s","ts":1,"id":null}"#,
            r#"{"ph":"X","ts":1,"args":null}"#,
            r#"{"ph":"X","ts":1,"pid":null,"pid":2}"#,
        ] {
            assert!(!check(t.as_bytes(), true), "fast path took {t}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn fast_path_events_are_serdes(
            members in proptest::collection::vec((0usize..64, 0usize..128, 0usize..8), 0..9),
            tail in 0usize..8,
        ) {
            check(object(&members, tail).as_bytes(), is_strict(&members));
        }

        #[test]
        fn fast_path_events_are_serdes_after_a_byte_changed(
            members in proptest::collection::vec((0usize..64, 0usize..128, 0usize..8), 1..9),
            at in 0usize..1000,
            byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b':'), Just(b'}'),
                Just(b'{'), Just(b'-'), Just(b'.'), Just(b'0'), Just(b'e'), Just(b' '), 0u8..=255],
        ) {
            let mut b = object(&members, 0).into_bytes();
            let at = at % b.len();
            b[at] = byte;
            check(&b, false);
        }
    }

    /// The generator reaches the fast path often, and the fast path takes
    /// `args` itself often: the tests above test something.
    #[test]
    fn generated_objects_take_the_fast_path() {
        let (mut fast, mut lite) = (0, 0);
        for n in 0..2000usize {
            let members: Vec<_> = (0..(n % 7))
                .map(|k| ((n * 7 + k * 13) % 12, (n * 31 + k * 17) % VALUES.len(), k))
                .collect();
            let o = object(&members, n);
            if check(o.as_bytes(), is_strict(&members)) {
                fast += 1;
                let mut f = Fields::default();
                let _ = fields_fast(o.as_bytes(), &mut f);
                lite += f.lite.is_some() as usize;
            }
        }
        assert!(fast > 200 && lite > 20, "fast {fast}, lite {lite}");
    }
}
