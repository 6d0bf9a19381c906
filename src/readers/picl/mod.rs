//! The PICL "new" trace format (ORNL/TM-12125), read by ParaGraph.
//!
//! Each line is `rectype event time proc process ndata [fmt data...]`:
//! `rectype` -3 opens and -4 closes an event, `time` is in seconds with a
//! fraction, `proc` is the processor. Events: -901 trace start/stop, -21 and
//! -27 send (begin data: bytes, tag, destination, destination process), -52
//! and -57 receive (end data: bytes, tag, source, source process).
//!
//! Model: one location per processor. Between trace start and stop a
//! processor is `busy` unless it is inside a send (`send`) or a receive
//! (`recv`), which are overhead: PICL's definition of busy (thesis §3.1).
//! Messages are matched in order per (source, destination, tag), from the
//! beginning of the send to the end of the receive. Other begin/end records
//! and other record types become marker events named after their numbers.

mod cut;
pub mod share;
pub mod stream;

use crate::phases;
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use rayon::prelude::*;

use super::ReadOptions;
use super::decimal::{POW10, digits_u64, leading_field, lookahead, parse_scaled, take_digits};
use super::input::{self, Block, LineBlocks};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::{IntervalBlock, RawMessage};
use crate::model::matching::match_into;
use crate::model::{
    BuildOptions, Format, LocId, LocationKind, NestedSlice, StateClass, StateId, Time, TimeUnit,
    Trace, TraceBuilder, flatten_nested,
};
use cut::{Ctx, Key, Matcher, P2p, Proc, Refusal};

/// The largest processor number accepted.
pub const MAX_PROC: i64 = 1 << 24;
/// The largest `ndata` accepted.
pub const MAX_NDATA: i64 = 1 << 20;

/// Whether the first line of `head` looks like a PICL record.
pub fn looks_like_picl(head: &[u8]) -> bool {
    let line = head.split(|&c| c == b'\n').next().unwrap_or(&[]);
    let Ok(line) = std::str::from_utf8(line) else {
        return false;
    };
    let t: Vec<&str> = line.split_whitespace().collect();
    t.len() >= 6
        && t[0].parse::<i64>().is_ok()
        && t[1].parse::<i64>().is_ok()
        && parse_scaled(t[2].as_bytes(), 9).is_ok()
        && t[3].parse::<i64>().is_ok()
        && t[4].parse::<i64>().is_ok()
        && t[5].parse::<i64>().is_ok()
}

/// One record, in 48 bytes (the holding reader keeps every record of the
/// file until each processor's run is cut into intervals; `reduce` sends
/// them, as bytes, to the process that cuts their processor).
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Rec {
    time: i64,
    seq: u64,
    /// The data values of send begins and receive ends: bytes, tag, peer
    /// (a peer outside `i32` is kept as -1: no processor).
    bytes: i64,
    tag: i64,
    proc_: u32,
    rectype: i32,
    event: i32,
    peer: i32,
}

const _: () = assert!(std::mem::size_of::<Rec>() == 48);

impl Rec {
    /// A record of a line whose processor is checked (within
    /// `0..MAX_PROC`), with its first three data values (bytes, tag,
    /// peer; zeros where the line has fewer).
    fn new(time: i64, seq: u64, proc_: i64, rectype: i32, event: i32, data: [i64; 3]) -> Rec {
        Rec {
            time,
            seq,
            bytes: data[0],
            tag: data[1],
            proc_: proc_ as u32,
            rectype,
            event,
            peer: i32::try_from(data[2]).unwrap_or(-1),
        }
    }
}

#[derive(Default)]
struct Chunk {
    recs: Vec<Rec>,
    error: Option<(Position, String)>,
    truncated: bool,
}

/// A decimal integer of at most 19 digits within i64, optionally signed (every
/// field of a PICL record in practice); `None` for anything else, which
/// `str::parse` then judges.
fn small_int(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    // beyond i64 (only -2^63 fits, as a negative): `str::parse` judges
    let v = i64::try_from(digits_u64(digits)?).ok()?;
    Some(if neg { -v } else { v })
}

/// A field as an integer.
fn int(t: &str) -> Option<i64> {
    small_int(t).or_else(|| t.parse().ok())
}

fn parse_line(line: &str, seq: u64) -> std::result::Result<Option<Rec>, String> {
    let mut it = line.split_ascii_whitespace();
    let Some(first) = it.next() else {
        return Ok(None);
    };
    let names = [
        "record type",
        "event",
        "time",
        "processor",
        "process",
        "ndata",
    ];
    let next_int = |idx: usize, tok: Option<&str>| -> std::result::Result<i64, String> {
        let tok = tok.ok_or_else(|| {
            format!(
                "expected {} (field {}), found the end of the line",
                names[idx],
                idx + 1
            )
        })?;
        int(tok).ok_or_else(|| {
            format!(
                "expected {} (field {}) as an integer, found '{tok}'",
                names[idx],
                idx + 1
            )
        })
    };
    let rectype = next_int(0, Some(first))?;
    let event = next_int(1, it.next())?;
    let ttok = it
        .next()
        .ok_or("expected time (field 3), found the end of the line")?;
    let time = parse_scaled(ttok.as_bytes(), 9).map_err(|e| {
        format!(
            "expected time (field 3) in seconds, found '{ttok}' ({})",
            e.describe()
        )
    })?;
    if time < 0 {
        return Err(format!(
            "expected a non-negative time (field 3), found '{ttok}'"
        ));
    }
    let proc_ = next_int(3, it.next())?;
    if !(0..MAX_PROC).contains(&proc_) {
        return Err(format!(
            "expected a processor number in 0..{MAX_PROC} (field 4), found {proc_}"
        ));
    }
    let _process = next_int(4, it.next())?;
    let ndata = next_int(5, it.next())?;
    if !(0..=MAX_NDATA).contains(&ndata) {
        return Err(format!(
            "expected a data count in 0..={MAX_NDATA} (field 6), found {ndata}"
        ));
    }
    let mut data = [0i64; 3];
    if ndata > 0 {
        let fmt = it
            .next()
            .ok_or("expected a data format (field 7), found the end of the line")?;
        if int(fmt).is_none() {
            return Err(format!(
                "expected a data format code (field 7), found '{fmt}'"
            ));
        }
        for k in 0..ndata as usize {
            let tok = it
                .next()
                .ok_or_else(|| format!("expected {ndata} data value(s), found {k}"))?;
            if let Some(slot) = data.get_mut(k) {
                *slot = match int(tok) {
                    Some(v) => v,
                    None => parse_scaled(tok.as_bytes(), 0).map_err(|_| {
                        format!("expected a number as data value {}, found '{tok}'", k + 1)
                    })?,
                };
            }
        }
    }
    if let Some(extra) = it.next() {
        return Err(format!(
            "expected {ndata} data value(s), found more ('{extra}')"
        ));
    }
    let rectype =
        i32::try_from(rectype).map_err(|_| format!("record type {rectype} out of range"))?;
    let event = i32::try_from(event).map_err(|_| format!("event {event} out of range"))?;
    Ok(Some(Rec::new(time, seq, proc_, rectype, event, data)))
}

/// A cursor over the fields of one line, for [`parse_line_fast`].
struct Fields<'a> {
    b: &'a [u8],
    /// `b` and the bytes after it in its block (the next lines), for
    /// [`leading_field`]'s 16-byte loads near the end of the line: the
    /// line end is neither a digit nor a space, so a field it takes ends
    /// within `b`.
    ahead: &'a [u8],
    i: usize,
}

/// The bytes `split_ascii_whitespace` splits at.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0C' | b'\r')
}

impl<'a> Fields<'a> {
    /// At the first field of `b`.
    fn new(b: &'a [u8], ahead: &'a [u8]) -> Self {
        let ahead = lookahead(b, ahead);
        let mut f = Fields { b, ahead, i: 0 };
        f.skip_space();
        f
    }

    /// The digits at the cursor up to the `sep` that follows them, eight
    /// bytes at a time ([`leading_field`]): value, digits, and the
    /// position of `sep` (within the line).
    #[inline(always)]
    fn field_to(&self, sep: u8) -> Option<(u64, usize, usize)> {
        let (v, next) = leading_field(self.ahead, self.i, sep)?;
        (next <= self.b.len()).then(|| (v, next - 1 - self.i, next - 1))
    }

    #[inline(always)]
    fn skip_space(&mut self) {
        while self.b.get(self.i).is_some_and(|&c| is_space(c)) {
            self.i += 1;
        }
    }

    /// Past the spaces that end a field, if any; whether the field ended
    /// there (a space or the line's end).
    #[inline(always)]
    fn end_field(&mut self) -> bool {
        match self.b.get(self.i) {
            None => true,
            Some(&c) if is_space(c) => {
                self.i += 1;
                self.skip_space();
                true
            }
            Some(_) => false,
        }
    }

    /// The next field as `-?digits` (at most 18), and past the spaces
    /// after it: the end of one field and the start of the next are one
    /// look at the byte after its digits.
    #[inline(always)]
    fn int(&mut self) -> Option<i64> {
        let neg = self.b.get(self.i) == Some(&b'-');
        self.i += neg as usize;
        let (mut v, mut n) = (0u64, 0usize);
        take_digits(self.b, &mut self.i, &mut v, &mut n)?;
        if n == 0 || !self.end_field() {
            return None;
        }
        let v = v as i64; // at most 18 digits: below 2^63
        Some(if neg { -v } else { v })
    }

    /// The next field as `digits[.digits]` seconds (at most 18 digits, at
    /// most 9 after the point) in nanoseconds.
    #[inline(always)]
    fn seconds(&mut self) -> Option<i64> {
        // eight bytes at a time: the time is the one long field (the
        // others, of a few digits, take longer so than byte by byte)
        let at = self.i;
        if let Some((int, ni, dot)) = self.field_to(b'.') {
            self.i = dot + 1;
            if let Some((frac, nf, end)) = self.field_to(b' ')
                && ni + nf <= 18
                && nf <= 9
            {
                // the digits' value as the field-by-field path makes it
                self.i = end;
                self.end_field();
                let v = int * POW10[nf] + frac;
                return i64::try_from(v.checked_mul(POW10[9 - nf])?).ok();
            }
            self.i = at;
        }
        let (mut v, mut n) = (0u64, 0usize);
        take_digits(self.b, &mut self.i, &mut v, &mut n)?;
        let mut frac = 0usize;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            frac = take_digits(self.b, &mut self.i, &mut v, &mut n)?;
        }
        if n == 0 || frac > 9 || !self.end_field() {
            return None;
        }
        i64::try_from(v.checked_mul(10u64.pow(9 - frac as u32))?).ok()
    }
}

/// [`parse_line`] of the records traces write, straight from the bytes:
/// every field a plain decimal within the ranges `parse_line` accepts.
/// `None` for anything else (a sign `+`, an exponent, a data value with a
/// fraction, a blank line, text that is not ASCII, an error), which
/// `parse_line` then judges; where this gives a record, it is the one
/// `parse_line` gives (test). The `str` path's tokenizer and the checks
/// for its messages took 43 % of a one-core read (`perf`).
///
/// `ahead` is `line` and the rest of its block (or just `line`).
fn parse_line_fast(line: &[u8], ahead: &[u8], seq: u64) -> Option<Rec> {
    let mut f = Fields::new(line, ahead);
    let rectype = i32::try_from(f.int()?).ok()?;
    let event = i32::try_from(f.int()?).ok()?;
    let time = f.seconds()?;
    let proc_ = f.int()?;
    if !(0..MAX_PROC).contains(&proc_) {
        return None;
    }
    f.int()?; // the process
    let ndata = f.int()?;
    if !(0..=MAX_NDATA).contains(&ndata) {
        return None;
    }
    let mut data = [0i64; 3];
    if ndata > 0 {
        f.int()?; // the data format
        for k in 0..ndata as usize {
            let v = f.int()?;
            if let Some(slot) = data.get_mut(k) {
                *slot = v;
            }
        }
    }
    if f.i != line.len() {
        return None;
    }
    Some(Rec::new(time, seq, proc_, rectype, event, data))
}

fn parse_block(block: &Block) -> Chunk {
    let mut recs = Vec::with_capacity(memchr::memchr_iter(b'\n', &block.data).count() + 1);
    let (error, truncated) = parse_lines(block, |r| recs.push(r));
    Chunk {
        // grouped by processor, in file order within each (lines are unique)
        recs: group_by_proc(recs),
        error,
        truncated,
    }
}

/// What the first pass of a stream needs of a block: its processors
/// (increasing, once each), its latest time, and its first malformed line
/// unless that is the file's broken-off last one (the second pass repairs
/// it).
struct Surveyed {
    procs: Vec<u32>,
    max_time: i64,
    error: Option<(Position, String)>,
}

/// [`parse_block`] without keeping the records (nor grouping them).
fn survey_block(block: &Block) -> Surveyed {
    let mut procs = Vec::new();
    let mut max_time = 0i64;
    let (error, truncated) = parse_lines(block, |r| {
        max_time = max_time.max(r.time);
        if procs.last() != Some(&r.proc_) {
            procs.push(r.proc_);
        }
    });
    procs.sort_unstable();
    procs.dedup();
    Surveyed {
        procs,
        max_time,
        error: if truncated { None } else { error },
    }
}

/// Parses the lines of `block`, handing each record to `each` in file
/// order: the first malformed line (where, what is wrong), and whether it
/// is the file's last line broken off.
fn parse_lines(block: &Block, mut each: impl FnMut(Rec)) -> (Option<(Position, String)>, bool) {
    for (line_no, byte, line) in block.lines() {
        let ahead = block.from_byte(byte).unwrap_or(line);
        if let Some(r) = parse_line_fast(line, ahead, line_no) {
            each(r);
            continue;
        }
        let pos = Position {
            line: Some(line_no),
            byte: Some(byte),
        };
        let Ok(text) = std::str::from_utf8(line) else {
            return (
                Some((pos, "expected text, found invalid UTF-8".into())),
                false,
            );
        };
        match parse_line(text, line_no) {
            Ok(Some(r)) => each(r),
            Ok(None) => {}
            Err(msg) => {
                let truncated = block.ends_unterminated()
                    && byte + line.len() as u64 == block.first_byte + block.data.len() as u64;
                return (Some((pos, msg)), truncated);
            }
        }
    }
    (None, false)
}

// each thread's counts and scratch for `group_by_proc`, kept from block to
// block (a vector of each per block would leave holes in the heap as blocks
// come and go) until the read is done (`release_group_scratch`)
thread_local! {
    static AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    static SCRATCH: std::cell::RefCell<Vec<Rec>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Frees every pool thread's [`group_by_proc`] counts and scratch, once the
/// records are read: kept, they stayed to the end of the model's build,
/// some 0.5 MiB a thread at 65,536 processors (256 KiB of counts and a
/// block's records), 8 MiB on 16 threads. Waits for every thread of the
/// pool: for after the read's parallel steps.
fn release_group_scratch() {
    rayon::broadcast(|_| {
        AT.take();
        SCRATCH.take();
    });
}

/// `recs` (in file order) grouped by processor in increasing order, file
/// order kept within each: a counting sort when the processor numbers are
/// no more than 16 times the records plus 65,536 (as in every trace of one
/// run), a comparison sort otherwise. (A block of 256 KiB, each thread's
/// at 16 threads, holds some 8,700 records of a 65,536-processor trace: it
/// was sorted by comparison under the former bound of twice the records,
/// some 6 % of a 16-thread read's CPU time.)
fn group_by_proc(mut recs: Vec<Rec>) -> Vec<Rec> {
    /// The most counts a thread keeps between blocks (512 KiB).
    const AT_KEPT: usize = 1 << 17;
    let Some(max) = recs.iter().map(|r| r.proc_ as usize).max() else {
        return recs;
    };
    if recs.windows(2).all(|w| w[0].proc_ <= w[1].proc_) {
        return recs;
    }
    if max > 16 * recs.len() + (1 << 16) || recs.len() > u32::MAX as usize {
        recs.sort_unstable_by_key(|r| (r.proc_, r.seq));
        return recs;
    }
    AT.with_borrow_mut(|at| {
        // where each processor's records start in the output
        at.clear();
        at.resize(max + 2, 0);
        for r in &recs {
            at[r.proc_ as usize + 1] += 1;
        }
        for p in 1..at.len() {
            at[p] += at[p - 1];
        }
        SCRATCH.with_borrow_mut(|out| {
            out.clear();
            out.extend_from_slice(&recs);
            for r in out.iter() {
                let slot = &mut at[r.proc_ as usize];
                recs[*slot as usize] = *r;
                *slot += 1;
            }
            if out.capacity() > 4 * out.len().max(1 << 16) {
                // a block far larger than the usual: not kept
                *out = Vec::new();
            }
        });
        if at.capacity() > AT_KEPT {
            // sparse numbers: counts of more processors than usual are
            // not kept by the thread
            *at = Vec::new();
        }
    });
    recs
}

fn is_send(e: i32) -> bool {
    e == -21 || e == -27
}
fn is_recv(e: i32) -> bool {
    e == -52 || e == -57
}

/// The states a processor's records are cut into.
#[derive(Clone, Copy)]
struct ProcStates {
    busy: StateId,
    send: StateId,
    recv: StateId,
}

/// What one processor's records (sorted by time, then line) give.
#[derive(Default)]
struct ProcRun {
    proc_: u32,
    /// The state intervals, flattened.
    flat: IntervalBlock,
    /// Other records: (time, record type, event).
    events: Vec<(Time, i32, i32)>,
    /// Send begins and receive ends: ((source, destination, tag), time, bytes).
    sends: Vec<((u32, u32, i64), u64, u64)>,
    recvs: Vec<((u32, u32, i64), u64, u64)>,
    /// Records earlier than one before them in the file, and the first
    /// one's line.
    unsorted: u64,
    first_unsorted: Option<u64>,
    unmatched_end: u64,
    unclosed: u64,
    first_bad: Option<u64>,
}

/// Records earlier than a record before them (`rs` in file order): how
/// many, and the first one's line.
fn unsorted_in<'a>(rs: impl Iterator<Item = &'a Rec>) -> (u64, Option<u64>) {
    let (mut n, mut first) = (0u64, None);
    let mut latest = i64::MIN;
    for r in rs {
        if r.time < latest {
            n += 1;
            first.get_or_insert(r.seq);
        } else {
            latest = r.time;
        }
    }
    (n, first)
}

/// One processor's records, sorted by time then line: busy between trace
/// start and stop except inside sends and receives, the send begins and
/// receive ends for matching, and the other records as events.
fn proc_run(p: u32, pieces: &[&[Rec]], st: ProcStates, loc: LocId) -> ProcRun {
    let rs = || pieces.iter().flat_map(|s| s.iter());
    let mut out = ProcRun {
        proc_: p,
        ..Default::default()
    };
    let (Some(first), Some(last)) = (rs().next(), rs().next_back()) else {
        return out;
    };
    let start = rs()
        .find(|r| r.rectype == -3 && r.event == -901)
        .map(|r| r.time);
    let stop = rs()
        .rev()
        .find(|r| r.rectype == -4 && r.event == -901)
        .map(|r| r.time);
    let t0 = start.unwrap_or(first.time);
    let t1 = stop.unwrap_or(last.time);
    // exact sizes up front (no growth by doubling while every record is
    // still held): a slice per begin besides the busy one
    let (mut begins, mut send_begins, mut recv_ends, mut others) = (0usize, 0usize, 0usize, 0usize);
    for r in rs() {
        match (r.rectype, r.event) {
            (_, -901) => {}
            (-3, e) if is_send(e) || is_recv(e) => {
                begins += 1;
                send_begins += is_send(e) as usize;
            }
            (-4, e) if is_send(e) || is_recv(e) => recv_ends += is_recv(e) as usize,
            _ => others += 1,
        }
    }
    out.sends.reserve_exact(send_begins);
    out.recvs.reserve_exact(recv_ends);
    out.events.reserve_exact(others);
    let mut slices = Vec::with_capacity(1 + begins);
    slices.push(NestedSlice {
        start: t0 as Time,
        end: t1.max(t0) as Time,
        state: st.busy,
        seq: 0,
    });
    let mut open: Vec<(i32, i64)> = Vec::new(); // (event, begin time)
    for r in rs() {
        match (r.rectype, r.event) {
            (_, -901) => {}
            (-3, e) if is_send(e) || is_recv(e) => {
                open.push((e, r.time));
                if is_send(e) {
                    let dst = r.peer as i64;
                    if (0..MAX_PROC).contains(&dst) {
                        out.sends.push((
                            (p, dst as u32, r.tag),
                            r.time as u64,
                            r.bytes.max(0) as u64,
                        ));
                    }
                }
            }
            (-4, e) if is_send(e) || is_recv(e) => {
                match open.iter().rposition(|(oe, _)| *oe == e) {
                    Some(k) => {
                        let (_, bt) = open.remove(k);
                        slices.push(NestedSlice {
                            start: bt as Time,
                            end: r.time as Time,
                            state: if is_send(e) { st.send } else { st.recv },
                            seq: r.seq,
                        });
                    }
                    None => {
                        out.unmatched_end += 1;
                        out.first_bad.get_or_insert(r.seq);
                    }
                }
                if is_recv(e) {
                    let srcp = r.peer as i64;
                    if (0..MAX_PROC).contains(&srcp) {
                        out.recvs.push((
                            (srcp as u32, p, r.tag),
                            r.time as u64,
                            r.bytes.max(0) as u64,
                        ));
                    }
                }
            }
            (rt, e) => out.events.push((r.time as Time, rt, e)),
        }
    }
    for (e, bt) in open {
        out.unclosed += 1;
        out.first_bad.get_or_insert(first.seq);
        slices.push(NestedSlice {
            start: bt as Time,
            end: t1.max(bt) as Time,
            state: if is_send(e) { st.send } else { st.recv },
            seq: u64::MAX,
        });
    }
    let mut flat = Vec::with_capacity(2 * slices.len()); // n nested slices flatten to at most 2n - 1
    flatten_nested(&mut slices, &mut flat);
    out.flat = IntervalBlock::of_location(loc, &flat);
    out
}

/// A block's parse error: repaired when a gzip stream that broke off
/// truncated its last record, an error otherwise.
fn repair_truncated(
    b: &mut TraceBuilder,
    damage: &input::DamageHandle,
    path: &Path,
    truncated: bool,
    pos: Position,
    msg: String,
) -> Result<()> {
    if !truncated {
        return Err(Error::parse(path, pos, msg));
    }
    // a gzip stream that broke off is the cause: said first
    damage.report(&mut b.diagnostics, path, "records")?;
    b.diagnostics.repair("truncated-record", path, pos, 1, || {
        format!("the last record is incomplete ({msg}); skipped")
    })
}

/// The repairs of cutting the processors' records: ends without a begin
/// and begins never ended, from each processor's (unmatched ends,
/// unclosed begins, first such line), in processor order.
fn report_cut(
    b: &mut TraceBuilder,
    path: &Path,
    procs: impl IntoIterator<Item = (u64, u64, Option<u64>)>,
) -> Result<()> {
    let (mut unmatched_end, mut unclosed, mut first_bad) = (0u64, 0u64, None);
    for (u, c, f) in procs {
        unmatched_end += u;
        unclosed += c;
        first_bad = first_bad.or(f);
    }
    let pos = first_bad.map_or(Position::none(), Position::line);
    b.diagnostics
        .repair("unmatched-end", path, pos, unmatched_end, || {
            format!("{unmatched_end} end record(s) of a send or receive without a begin; ignored")
        })?;
    b.diagnostics
        .repair("unclosed-begin", path, pos, unclosed, || {
            format!("{unclosed} send or receive begin record(s) never ended; closed at trace stop")
        })
}

/// The repair of sends and receives left without a partner.
fn report_unmatched_messages(b: &mut TraceBuilder, path: &Path, unmatched: u64) -> Result<()> {
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
    )
}

/// The states of a PICL trace: busy, send and receive.
fn add_states(b: &mut TraceBuilder) -> ProcStates {
    let busy = b.states.add("busy", StateClass::Busy, Some([0, 160, 0]), 0);
    let send = b
        .states
        .add("send", StateClass::Overhead, Some([220, 40, 40]), 1);
    let recv = b
        .states
        .add("recv", StateClass::Overhead, Some([240, 160, 20]), 2);
    ProcStates { busy, send, recv }
}

/// The event type of records of type `rt` and event `e` that are not
/// states or messages.
fn kind_name(rt: i32, e: i32) -> String {
    match rt {
        -3 => format!("begin {e}"),
        -4 => format!("end {e}"),
        _ => format!("record {rt} event {e}"),
    }
}

/// Reads the PICL trace at `path`. A file is read once, each processor's
/// records cut into states as they come (`cut`), so that the records
/// are never held; a file whose records a cut cannot take (a processor's
/// records out of time order, its trace start after other records of it,
/// a send or receive from its first record past its last trace stop) is
/// read again by [`read_holding`], as is anything that cannot be read
/// twice (a pipe).
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if regular && let Some(t) = read_cutting(path, opts)? {
        return Ok(t);
    }
    read_holding(path, opts)
}

/// The block of text of an in-memory read: half the other readers'
/// ([`input::BLOCK_SIZE`]), so that a batch holds 2 MiB of text from two
/// threads on (1 MiB on one) where it held 4. Two batches are in flight,
/// each with its text and its records (1.6 times the text), at the read's
/// peak: at 65,536 processors (`synth bcast -p 65536 --reps 20`, 268 MB)
/// 163.4 → 157.1 MiB on two threads and 170.4 → 162.8 on four, over a
/// model of 126; the time unchanged (0.97–1.03×, paired). The consumer
/// takes up to about [`input::BLOCK_SIZE`] of a batch at a time, as
/// before.
const BLOCK: usize = 1 << 20;

/// [`read`] in one pass; `None` when a processor's records cannot be cut
/// as they come. Each block's processors are cut in parallel, in shares of
/// about equal records, one [`Ctx`] per thread; what the shares give is
/// then taken in order (intervals, events, sends and receives to match).
fn read_cutting(path: &Path, opts: &ReadOptions) -> Result<Option<Trace>> {
    let mut blocks = LineBlocks::with_block_size(input::open(path)?, BLOCK);
    let damage = blocks.damage_handle();
    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    let st = add_states(&mut b);
    let states = [st.busy, st.send, st.recv];
    let mut ctxs: Vec<Ctx> = (0..rayon::current_num_threads().max(1))
        .map(|_| Ctx::new(states, true))
        .collect();
    // sends and receives matched in shards by key, one per thread
    let mut matcher: Vec<Matcher> = (0..ctxs.len()).map(|_| Matcher::default()).collect();
    // a message is a send's line and a receive's: each has six fields at
    // least, 11 bytes and its end
    super::reserve_messages(&mut b, &blocks, 24);
    // the processors as they first come: their locations, and the event
    // kinds, are numbered so until the end
    let mut procs: Vec<Proc> = Vec::new();
    let mut index = ProcIndex::default();
    let mut kinds: Vec<(i32, i32)> = Vec::new();
    let mut kind_of: HashMap<(i32, i32), u32> = HashMap::default();
    let mut refused = false;
    let records = phases::span("picl: records (read, parse, cut, hand over)");
    {
        let b = &mut b;
        let procs = &mut procs;
        let refused = &mut refused;
        let (blocks, damage) = (&mut blocks, &damage);
        let (index, ctxs, matcher) = (&mut index, &mut ctxs, &mut matcher);
        let (kinds, kind_of) = (&mut kinds, &mut kind_of);
        // the blocks of a batch consumed some at a time, about a block's
        // bytes of text (`BLOCK_SIZE`): the cut's shares and the
        // matching's shards cost their setting up each time, however small
        // each thread's block is (they get smaller with more threads:
        // `block_per_thread`), while the parsed records of what is taken
        // together are held at once
        let mut take = move |chunks: &mut [Chunk]| -> Result<()> {
            for chunk in chunks.iter_mut() {
                if let Some((pos, msg)) = chunk.error.take() {
                    repair_truncated(b, damage, path, chunk.truncated, pos, msg)?;
                }
            }
            let runs_phase = phases::span("picl: runs by processor");
            let mut runs = runs_by_processor(chunks, procs, index);
            drop(runs_phase);
            let cut_phase = phases::span("picl: cut (all threads)");
            let Ok(cut) = cut_block(procs, &mut runs, ctxs) else {
                *refused = true;
                // ends the reading: the file is read again
                return Err(Error::Invalid(String::new()));
            };
            drop(cut_phase);
            let _p = phases::span("picl: matching, hand over");
            for intervals in cut {
                b.add_interval_block(intervals);
            }
            take_cut(b, ctxs, matcher, index, kinds, kind_of);
            Ok(())
        };
        let mut give_back = crate::memory::GiveBack::growing(RECORDS_TRIM_BYTES, 8);
        on_a_worker(move || {
            blocks.for_each_batch(parse_block, |blocks, mut chunks| {
                let mut from = 0;
                while from < chunks.len() {
                    let mut to = from;
                    let mut bytes = 0;
                    while to < chunks.len() && bytes < input::BLOCK_SIZE {
                        bytes += blocks[to].data.len();
                        to += 1;
                    }
                    take(&mut chunks[from..to])?;
                    // their records are done with
                    let mut freed = 0;
                    for c in &mut chunks[from..to] {
                        freed += c.recs.capacity() * std::mem::size_of::<Rec>();
                        c.recs = Vec::new();
                    }
                    give_back.freed(freed);
                    from = to;
                }
                Ok(())
            })
        })
    }
    .or_else(|e| if refused { Ok(()) } else { Err(e) })?;
    drop(records);
    release_group_scratch();
    if refused {
        return Ok(None);
    }
    // what the last records took, and the threads' scratch, before the
    // processors' last intervals and their locations come
    crate::memory::return_freed_memory();
    let ends = phases::span("picl: processors' ends, locations, kinds");
    damage.report(&mut b.diagnostics, path, "records")?;
    if procs.is_empty() {
        return Err(Error::parse(
            path,
            Position::line(1),
            "expected PICL records, found none",
        ));
    }
    // processor order from here on
    procs.sort_unstable_by_key(|p| p.proc_);
    // each processor finished from the last, and its state freed as it
    // goes (216 bytes a processor, 13.5 MiB at 65,536: with the model's
    // last intervals and locations beside it, that was the read's peak at
    // one event a processor); of it only its number and location are
    // kept, and its faults where it has any (few do). What the finishing
    // gives is handed over in blocks: the last intervals of 65,536
    // processors held at once, and their copy, would add 6 MB to the peak
    let mut numbered: Vec<(u32, LocId)> = Vec::with_capacity(procs.len());
    let mut faulty: Vec<(u64, u64, Option<u64>)> = Vec::new();
    {
        let c = &mut ctxs[0];
        let mut hand_over = |b: &mut TraceBuilder, c: &mut Ctx| {
            b.add_interval_block(IntervalBlock::of_runs(&c.out));
            c.out.clear();
            take_cut(
                b,
                std::slice::from_mut(c),
                &mut matcher,
                &index,
                &mut kinds,
                &mut kind_of,
            );
        };
        while let Some(mut p) = procs.pop() {
            if p.finish(c).is_err() {
                return Ok(None);
            }
            let faults = p.faults();
            if faults != (0, 0, None) {
                faulty.push(faults);
            }
            numbered.push((p.proc_, p.loc));
            if c.out.len() >= 1 << 15 {
                hand_over(&mut b, c);
            }
            if procs.len().is_multiple_of(FREED_PROCS) {
                procs.shrink_to_fit();
            }
        }
        hand_over(&mut b, c);
    }
    drop(procs);
    // processor order again
    numbered.reverse();
    faulty.reverse();
    let unmatched: u64 = matcher.iter().map(Matcher::unmatched).sum();
    drop((ctxs, matcher, index, kind_of));
    let mut final_loc = vec![0 as LocId; numbered.len()];
    b.locations.locations.reserve_exact(numbered.len());
    for &(proc_, loc) in &numbered {
        final_loc[loc as usize] = b.locations.add(
            compact_str::format_compact!("proc {proc_}"),
            LocationKind::Thread,
            None,
            proc_ as i64,
        );
    }
    b.renumber_raw_locations(|l| *l = final_loc[*l as usize]);
    drop(final_loc);
    // the event kinds numbered as the reader that holds the records
    // numbers them: by processor, then in order
    let mut first = vec![(u32::MAX, usize::MAX); kinds.len()];
    for (i, e) in b.events.iter().enumerate() {
        let p = numbered[e.loc as usize].0;
        let f = &mut first[e.kind as usize];
        *f = (*f).min((p, i));
    }
    let mut order: Vec<usize> = (0..kinds.len()).collect();
    order.sort_unstable_by_key(|&k| first[k]);
    let mut kind = vec![0u32; kinds.len()];
    for k in order {
        kind[k] = b.event_types.intern(&kind_name(kinds[k].0, kinds[k].1));
    }
    b.events
        .par_iter_mut()
        .for_each(|e| e.kind = kind[e.kind as usize]);
    report_cut(&mut b, path, faulty)?;
    report_unmatched_messages(&mut b, path, unmatched)?;
    drop(numbered);
    drop(ends);
    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    Ok(Some(t))
}

/// Processors finished between two shrinks of their list (a shrink gives
/// the list's freed end back: at most 4,096 finished processors' 864 KiB
/// stay beside the model).
const FREED_PROCS: usize = 4096;

/// The parsed records' bytes freed between two calls of
/// [`crate::memory::return_freed_memory`] while a file is cut, or an
/// eighth of those freed before if more (a call takes longer as the heap
/// grows, and holds the parsing threads up). The records of a batch are
/// parsed on every thread, each into its own arena, and freed once the
/// batch is cut: glibc keeps what they took resident (at 65,536
/// processors some 30 MB at the end of the records, a fifth of the peak).
const RECORDS_TRIM_BYTES: usize = 16 << 20;

/// Runs `f` on a thread of rayon's pool. The consumer of a batch runs on
/// the thread that calls `for_each_parallel` while the pool parses the
/// next batch; from a thread outside the pool, the consumer's own parallel
/// work (the cut) is queued behind that parse and waits for it. From a
/// thread of the pool, the consumer takes its own work at once, and the
/// others join it as they come free.
fn on_a_worker<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        f()
    } else {
        rayon::join(f, || ()).0
    }
}

/// Each block's runs (a processor's records each: a block's records come
/// grouped by processor) in file order, with their processor's index;
/// processors met for the first time are numbered here, in file order (a
/// new entry in `procs` and `index` each). The runs and the lookups of
/// their processors are made on all threads, the numbering of new
/// processors on this one, only where a batch has any. (Made on one
/// thread, with the grouping of each processor's runs that [`cut_block`]
/// now leaves to its shares, they took 0.15 s of a 1.7 s one-thread read
/// of a 320 MB trace of 65,536 processors, a run a record: work that one
/// thread did whatever the threads, while the others parsed the next
/// batch.)
fn runs_by_processor<'a>(
    chunks: &'a [Chunk],
    procs: &mut Vec<Proc>,
    index: &mut ProcIndex,
) -> Vec<(usize, &'a [Rec])> {
    const NEW: usize = usize::MAX;
    let known = &*index;
    let mut runs: Vec<(usize, &[Rec])> = chunks
        .par_iter()
        .flat_map_iter(|chunk| {
            chunk
                .recs
                .chunk_by(|a, b| a.proc_ == b.proc_)
                .map(|run| (known.get(run[0].proc_).unwrap_or(NEW), run))
        })
        .collect();
    if runs.par_iter().any(|r| r.0 == NEW) {
        for r in runs.iter_mut().filter(|r| r.0 == NEW) {
            let p = r.1[0].proc_;
            r.0 = index.get(p).unwrap_or_else(|| {
                procs.push(Proc::new(procs.len() as LocId, p));
                index.set(p, procs.len() - 1);
                procs.len() - 1
            });
        }
    }
    runs
}

/// Cuts one batch's runs (a processor's records each, by processor index
/// `i`, in file order: a processor has a run in each block it has records
/// in) in parallel: in as many shares of about equal records as there are
/// `ctxs`, where the batch is large enough, each share the runs of a range
/// of processors. The intervals of each share, in the order of `ctxs` (a
/// block each, of exactly their size: a context's buffer is kept for the
/// next batch).
fn cut_block(
    procs: &mut [Proc],
    runs: &mut [(usize, &[Rec])],
    ctxs: &mut [Ctx],
) -> std::result::Result<Vec<IntervalBlock>, Refusal> {
    // stable: a processor's runs stay in file order. Each block's runs
    // come sorted by processor number, often the order of first
    // appearance, and a stable sort merges such runs in linear time where
    // the unstable one sorted them anew (5 % of a 16-thread read's time)
    runs.par_sort_by_key(|r| r.0);
    let bounds = share_bounds(runs, ctxs.len());
    // each share with the processors of its range (indices from `base`)
    type Part<'p, 'r, 'a> = (&'p mut [Proc], usize, &'r [(usize, &'a [Rec])]);
    let mut parts: Vec<Part> = Vec::with_capacity(bounds.len());
    let (mut rest, mut base) = (procs, 0usize);
    for w in bounds.windows(2) {
        let share = &runs[w[0]..w[1]];
        // sorted: the first and last runs' processors bound the share's
        let (lo, hi) = match (share.first(), share.last()) {
            (Some(a), Some(z)) => (a.0, z.0 + 1),
            _ => (base, base),
        };
        let (mine, tail) = std::mem::take(&mut rest)[lo - base..].split_at_mut(hi - lo);
        parts.push((mine, lo, share));
        (rest, base) = (tail, hi);
    }
    let cut = |((procs, base, share), c): (Part, &mut Ctx)| {
        for group in share.chunk_by(|a, b| a.0 == b.0) {
            let p = &mut procs[group[0].0 - base];
            for r in group.iter().flat_map(|run| run.1) {
                p.take(r, c)?;
            }
        }
        let block = IntervalBlock::of_runs(&c.out);
        c.out.clear();
        Ok(block)
    };
    if parts.len() == 1 {
        parts.into_iter().zip(ctxs.iter_mut()).map(cut).collect()
    } else {
        parts
            .into_par_iter()
            .zip(ctxs.par_iter_mut())
            .map(cut)
            .collect()
    }
}

/// Where the shares of `runs` (sorted by processor) begin, and the end: at
/// most `most` shares (one from the first 4,096 records, another for each
/// 4,096 more), of about equal records, each the runs of whole
/// processors. A share ends after the processor whose records reach its
/// part of the batch's. The records are summed in pieces on all threads,
/// and only the pieces where a share ends are walked run by run.
fn share_bounds(runs: &[(usize, &[Rec])], most: usize) -> Vec<usize> {
    let n = runs.len();
    let piece = n.div_ceil(64).max(1024);
    let sums: Vec<usize> = runs
        .par_chunks(piece)
        .map(|c| c.iter().map(|r| r.1.len()).sum())
        .collect();
    let records: usize = sums.iter().sum();
    let shares = most.min(records / 4096).max(1);
    let mut bounds = vec![0];
    // the piece the next share ends in, and the records before it
    let (mut i, mut before) = (0usize, 0usize);
    for k in 1..shares {
        let want = (records * k).div_ceil(shares);
        while i < sums.len() && before + sums[i] < want {
            before += sums[i];
            i += 1;
        }
        if i == sums.len() {
            break;
        }
        // the run whose records reach `want`, within piece `i`
        let (mut at, mut done) = (i * piece, before);
        while at < n && done < want {
            done += runs[at].1.len();
            at += 1;
        }
        // and the rest of its processor's runs
        while at < n && runs[at].0 == runs[at - 1].0 {
            at += 1;
        }
        if at > bounds[bounds.len() - 1] && at < n {
            bounds.push(at);
        }
    }
    bounds.push(n);
    bounds
}

/// Where each processor's state is among those met so far, by processor
/// number: a table of pages of 4,096 processors, each made on first use (a
/// hash lookup per run of a block took 0.23 s of a 2.1 s one-core read at
/// 65,536 processors). Numbers are below [`MAX_PROC`], so the pages'
/// table holds at most 4,096 and the pages 64 MiB.
#[derive(Default)]
struct ProcIndex {
    /// Each processor's index + 1 (0: none).
    pages: Vec<Option<Box<[u32; PROC_PAGE]>>>,
}

const PROC_PAGE: usize = 4096;

impl ProcIndex {
    fn get(&self, proc_: u32) -> Option<usize> {
        let p = proc_ as usize;
        let page = self.pages.get(p / PROC_PAGE)?.as_ref()?;
        page[p % PROC_PAGE].checked_sub(1).map(|i| i as usize)
    }

    fn set(&mut self, proc_: u32, i: usize) {
        let p = proc_ as usize;
        if self.pages.len() <= p / PROC_PAGE {
            self.pages.resize_with(p / PROC_PAGE + 1, || None);
        }
        let page = self.pages[p / PROC_PAGE].get_or_insert_with(|| Box::new([0; PROC_PAGE]));
        // (fewer processors than `MAX_PROC`: an index below u32::MAX)
        page[p % PROC_PAGE] = i as u32 + 1;
    }
}

/// The shard of `matchers` that matches a key's sends and receives.
fn shard_of(key: &Key, shards: usize) -> usize {
    let h = (u64::from(key.0).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        ^ (u64::from(key.1).wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
        ^ (key.2 as u64).wrapping_mul(0x1656_67b1_9e37_79f9);
    ((h >> 32) as usize) % shards
}

/// Takes what `ctxs` cut besides the intervals into the builder
/// (locations and event kinds still numbered as they first came): their
/// other records as events, their sends and receives through the
/// `matchers` (a shard each by key, matched side by side when there are
/// several), the matched messages.
fn take_cut(
    b: &mut TraceBuilder,
    ctxs: &mut [Ctx],
    matchers: &mut [Matcher],
    index: &ProcIndex,
    kinds: &mut Vec<(i32, i32)>,
    kind_of: &mut HashMap<(i32, i32), u32>,
) {
    for c in ctxs.iter_mut() {
        if let Some(kept) = &mut c.kept {
            for (loc, t, rt, e) in kept.drain(..) {
                let k = *kind_of.entry((rt, e)).or_insert_with(|| {
                    kinds.push((rt, e));
                    kinds.len() as u32 - 1
                });
                b.event(loc, t, k, e as i64);
            }
        }
    }
    let shards = matchers.len();
    let message = |((s, d, tag), st, rt, bytes): (Key, u64, u64, u64)| {
        // both have records (a send, a receive): they have locations
        Some((
            index.get(s)? as LocId,
            index.get(d)? as LocId,
            st,
            rt,
            bytes,
            tag,
        ))
    };
    if shards == 1 {
        let m = &mut matchers[0];
        for c in ctxs.iter_mut() {
            m.apply(&mut c.ops);
        }
        for (s, d, st, rt, bytes, tag) in m.matched.drain(..).filter_map(message) {
            b.message(s, d, st, rt, bytes, tag);
        }
        return;
    }
    // each context's sends and receives to their shards, then each shard
    // takes its own from every context in turn (a processor's come in its
    // order: it is cut by one context a block)
    let routed: Vec<Vec<Vec<P2p>>> = ctxs
        .par_iter_mut()
        .map(|c| {
            let mut out: Vec<Vec<P2p>> = vec![Vec::new(); shards];
            for op in c.ops.drain(..) {
                out[shard_of(&op.1, shards)].push(op);
            }
            out
        })
        .collect();
    let mut per_shard: Vec<Vec<Vec<P2p>>> = (0..shards)
        .map(|_| Vec::with_capacity(routed.len()))
        .collect();
    for r in routed {
        for (s, ops) in r.into_iter().enumerate() {
            per_shard[s].push(ops);
        }
    }
    let matched: Vec<Vec<_>> = matchers
        .par_iter_mut()
        .zip(per_shard)
        .map(|(m, lists)| {
            for mut ops in lists {
                m.apply(&mut ops);
            }
            m.matched.drain(..).filter_map(message).collect()
        })
        .collect();
    for (s, d, st, rt, bytes, tag) in matched.into_iter().flatten() {
        b.message(s, d, st, rt, bytes, tag);
    }
}

/// Reads the PICL trace at `path` holding every record until each
/// processor's are cut (sorted by time where they are not in order): what
/// [`read`] does with files a cut as they come cannot take.
pub fn read_holding(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let mut blocks = LineBlocks::new(input::open(path)?);
    let damage = blocks.damage_handle();
    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    // the parsed blocks, each grouped by processor
    let mut chunks: Vec<Vec<Rec>> = Vec::new();
    let src = path.to_path_buf();
    {
        let b = &mut b;
        let chunks = &mut chunks;
        blocks.for_each_parallel(parse_block, |_blk, chunk| {
            if let Some((pos, msg)) = chunk.error {
                repair_truncated(b, &damage, &src, chunk.truncated, pos, msg)?;
            }
            if !chunk.recs.is_empty() {
                chunks.push(chunk.recs);
            }
            Ok(())
        })?;
    }
    damage.report(&mut b.diagnostics, path, "records")?;
    if chunks.is_empty() {
        return Err(Error::parse(
            path,
            Position::line(1),
            "expected PICL records, found none",
        ));
    }
    // each processor's records in file order: its runs in the blocks
    let mut pieces: HashMap<u32, Vec<&[Rec]>> = HashMap::default();
    for c in &chunks {
        for run in c.chunk_by(|a, b| a.proc_ == b.proc_) {
            pieces.entry(run[0].proc_).or_default().push(run);
        }
    }
    let mut runs: Vec<(u32, Vec<&[Rec]>)> = pieces.into_iter().collect();
    runs.sort_unstable_by_key(|r| r.0);

    // locations: one per processor, in processor order
    let mut loc_of: HashMap<u32, LocId> =
        HashMap::with_capacity_and_hasher(runs.len(), Default::default());
    for (p, _) in &runs {
        let id = b
            .locations
            .add(format!("proc {p}"), LocationKind::Thread, None, *p as i64);
        loc_of.insert(*p, id);
    }
    // each processor's records on their own, in parallel
    let states = add_states(&mut b);
    let done: Vec<ProcRun> = runs
        .into_par_iter()
        .map(|(p, pieces)| {
            let unsorted = unsorted_in(pieces.iter().flat_map(|s| s.iter()));
            let mut run = if unsorted.0 > 0 {
                // in time order, file order breaking ties (lines are unique)
                let mut rs: Vec<Rec> = pieces.iter().flat_map(|s| s.iter()).copied().collect();
                rs.sort_unstable_by_key(|r| (r.time, r.seq));
                proc_run(p, &[&rs], states, loc_of[&p])
            } else {
                proc_run(p, &pieces, states, loc_of[&p])
            };
            (run.unsorted, run.first_unsorted) = unsorted;
            run
        })
        .collect();
    drop(chunks);
    let unsorted: u64 = done.iter().map(|d| d.unsorted).sum();
    let first_unsorted = done.iter().filter_map(|d| d.first_unsorted).min();
    b.diagnostics.repair(
        "unsorted-records",
        &src,
        first_unsorted.map_or(Position::none(), Position::line),
        unsorted,
        || {
            format!(
                "{unsorted} record(s) earlier than the record before them on their processor; re-sorted by time"
            )
        },
    )?;
    let ends: Vec<_> = done
        .iter()
        .map(|d| (d.unmatched_end, d.unclosed, d.first_bad))
        .collect();
    let mut sends = Vec::with_capacity(done.iter().map(|d| d.sends.len()).sum());
    let mut recvs = Vec::with_capacity(done.iter().map(|d| d.recvs.len()).sum());
    let mut kinds: HashMap<(i32, i32), u32> = HashMap::default();
    for mut d in done {
        let loc = loc_of[&d.proc_];
        b.add_interval_block(std::mem::take(&mut d.flat));
        for &(t, rt, e) in &d.events {
            let kind = *kinds
                .entry((rt, e))
                .or_insert_with(|| b.event_types.intern(&kind_name(rt, e)));
            b.event(loc, t, kind, e as i64);
        }
        sends.extend_from_slice(&d.sends);
        recvs.extend_from_slice(&d.recvs);
    }
    report_cut(&mut b, &src, ends)?;

    // each pair made into the model's message where it is matched (one
    // of unknown processors counts as unmatched)
    let (messages, unmatched_msgs) = match_into(sends, recvs, |m| {
        let (s, d, tag) = m.key;
        Some(RawMessage {
            send: m.send_time,
            recv: m.recv_time,
            bytes: m.recv_bytes.max(m.send_bytes),
            tag,
            src: *loc_of.get(&s)?,
            dst: *loc_of.get(&d)?,
        })
    });
    b.add_messages(messages);
    report_unmatched_messages(&mut b, &src, unmatched_msgs)?;

    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace read by 1 to 5 threads gives one model, byte for byte:
    /// sends and receives matched in a shard per thread (keys with many
    /// messages in flight, receives before their sends, sends never
    /// received), processors spread over several blocks and numbered far
    /// apart (pages of the processor index), other records among them.
    #[test]
    fn one_thread_and_many_give_one_model() {
        let mut rng = crate::test_rng::XorShift(0x0000_9c1d_5eed);
        let procs: Vec<u32> = (0..120).map(|i| i * 37 + (i % 3) * 5000).collect();
        let mut lines: Vec<(u64, String)> = Vec::new();
        let sec = |t: u64| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000);
        for &p in &procs {
            lines.push((0, format!("-3 -901 {} {p} {p} 0", sec(0))));
            let mut t = 1_000u64;
            for _ in 0..1200 {
                t += 1 + rng.next() % 900;
                let peer = procs[(rng.next() % procs.len() as u64) as usize];
                let tag = rng.next() % 4;
                let bytes = [8, 64, 4096][(rng.next() % 3) as usize];
                let (a, b) = (sec(t), sec(t + 50));
                match rng.next() % 5 {
                    0 | 1 => {
                        lines.push((
                            t,
                            format!("-3 -21 {a} {p} {p} 4 2 {bytes} {tag} {peer} {peer}"),
                        ));
                        lines.push((t + 50, format!("-4 -21 {b} {p} {p} 0")));
                    }
                    2 | 3 => {
                        lines.push((t, format!("-3 -52 {a} {p} {p} 0")));
                        lines.push((
                            t + 50,
                            format!("-4 -52 {b} {p} {p} 4 2 {bytes} {tag} {peer} {peer}"),
                        ));
                    }
                    _ => lines.push((t, format!("-3 -77 {a} {p} {p} 0"))),
                }
                t += 60;
            }
            lines.push((t + 1, format!("-4 -901 {} {p} {p} 0", sec(t + 1))));
        }
        lines.sort_by_key(|l| l.0);
        let text: String = lines.iter().map(|l| format!("{}\n", l.1)).collect();
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("many.trf");
        std::fs::write(&path, text).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 3 * input::BLOCK_SIZE as u64);
        let model = |threads: usize| {
            let pool = crate::test_pool::pool(threads);
            let t = pool.install(|| read_cutting(&path, &ReadOptions::default()));
            serde_json::to_string(&t.unwrap().expect("cut as it comes")).unwrap()
        };
        let one = model(1);
        assert!(one.len() > 100_000);
        // from 5 threads on each thread's block is smaller than a block,
        // and a batch is consumed some blocks at a time (12: in groups of
        // 6, and a processor has runs in several blocks of a group)
        for threads in [2, 3, 5, 12] {
            assert!(model(threads) == one, "{threads} threads");
        }
    }

    /// Processors met for the first time are numbered in file order, on 1
    /// to 8 threads, whether or not some are known from before; each run
    /// is a block's records of one processor, in file order.
    #[test]
    fn runs_number_new_processors_in_file_order() {
        let rec = |proc_: u32, seq: u64| Rec {
            time: 0,
            seq,
            bytes: 0,
            tag: 0,
            proc_,
            rectype: -3,
            event: -77,
            peer: -1,
        };
        let mut rng = crate::test_rng::XorShift(0x005e_ed0f_7275);
        let mut seq = 0;
        let chunks: Vec<Chunk> = (0..40)
            .map(|_| {
                let mut recs: Vec<Rec> = (0..(rng.next() % 3000))
                    .map(|_| {
                        seq += 1;
                        rec((rng.next() % 5000) as u32 * 7, seq)
                    })
                    .collect();
                recs.sort_by_key(|r| (r.proc_, r.seq));
                Chunk {
                    recs,
                    error: None,
                    truncated: false,
                }
            })
            .collect();
        for threads in [1, 2, 3, 8] {
            for known in [0usize, 3, 700] {
                let (mut procs, mut index) = (Vec::new(), ProcIndex::default());
                // some processors numbered by an earlier batch
                for p in 0..known as u32 {
                    procs.push(Proc::new(p, p * 7 + 3));
                    index.set(p * 7 + 3, p as usize);
                }
                let runs = crate::test_pool::pool(threads)
                    .install(|| runs_by_processor(&chunks, &mut procs, &mut index));
                let mut want_procs: Vec<u32> = (0..known as u32).map(|p| p * 7 + 3).collect();
                let mut want = Vec::new();
                for c in &chunks {
                    for run in c.recs.chunk_by(|a, b| a.proc_ == b.proc_) {
                        let p = run[0].proc_;
                        let i = want_procs.iter().position(|&q| q == p).unwrap_or_else(|| {
                            want_procs.push(p);
                            want_procs.len() - 1
                        });
                        want.push((i, run.iter().map(|r| r.seq).collect::<Vec<_>>()));
                    }
                }
                let got: Vec<(usize, Vec<u64>)> = runs
                    .iter()
                    .map(|(i, run)| (*i, run.iter().map(|r| r.seq).collect()))
                    .collect();
                assert!(got == want, "{threads} threads, {known} known");
                let numbered: Vec<u32> = procs.iter().map(|p| p.proc_).collect();
                assert_eq!(numbered, want_procs, "{threads} threads, {known} known");
                assert!(
                    want_procs
                        .iter()
                        .enumerate()
                        .all(|(i, &p)| index.get(p) == Some(i))
                );
            }
        }
    }

    /// The shares of a batch's runs: from 0 to the end, increasing, each
    /// ending at a change of processor, at most as many as asked and one
    /// per 4,096 records, each at most its part of the records plus its
    /// last processor's (walking every run gives the same bounds).
    #[test]
    fn shares_end_at_processors_and_split_the_records_evenly() {
        let mut rng = crate::test_rng::XorShift(0x0005_4a7e_b0d5);
        let pool: Vec<Rec> = (0..50_000)
            .map(|i| Rec {
                time: 0,
                seq: i,
                bytes: 0,
                tag: 0,
                proc_: 0,
                rectype: -3,
                event: -77,
                peer: -1,
            })
            .collect();
        for case in 0..300 {
            // runs of 1 record mostly, some long; processors repeating
            let n = [0, 1, 5, 900, 5000, 40_000][case % 6];
            let mut runs: Vec<(usize, &[Rec])> = (0..n)
                .map(|_| {
                    let len = if rng.next().is_multiple_of(50) {
                        (rng.next() % 20_000) as usize + 1
                    } else {
                        (rng.next() % 3) as usize + 1
                    };
                    ((rng.next() % (n as u64 / 3 + 1)) as usize, &pool[..len])
                })
                .collect();
            runs.sort_by_key(|r| r.0);
            let most = [1, 2, 3, 16][(case / 6) % 4];
            let bounds = share_bounds(&runs, most);
            let records: usize = runs.iter().map(|r| r.1.len()).sum();
            let shares = most.min(records / 4096).max(1);
            assert!(
                bounds[0] == 0 && bounds[bounds.len() - 1] == n,
                "{bounds:?}"
            );
            assert!(
                bounds.windows(2).all(|w| w[0] < w[1]) || n == 0,
                "{bounds:?}"
            );
            assert!(bounds.len() - 1 <= shares, "{bounds:?} of {shares}");
            // what walking every run gives: each share ends after the
            // processor whose records reach its part (a processor that
            // reaches two parts ends one share)
            let mut walked = vec![0];
            let mut prefix = Vec::with_capacity(n);
            let mut done = 0;
            for r in &runs {
                done += r.1.len();
                prefix.push(done);
            }
            for k in 1..shares {
                let want = (records * k).div_ceil(shares);
                let Some(mut at) = prefix.iter().position(|&d| d >= want) else {
                    break;
                };
                while at + 1 < n && runs[at + 1].0 == runs[at].0 {
                    at += 1;
                }
                if at + 1 > walked[walked.len() - 1] && at + 1 < n {
                    walked.push(at + 1);
                }
            }
            walked.push(n);
            let greedy = walked;
            // and no share holds more than its part and one processor's
            for w in bounds.windows(2) {
                let first = w[0].checked_sub(1).map_or(0, |i| prefix[i]);
                let upto = w[1].checked_sub(1).map_or(0, |i| prefix[i]);
                let last = runs[..w[1]]
                    .iter()
                    .rev()
                    .take_while(|r| r.0 == runs[w[1] - 1].0)
                    .map(|r| r.1.len())
                    .sum::<usize>();
                assert!(
                    upto - first <= records.div_ceil(shares) + last,
                    "case {case}: {bounds:?}"
                );
            }
            assert!(bounds == greedy, "case {case}: {bounds:?} {greedy:?}");
        }
    }

    /// The counting sort gives what sorting by (processor, line) gives:
    /// with dense and sparse processor numbers, already grouped, empty.
    #[test]
    fn grouping_by_processor_is_a_sort_by_processor_then_line() {
        let mut rng = crate::test_rng::XorShift(0x9e37_79b9);
        for (n, procs) in [
            (0, 4),
            (1, 4),
            (5000, 1),
            (5000, 64),
            (5000, 9000),
            // sparse: counted (a small block of a 65,536-processor trace)
            (5000, 65_536),
            // sparser: sorted by comparison
            (2000, 120_000),
            (300, 1 << 30),
        ] {
            let recs: Vec<Rec> = (0..n)
                .map(|i| Rec {
                    time: rng.below(1000) as i64,
                    seq: i as u64 + 1,
                    bytes: 0,
                    tag: 0,
                    proc_: rng.below(procs) as u32,
                    rectype: -3,
                    event: 1,
                    peer: -1,
                })
                .collect();
            let key = |v: &[Rec]| {
                v.iter()
                    .map(|r| (r.proc_, r.seq, r.time))
                    .collect::<Vec<_>>()
            };
            let mut want = recs.clone();
            want.sort_unstable_by_key(|r| (r.proc_, r.seq));
            let got = group_by_proc(recs);
            assert_eq!(key(&got), key(&want), "{n} records over {procs} processors");
            assert_eq!(key(&group_by_proc(got.clone())), key(&want));
        }
    }

    /// The pool threads' grouping scratch is freed once a read is done (in
    /// a pool of the test's own: the other tests' reads use the global one).
    #[test]
    fn the_threads_grouping_scratch_is_released() {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            let held = || -> usize {
                rayon::broadcast(|_| {
                    AT.with_borrow(Vec::capacity) + SCRATCH.with_borrow(Vec::capacity)
                })
                .into_iter()
                .sum()
            };
            (0..64u64).into_par_iter().for_each(|k| {
                let recs: Vec<Rec> = (0..100u64)
                    .map(|i| Rec::new(i as i64, i, ((i * 7 + k) % 13) as i64, -3, -21, [0; 3]))
                    .collect();
                group_by_proc(recs);
            });
            assert!(held() > 0);
            release_group_scratch();
            assert_eq!(held(), 0);
        });
    }

    #[test]
    fn parses_records() {
        let r = parse_line("-3 -21 0.00001 0 0 4 2 32768 1 1 1", 7)
            .unwrap()
            .unwrap();
        assert_eq!((r.rectype, r.event, r.time, r.proc_), (-3, -21, 10_000, 0));
        assert_eq!((r.bytes, r.tag, r.peer), (32768, 1, 1));
        let r = parse_line("-4 -901 0.00004 0 0 0", 1).unwrap().unwrap();
        assert_eq!((r.bytes, r.tag, r.peer), (0, 0, 0));
        // a peer beyond i32 is no processor (and never matched)
        let r = parse_line("-3 -21 0.00001 0 0 4 2 8 1 4294967296 1", 7)
            .unwrap()
            .unwrap();
        assert_eq!(r.peer, -1);
        assert!(parse_line("   ", 1).unwrap().is_none());
    }

    #[test]
    fn rejects_malformed_records() {
        for (l, want) in [
            ("-3 x 0.1 0 0 0", "event"),
            ("-3 -21 abc 0 0 0", "time"),
            ("-3 -21 -0.5 0 0 0", "non-negative"),
            ("-3 -21 0.5 -1 0 0", "processor"),
            ("-3 -21 0.5 99999999999 0 0", "processor"),
            ("-3 -21 0.5 0 0 3 2 1", "3 data value"),
            ("-3 -21 0.5 0 0 0 7", "found more"),
            ("-3 -21 0.5 0 0 99999999", "data count"),
            ("-3 -21 0.5", "processor"),
        ] {
            let e = parse_line(l, 1).unwrap_err();
            assert!(e.contains(want), "{l}: {e}");
        }
    }

    /// Where the byte path gives a record it is the one the text path
    /// gives, on lines made of the fields records have and some they must
    /// not (signs, fractions, exponents, long and huge numbers, letters,
    /// other spaces); and it gives one for the lines traces write.
    #[test]
    fn the_byte_path_parses_as_the_text_path_does() {
        let pieces = [
            "-3",
            "-4",
            "-21",
            "-52",
            "-901",
            "0",
            "7",
            "+5",
            "-0",
            "1.5",
            "0.000010000",
            "12.",
            ".5",
            "1e3",
            "0.1234567891",
            "99999999999999999",
            "999999999999999999",
            "9999999999999999999",
            "2147483648",
            "-2147483649",
            "16777216",
            "1048577",
            "x",
            "4294967296",
            "",
            " ",
            "\t",
            "-",
            ".",
            "3",
            "2",
            "1",
        ];
        let mut rng = crate::test_rng::XorShift(0x5151_2024);
        let mut fast = 0;
        for _ in 0..200_000 {
            // a record's fields (some counted data values after a format),
            // a few of them replaced by any piece, one sometimes dropped
            let ndata = rng.below(5) as usize;
            // a time of up to 16 digits before the point and 1 to 10 after
            let (int, w) = (10u64.pow(rng.below(17) as u32), rng.below(10) as usize + 1);
            let time = format!("{}.{:0w$}", rng.below(int), rng.below(10u64.pow(w as u32)));
            let mut tokens: Vec<String> = ["-3", "-21", &time, "3", "3"]
                .iter()
                .map(|t| t.to_string())
                .chain(std::iter::once(ndata.to_string()))
                .chain((0..ndata + (ndata > 0) as usize).map(|_| "2".to_string()))
                .collect();
            for _ in 0..rng.below(4) {
                let k = rng.below(tokens.len() as u64) as usize;
                tokens[k] = pieces[rng.below(pieces.len() as u64) as usize].to_string();
            }
            if rng.below(8) == 0 {
                tokens.remove(rng.below(tokens.len() as u64) as usize);
            }
            let mut line = String::new();
            for (k, t) in tokens.iter().enumerate() {
                if k > 0 {
                    line.push_str([" ", "  ", "\t"][rng.below(3) as usize]);
                }
                line.push_str(t);
            }
            let slow = parse_line(&line, 9).ok().flatten();
            // the line, then more lines (for the 16-byte loads)
            let block = format!("{line}\n-3 -21 0.000010000 0 0 4 2 32768 1 1 1\n");
            let ahead = block.as_bytes();
            if let Some(r) = parse_line_fast(&ahead[..line.len()], ahead, 9) {
                fast += 1;
                let s = slow.unwrap_or_else(|| panic!("'{line}': byte path only"));
                assert_eq!(bytemuck::bytes_of(&r), bytemuck::bytes_of(&s), "'{line}'");
            }
        }
        assert!(fast > 20_000, "the byte path took only {fast} lines");
        for l in [
            "-3 -21 0.000010000 0 0 4 2 32768 1 1 1",
            "-4 -901 0.00004 0 0 0",
            "-3 -21 0.00001 0 0 4 2 8 1 4294967296 1",
            "-4 -52 81.780000000 511 511 4 2 4096 7 255 255",
        ] {
            let r = parse_line_fast(l.as_bytes(), l.as_bytes(), 3).unwrap();
            let s = parse_line(l, 3).unwrap().unwrap();
            assert_eq!(bytemuck::bytes_of(&r), bytemuck::bytes_of(&s), "'{l}'");
        }
    }

    /// A line that is not text is refused at its own line and byte, and
    /// the lines before it are parsed (CRLF line ends too).
    #[test]
    fn invalid_text_is_refused_at_its_line() {
        let mut data = b"-3 -901 0.5 0 0 0\r\n-3 -10 0.6 0 0 0\n".to_vec();
        let bad_at = data.len() as u64;
        data.extend_from_slice(b"-4 -10 0.7 \xff 0 0\n-4 -901 0.9 0 0 0\n");
        let block = Block {
            data,
            first_line: 11,
            first_byte: 1000,
            last: true,
        };
        let c = parse_block(&block);
        assert_eq!(c.recs.len(), 2);
        let (pos, msg) = c.error.unwrap();
        assert_eq!((pos.line, pos.byte), (Some(13), Some(1000 + bad_at)));
        assert!(msg.contains("UTF-8"), "{msg}");
        // all text: every line parsed
        let block = Block {
            data: b"-3 -901 0.5 0 0 0\r\n-4 -901 0.9 0 0 0".to_vec(),
            first_line: 1,
            first_byte: 0,
            last: true,
        };
        let c = parse_block(&block);
        assert!(c.error.is_none());
        assert_eq!(c.recs.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2]);
    }

    /// A trace of several blocks: 8 processors passing messages round a
    /// ring, written in time order, then grouped by processor, then with
    /// records of one processor out of order. The file order between
    /// processors changes nothing; records out of order are re-sorted.
    #[test]
    fn file_order_between_processors_does_not_matter() {
        let procs = 8u32;
        let mut lines: Vec<(u32, u64, String)> = Vec::new(); // (proc, ns, line)
        for p in 0..procs {
            lines.push((p, 0, format!("-3 -901 0.000000000 {p} {p} 0")));
        }
        let rounds = 6000u64;
        for k in 0..rounds {
            for p in 0..procs {
                let t = 10_000 + k * 1000;
                let to = (p + 1) % procs;
                let from = (p + procs - 1) % procs;
                let at = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
                lines.push((
                    p,
                    t,
                    format!("-3 -21 {} {p} {p} 4 2 {} 7 {to} {to}", at(t), 64 + k),
                ));
                lines.push((p, t + 100, format!("-4 -21 {} {p} {p} 0", at(t + 100))));
                lines.push((p, t + 200, format!("-3 -52 {} {p} {p} 0", at(t + 200))));
                lines.push((
                    p,
                    t + 400,
                    format!(
                        "-4 -52 {} {p} {p} 4 2 {} 7 {from} {from}",
                        at(t + 400),
                        64 + k
                    ),
                ));
                lines.push((p, t + 500, format!("-3 -77 {} {p} {p} 0", at(t + 500))));
            }
        }
        for p in 0..procs {
            let t = 10_000 + rounds * 1000;
            lines.push((p, t, format!("-4 -901 0.{t:09} {p} {p} 0")));
        }
        let d = tempfile::tempdir().unwrap();
        let write = |name: &str, ls: &[(u32, u64, String)]| {
            let text: String = ls.iter().map(|l| format!("{}\n", l.2)).collect();
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let mut by_time = lines.clone();
        by_time.sort_by_key(|l| l.1);
        let a = write("time.trf", &by_time);
        assert!(std::fs::metadata(&a).unwrap().len() > 3 * input::BLOCK_SIZE as u64);
        let mut by_proc = lines.clone();
        by_proc.sort_by_key(|l| l.0);
        let b = write("proc.trf", &by_proc);
        // processor 3's records after its 40,000th in reverse order
        let mut shuffled = by_time.clone();
        let idx: Vec<usize> = (0..shuffled.len())
            .filter(|&i| shuffled[i].0 == 3)
            .collect();
        let tail = &idx[idx.len() - 200..];
        let rev: Vec<(u32, u64, String)> = tail.iter().rev().map(|&i| by_time[i].clone()).collect();
        for (&i, l) in tail.iter().zip(rev) {
            shuffled[i] = l;
        }
        let c = write("unsorted.trf", &shuffled);
        let opts = ReadOptions::default();
        let (ta, tb, tc) = (
            read(&a, &opts).unwrap(),
            read(&b, &opts).unwrap(),
            read(&c, &opts).unwrap(),
        );
        let sig = |t: &Trace| {
            let iv: Vec<Vec<(u64, u64, u32)>> = (0..t.locations.len() as u32)
                .map(|l| t.intervals.of(l).iter().collect())
                .collect();
            let ms: Vec<(u32, u32, u64, u64, u64, i64)> = (0..t.messages.len())
                .map(|i| t.messages.record(i))
                .collect();
            (iv, ms, t.events.time.clone(), t.events.kind.clone())
        };
        let s = sig(&ta);
        assert_eq!(s.1.len(), (procs as u64 * rounds) as usize);
        assert_eq!(s.0[0].len(), 4 * rounds as usize + 1);
        assert_eq!(sig(&tb), s);
        assert_eq!(sig(&tc), s);
        let count = |t: &Trace| -> u64 {
            let w = &t.meta.diagnostics.warnings;
            w.iter()
                .filter(|w| w.kind == "unsorted-records")
                .map(|w| w.count)
                .sum()
        };
        assert_eq!((count(&ta), count(&tb)), (0, 0));
        assert_eq!(count(&tc), 199);
    }

    #[test]
    fn detection() {
        assert!(looks_like_picl(b"-3 -901 0.00000 0 0 0\n"));
        assert!(!looks_like_picl(b"1:2:3\n"));
        assert!(!looks_like_picl(b"-3 -901\n"));
    }
}
