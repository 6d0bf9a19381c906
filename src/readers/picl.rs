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

use std::collections::HashMap;
use std::path::Path;

use super::ReadOptions;
use super::decimal::parse_scaled;
use super::input::{self, Block, LineBlocks};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::matching::match_in_order;
use crate::model::{
    BuildOptions, Format, LocId, LocationKind, NestedSlice, StateClass, Time, TimeUnit, Trace,
    TraceBuilder, flatten_nested,
};

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

#[derive(Debug, Clone, Copy)]
struct Rec {
    time: i64,
    proc_: u32,
    rectype: i32,
    event: i32,
    /// bytes, tag, peer (for send begins and receive ends)
    data: [i64; 3],
    seq: u64,
}

#[derive(Default)]
struct Chunk {
    recs: Vec<Rec>,
    error: Option<(Position, String)>,
    truncated: bool,
}

fn parse_line(line: &str, seq: u64) -> std::result::Result<Option<Rec>, String> {
    let mut it = line.split_whitespace();
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
        tok.parse::<i64>().map_err(|_| {
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
        if fmt.parse::<i64>().is_err() {
            return Err(format!(
                "expected a data format code (field 7), found '{fmt}'"
            ));
        }
        for k in 0..ndata as usize {
            let tok = it
                .next()
                .ok_or_else(|| format!("expected {ndata} data value(s), found {k}"))?;
            if let Some(slot) = data.get_mut(k) {
                *slot = match tok.parse::<i64>() {
                    Ok(v) => v,
                    Err(_) => parse_scaled(tok.as_bytes(), 0).map_err(|_| {
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
    Ok(Some(Rec {
        time,
        proc_: proc_ as u32,
        rectype,
        event,
        data,
        seq,
    }))
}

fn parse_block(block: &Block) -> Chunk {
    let mut out = Chunk::default();
    for (line_no, byte, line) in block.lines() {
        let text = match std::str::from_utf8(line) {
            Ok(t) => t,
            Err(_) => {
                out.error = Some((
                    Position {
                        line: Some(line_no),
                        byte: Some(byte),
                    },
                    "expected text, found invalid UTF-8".into(),
                ));
                break;
            }
        };
        match parse_line(text, line_no) {
            Ok(Some(r)) => out.recs.push(r),
            Ok(None) => {}
            Err(msg) => {
                out.error = Some((
                    Position {
                        line: Some(line_no),
                        byte: Some(byte),
                    },
                    msg,
                ));
                out.truncated = block.ends_unterminated()
                    && byte + line.len() as u64 == block.first_byte + block.data.len() as u64;
                break;
            }
        }
    }
    out
}

fn is_send(e: i32) -> bool {
    e == -21 || e == -27
}
fn is_recv(e: i32) -> bool {
    e == -52 || e == -57
}

/// Reads a PICL trace.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let mut blocks = LineBlocks::new(input::open(path)?);
    let damage = blocks.damage_handle();
    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    let mut recs: Vec<Rec> = Vec::new();
    let src = path.to_path_buf();
    {
        let b = &mut b;
        let recs = &mut recs;
        blocks.for_each_parallel(parse_block, |_blk, chunk| {
            if let Some((pos, msg)) = chunk.error {
                if chunk.truncated {
                    // a gzip stream that broke off is the cause: said first
                    damage.report(&mut b.diagnostics, &src, "records")?;
                    b.diagnostics.repair("truncated-record", &src, pos, 1, || {
                        format!("the last record is incomplete ({msg}); skipped")
                    })?;
                } else {
                    return Err(Error::parse(&src, pos, msg));
                }
            }
            recs.extend_from_slice(&chunk.recs);
            Ok(())
        })?;
    }
    damage.report(&mut b.diagnostics, path, "records")?;
    if recs.is_empty() {
        return Err(Error::parse(
            path,
            Position::line(1),
            "expected PICL records, found none",
        ));
    }

    // locations: one per processor, in processor order
    let mut procs: Vec<u32> = recs.iter().map(|r| r.proc_).collect();
    procs.sort_unstable();
    procs.dedup();
    let mut loc_of: HashMap<u32, LocId> = HashMap::with_capacity(procs.len());
    for &p in &procs {
        let id = b
            .locations
            .add(format!("proc {p}"), LocationKind::Thread, None, p as i64);
        loc_of.insert(p, id);
    }
    let busy = b.states.add("busy", StateClass::Busy, Some([0, 160, 0]), 0);
    let send = b
        .states
        .add("send", StateClass::Overhead, Some([220, 40, 40]), 1);
    let recv = b
        .states
        .add("recv", StateClass::Overhead, Some([240, 160, 20]), 2);

    // records earlier than the one before them on their processor (in file
    // order): re-sorted below with a warning that counts them; --strict
    // refuses them at the first one's line
    let mut last: HashMap<u32, i64> = HashMap::with_capacity(procs.len());
    let (mut unsorted, mut first_unsorted) = (0u64, None);
    for r in &recs {
        let t = last.entry(r.proc_).or_insert(r.time);
        if r.time < *t {
            unsorted += 1;
            first_unsorted.get_or_insert(r.seq);
        } else {
            *t = r.time;
        }
    }
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
    // per processor, in time order (file order breaks ties)
    recs.sort_by_key(|r| (r.proc_, r.time, r.seq));
    let mut unmatched_end = 0u64;
    let mut unclosed = 0u64;
    let mut first_bad: Option<u64> = None;
    // (src, dst, tag) -> queue of send begin times; receives matched in time order
    // (source, destination, tag), time, bytes
    let mut sends: Vec<((u32, u32, i64), u64, u64)> = Vec::new();
    let mut recvs: Vec<((u32, u32, i64), u64, u64)> = Vec::new();
    let mut flat = Vec::new();
    let mut i = 0;
    while i < recs.len() {
        let p = recs[i].proc_;
        let j = i + recs[i..].iter().take_while(|r| r.proc_ == p).count();
        let rs = &recs[i..j];
        let loc = loc_of[&p];
        let start = rs
            .iter()
            .find(|r| r.rectype == -3 && r.event == -901)
            .map(|r| r.time);
        let stop = rs
            .iter()
            .rev()
            .find(|r| r.rectype == -4 && r.event == -901)
            .map(|r| r.time);
        let t0 = start.unwrap_or(rs[0].time);
        let t1 = stop.unwrap_or(rs[rs.len() - 1].time);
        let mut slices = vec![NestedSlice {
            start: t0 as Time,
            end: t1.max(t0) as Time,
            state: busy,
            seq: 0,
        }];
        let mut open: Vec<(i32, i64)> = Vec::new(); // (event, begin time)
        for r in rs {
            match (r.rectype, r.event) {
                (_, -901) => {}
                (-3, e) if is_send(e) || is_recv(e) => {
                    open.push((e, r.time));
                    if is_send(e) {
                        let dst = r.data[2];
                        if (0..MAX_PROC).contains(&dst) {
                            sends.push((
                                (p, dst as u32, r.data[1]),
                                r.time as u64,
                                r.data[0].max(0) as u64,
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
                                state: if is_send(e) { send } else { recv },
                                seq: r.seq,
                            });
                        }
                        None => {
                            unmatched_end += 1;
                            first_bad.get_or_insert(r.seq);
                        }
                    }
                    if is_recv(e) {
                        let srcp = r.data[2];
                        if (0..MAX_PROC).contains(&srcp) {
                            recvs.push((
                                (srcp as u32, p, r.data[1]),
                                r.time as u64,
                                r.data[0].max(0) as u64,
                            ));
                        }
                    }
                }
                (rt, e) => {
                    let name = match rt {
                        -3 => format!("begin {e}"),
                        -4 => format!("end {e}"),
                        _ => format!("record {rt} event {e}"),
                    };
                    let kind = b.event_types.intern(&name);
                    b.event(loc, r.time as Time, kind, e as i64);
                }
            }
        }
        for (e, bt) in open {
            unclosed += 1;
            first_bad.get_or_insert(recs[i].seq);
            slices.push(NestedSlice {
                start: bt as Time,
                end: t1.max(bt) as Time,
                state: if is_send(e) { send } else { recv },
                seq: u64::MAX,
            });
        }
        flat.clear();
        flatten_nested(&mut slices, &mut flat);
        for &(s, e, st) in &flat {
            b.interval(loc, s, e, st);
        }
        i = j;
    }
    let pos = first_bad.map_or(Position::none(), Position::line);
    b.diagnostics
        .repair("unmatched-end", &src, pos, unmatched_end, || {
            format!("{unmatched_end} end record(s) of a send or receive without a begin; ignored")
        })?;
    b.diagnostics
        .repair("unclosed-begin", &src, pos, unclosed, || {
            format!("{unclosed} send or receive begin record(s) never ended; closed at trace stop")
        })?;

    let (pairs, mut unmatched_msgs) = match_in_order(sends, recvs);
    for m in pairs {
        let (s, d, tag) = m.key;
        match (loc_of.get(&s), loc_of.get(&d)) {
            (Some(&sl), Some(&dl)) => b.message(
                sl,
                dl,
                m.send_time,
                m.recv_time,
                m.recv_bytes.max(m.send_bytes),
                tag,
            ),
            _ => unmatched_msgs += 1,
        }
    }
    b.diagnostics.repair("unmatched-message", &src, Position::none(), unmatched_msgs, || {
        format!("{unmatched_msgs} send(s) or receive(s) without a partner; no message recorded for them")
    })?;

    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records() {
        let r = parse_line("-3 -21 0.00001 0 0 4 2 32768 1 1 1", 7)
            .unwrap()
            .unwrap();
        assert_eq!((r.rectype, r.event, r.time, r.proc_), (-3, -21, 10_000, 0));
        assert_eq!(r.data, [32768, 1, 1]);
        let r = parse_line("-4 -901 0.00004 0 0 0", 1).unwrap().unwrap();
        assert_eq!(r.data, [0, 0, 0]);
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

    #[test]
    fn detection() {
        assert!(looks_like_picl(b"-3 -901 0.00000 0 0 0\n"));
        assert!(!looks_like_picl(b"1:2:3\n"));
        assert!(!looks_like_picl(b"-3 -901\n"));
    }
}
