//! Paraver traces: `.prv` with the sibling `.pcf` (state and event names,
//! colours) and `.row` (object names).
//!
//! Records: state `1:cpu:appl:task:thread:begin:end:state`, event
//! `2:cpu:appl:task:thread:time:type:value[:type:value...]`, communication
//! `3:cpu:appl:task:thread:lsend:psend:cpu:appl:task:thread:lrecv:precv:size:tag`,
//! global operation `4:cpu:appl:task:thread:time:comm[:sent[:received[:op[:root]]]]`,
//! communicator `c:appl:id:n:task...`. Times are integers in the unit of the
//! header (`_ns`, `_us`; no suffix means microseconds).
//!
//! Messages go from the logical send time to the physical receive time.
//!
//! Default state classes: `Running` is busy; `Idle`, `Not created`,
//! `Tracing disabled` and `Outside` are idle; every other state is overhead.
//! Without a `.pcf`, state values get Paraver's standard names.

use crate::phases;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::ReadOptions;
use super::colon_line;
use super::decimal::{leading_digits, lookahead};
use super::input::{self, Block, LineBlocks};
use super::paraver_pcf::{Pcf, parse_pcf, parse_row};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::{
    EventBlock, GLOBAL, IntervalBlock, RawCollective, RawEvent, RawInterval, RawMessage,
};
use crate::model::stream::IntervalSink;
use crate::model::{
    BuildOptions, Communicator, Format, GroupKind, LocId, LocationKind, StateClass, StateId, Time,
    TimeUnit, Trace, TraceBuilder,
};
use compact_str::{CompactString, format_compact};

/// The largest number of threads a header may declare.
pub const MAX_LOCATIONS: u64 = 1 << 24;

/// Paraver's standard state names, used when there is no `.pcf`.
pub const STANDARD_STATES: [&str; 18] = [
    "Idle",
    "Running",
    "Not created",
    "Waiting a message",
    "Blocking Send",
    "Synchronization",
    "Test/Probe",
    "Scheduling and Fork/Join",
    "Wait/WaitAll",
    "Blocked",
    "Immediate Send",
    "Immediate Receive",
    "I/O",
    "Group Communication",
    "Tracing Disabled",
    "Others",
    "Send Receive",
    "Memory transfer",
];

/// The default class of a Paraver state, by name.
pub fn default_class(name: &str) -> StateClass {
    let n = name.trim().to_ascii_lowercase();
    match n.as_str() {
        "running" => StateClass::Busy,
        "idle" | "not created" | "tracing disabled" | "outside" => StateClass::Idle,
        _ => StateClass::Overhead,
    }
}

/// The parsed header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub ns_per_unit: u64,
    pub unit_name: String,
    pub end_time: u64,
    /// CPUs per node (empty when the header gives no resource model).
    pub nodes: Vec<u32>,
    /// Per application, per task: (threads, node).
    pub apps: Vec<Vec<(u32, u32)>>,
}

/// Parses the `#Paraver (...)` header line.
pub fn parse_header(line: &str) -> std::result::Result<Header, String> {
    let rest = line.strip_prefix("#Paraver").ok_or_else(|| {
        format!(
            "expected a header starting with '#Paraver', found '{}'",
            clip(line)
        )
    })?;
    let rest = rest.trim_start();
    let rest = if let Some(r) = rest.strip_prefix('(') {
        let close = r
            .find(')')
            .ok_or("expected ')' closing the date of the header, found none")?;
        &r[close + 1..]
    } else {
        rest
    };
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("expected ':' after the header date, found '{}'", clip(rest)))?;
    let fields = split_top(rest, ':');
    if fields.len() < 3 {
        return Err(format!(
            "expected 'end_time:resources:nAppl:applications' in the header, found '{}'",
            clip(rest)
        ));
    }
    let (time_text, ns_per_unit, unit_name) = if let Some(t) = fields[0].strip_suffix("_ns") {
        (t, 1, "ns")
    } else if let Some(t) = fields[0].strip_suffix("_us") {
        (t, 1_000, "us")
    } else if let Some(t) = fields[0].strip_suffix("_ms") {
        (t, 1_000_000, "ms")
    } else {
        (fields[0], 1_000, "us")
    };
    let end_time: u64 = time_text.trim().parse().map_err(|_| {
        format!(
            "expected the trace end time (an unsigned integer) in the header, found '{}'",
            fields[0]
        )
    })?;
    let (n_nodes, cpu_list) = parse_counted_list(fields[1], "resources")?;
    if !cpu_list.is_empty() && cpu_list.len() as u64 != n_nodes {
        return Err(format!(
            "expected {n_nodes} CPU count(s) in the resources of the header, found {}",
            cpu_list.len()
        ));
    }
    let mut nodes = cpu_list
        .into_iter()
        .map(|s| {
            s.trim().parse::<u32>().map_err(|_| {
                format!("expected a CPU count in the resources of the header, found '{s}'")
            })
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if nodes.is_empty() {
        // a node count without CPU counts
        nodes = vec![0; n_nodes as usize];
    }
    let n_appl: usize = fields[2].trim().parse().map_err(|_| {
        format!(
            "expected the number of applications in the header, found '{}'",
            fields[2]
        )
    })?;
    if n_appl == 0 || n_appl > 1 << 16 || fields.len() < 3 + n_appl {
        return Err(format!(
            "expected {n_appl} application description(s) in the header, found {}",
            fields.len().saturating_sub(3)
        ));
    }
    let mut apps = Vec::with_capacity(n_appl);
    let mut total: u64 = 0;
    for f in &fields[3..3 + n_appl] {
        // "nTasks(threads:node,...)" optionally followed by ",nComms"
        let f = match f.rfind(')') {
            Some(k) => &f[..=k],
            None => f,
        };
        let (n, items) = parse_counted_list(f, "application")?;
        if items.len() as u64 != n {
            return Err(format!(
                "expected {n} task description(s) in '{}', found {}",
                clip(f),
                items.len()
            ));
        }
        let mut tasks = Vec::with_capacity(items.len());
        for it in items {
            let (th, node) = it.split_once(':').ok_or_else(|| {
                format!("expected 'threads:node' for a task in the header, found '{it}'")
            })?;
            let th: u32 = th
                .trim()
                .parse()
                .map_err(|_| format!("expected a thread count in the header, found '{th}'"))?;
            let node: u32 = node
                .trim()
                .parse()
                .map_err(|_| format!("expected a node number in the header, found '{node}'"))?;
            total += th as u64;
            if total > MAX_LOCATIONS {
                return Err(format!(
                    "the header declares more than {MAX_LOCATIONS} threads; refusing an absurd count"
                ));
            }
            tasks.push((th, node));
        }
        apps.push(tasks);
    }
    Ok(Header {
        ns_per_unit,
        unit_name: unit_name.to_string(),
        end_time,
        nodes,
        apps,
    })
}

fn clip(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        t.push_str("...");
    }
    t
}

/// Splits at `sep` outside parentheses.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// `n(a,b,c)` → (n, [a, b, c]); a bare `n` → (n, []).
fn parse_counted_list<'a>(
    s: &'a str,
    what: &str,
) -> std::result::Result<(u64, Vec<&'a str>), String> {
    let s = s.trim();
    let (n, inner) = match s.find('(') {
        Some(k) => {
            let inner = s[k + 1..].strip_suffix(')').ok_or_else(|| {
                format!(
                    "expected ')' closing the {what} list in the header, found '{}'",
                    clip(s)
                )
            })?;
            (&s[..k], Some(inner))
        }
        None => (s, None),
    };
    let n: u64 = n.trim().parse().map_err(|_| {
        format!(
            "expected a count in the {what} part of the header, found '{}'",
            clip(s)
        )
    })?;
    if n > MAX_LOCATIONS {
        return Err(format!(
            "the {what} part of the header declares {n} objects; refusing an absurd count"
        ));
    }
    let items = match inner {
        Some(i) if !i.trim().is_empty() => i.split(',').collect(),
        _ => Vec::new(),
    };
    Ok((n, items))
}

/// Where the threads of each (application, task) are in the location table.
struct LocTable {
    /// Per application, per task: (first location, threads).
    apps: Vec<Vec<(u32, u32)>>,
}

impl LocTable {
    #[inline(always)]
    fn get(&self, appl: u64, task: u64, thread: u64) -> Option<LocId> {
        let a = self.apps.get((appl as usize).checked_sub(1)?)?;
        let (base, n) = *a.get((task as usize).checked_sub(1)?)?;
        let th = (thread as u32).checked_sub(1)?;
        if thread > n as u64 || th >= n {
            return None;
        }
        Some(base + th)
    }
}

/// What one block of records yields.
#[derive(Default)]
struct Chunk {
    intervals: Vec<RawInterval>,
    events: Vec<RawEvent>,
    messages: Vec<RawMessage>,
    collectives: Vec<RawCollective>,
    comms: Vec<Communicator>,
    state_values: HashSet<u32>,
    event_types: HashSet<u32>,
    global_ops: HashSet<u32>,
    /// A malformed record: position and message.
    error: Option<(Position, String)>,
    /// The malformed record is the unterminated last line of the file.
    truncated: bool,
}

impl Chunk {
    /// Records the malformed record `line` of `block` (its line number and
    /// stream offset) and whether it is the unterminated last line.
    fn fail(&mut self, block: &Block, line_no: u64, byte: u64, line: &[u8], msg: String) {
        self.error = Some((
            Position {
                line: Some(line_no),
                byte: Some(byte),
            },
            msg,
        ));
        self.truncated = block.ends_unterminated()
            && byte + line.len() as u64 == block.first_byte + block.data.len() as u64;
    }
}

/// The vectors of blocks whose records were copied on (to the model's
/// columns or its message and event lists), used again by later blocks:
/// a fresh vector faults its pages in anew and copies itself as it grows
/// (together 17 % of a one-core read's page faults).
#[derive(Default)]
struct SpareVecs(std::sync::Mutex<Spare>);

#[derive(Default)]
struct Spare {
    intervals: Vec<Vec<RawInterval>>,
    events: Vec<Vec<RawEvent>>,
    messages: Vec<Vec<RawMessage>>,
}

/// Vectors kept of each kind: two batches in flight, a block per thread.
fn spare_cap() -> usize {
    2 * rayon::current_num_threads().max(2)
}

impl SpareVecs {
    /// An empty chunk with the room of earlier blocks' vectors.
    fn chunk(&self) -> Chunk {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        Chunk {
            intervals: s.intervals.pop().unwrap_or_default(),
            events: s.events.pop().unwrap_or_default(),
            messages: s.messages.pop().unwrap_or_default(),
            ..Default::default()
        }
    }

    /// Keeps `v` (emptied) for a later block.
    fn give<T>(&self, kind: impl FnOnce(&mut Spare) -> &mut Vec<Vec<T>>, mut v: Vec<T>) {
        if v.capacity() == 0 {
            return;
        }
        v.clear();
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let list = kind(&mut s);
        if list.len() < spare_cap() {
            list.push(v);
        }
    }
}

struct Fields<'a> {
    s: &'a [u8],
    /// `s` and the bytes after it in its block (the next lines), for
    /// [`leading_digits`]' 16-byte loads near the end of the line: the
    /// line end is not a digit, so a field it takes ends within `s`, or
    /// (the last) at the newline right after it.
    ahead: &'a [u8],
    pos: usize,
    idx: usize,
}

const STATE_FIELDS: [&str; 7] = [
    "cpu",
    "application",
    "task",
    "thread",
    "begin time",
    "end time",
    "state",
];
const EVENT_FIELDS: [&str; 7] = [
    "cpu",
    "application",
    "task",
    "thread",
    "time",
    "event type",
    "event value",
];
const COMM_FIELDS: [&str; 14] = [
    "sender cpu",
    "sender application",
    "sender task",
    "sender thread",
    "logical send time",
    "physical send time",
    "receiver cpu",
    "receiver application",
    "receiver task",
    "receiver thread",
    "logical receive time",
    "physical receive time",
    "size",
    "tag",
];
const GLOBAL_FIELDS: [&str; 10] = [
    "cpu",
    "application",
    "task",
    "thread",
    "time",
    "communicator",
    "bytes sent",
    "bytes received",
    "global operation",
    "root",
];

impl<'a> Fields<'a> {
    fn new(s: &'a [u8], ahead: &'a [u8]) -> Self {
        let ahead = lookahead(s, ahead);
        Fields {
            s,
            ahead,
            pos: 0,
            idx: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn found(&self) -> String {
        let end = memchr::memchr(b':', &self.s[self.pos..]).map_or(self.s.len(), |k| self.pos + k);
        let f = String::from_utf8_lossy(&self.s[self.pos..end]);
        if f.is_empty() {
            if self.at_end() {
                "the end of the line".to_string()
            } else {
                "an empty field".to_string()
            }
        } else {
            format!("'{}'", clip(&f))
        }
    }

    #[inline(always)]
    fn uint(&mut self, names: &[&str]) -> std::result::Result<u64, String> {
        // a field and its ':', or the last field of a line: its digits
        // end at the line's end, the newline after it in the block
        match leading_digits(self.ahead, self.pos) {
            Some((v, end, b':')) if end < self.s.len() => {
                self.pos = end + 1;
                self.idx += 1;
                Ok(v)
            }
            Some((v, end, b'\n')) if end == self.s.len() => {
                self.pos = end;
                self.idx += 1;
                Ok(v)
            }
            _ => self.uint_any(names),
        }
    }

    /// [`Fields::uint`] of any field: the last of the line, one of 16 or
    /// more digits, and the malformed ones (whose error it words).
    #[inline(never)]
    fn uint_any(&mut self, names: &[&str]) -> std::result::Result<u64, String> {
        let s = self.s;
        let start = self.pos;
        let mut i = start;
        let mut v: u64 = 0;
        while i < s.len() {
            let d = s[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(d as u64);
            i += 1;
        }
        if i == start || (i < s.len() && s[i] != b':') {
            return Err(format!(
                "expected {} (an unsigned integer), found {}",
                field_name(names, self.idx),
                self.found()
            ));
        }
        if i - start >= 20 {
            // only numbers of 20 or more digits can overflow: check exactly
            let mut c: u64 = 0;
            for &ch in &s[start..i] {
                c = c.checked_mul(10).and_then(|c| c.checked_add((ch - b'0') as u64)).ok_or_else(|| {
                    format!(
                        "expected {} (an unsigned 64-bit integer), found a number that overflows",
                        field_name(names, self.idx)
                    )
                })?;
            }
            v = c;
        }
        self.pos = if i < s.len() { i + 1 } else { i };
        self.idx += 1;
        Ok(v)
    }

    /// A signed integer; unsigned values above 2^63 keep their bits.
    #[inline(always)]
    fn int(&mut self, names: &[&str]) -> std::result::Result<i64, String> {
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
            let v = self
                .uint(names)
                .map_err(|e| e.replace("an unsigned integer", "an integer"))?;
            if v > i64::MAX as u64 + 1 {
                return Err(format!(
                    "expected {} (a 64-bit integer), found a number that overflows",
                    field_name(names, self.idx - 1)
                ));
            }
            return Ok((v as i64).wrapping_neg());
        }
        Ok(self.uint(names)? as i64)
    }
}

fn field_name(names: &[&str], idx: usize) -> String {
    match names.get(idx) {
        Some(n) => format!("field {} ({n})", idx + 2),
        None => format!("field {}", idx + 2),
    }
}

struct Ctx<'a> {
    locs: &'a LocTable,
    unit: u64,
}

impl Ctx<'_> {
    #[inline(always)]
    fn loc(&self, appl: u64, task: u64, thread: u64) -> std::result::Result<LocId, String> {
        self.locs.get(appl, task, thread).ok_or_else(|| {
            format!("expected an application:task:thread declared in the header, found {appl}:{task}:{thread}")
        })
    }
    #[inline(always)]
    fn time(&self, t: u64) -> std::result::Result<Time, String> {
        t.checked_mul(self.unit)
            .ok_or_else(|| format!("time {t} overflows 64-bit nanoseconds"))
    }
}

/// Parses one record, `line`; `ahead` is `line` and the rest of its block.
fn parse_record(
    line: &[u8],
    ahead: &[u8],
    ctx: &Ctx,
    out: &mut Chunk,
    last_state: &mut u32,
    last_type: &mut u32,
) -> std::result::Result<(), String> {
    if line.len() < 2 || line[1] != b':' {
        return Err(format!(
            "expected a record 'type:...' with type 1, 2, 3, 4 or c, found '{}'",
            clip(&String::from_utf8_lossy(line))
        ));
    }
    let mut f = Fields::new(&line[2..], ahead.get(2..).unwrap_or_default());
    match line[0] {
        b'1' => {
            let n = &STATE_FIELDS;
            let _cpu = f.uint(n)?;
            let (a, t, h) = (f.uint(n)?, f.uint(n)?, f.uint(n)?);
            let begin = f.uint(n)?;
            let end = f.uint(n)?;
            let state = f.uint(n)?;
            if !f.at_end() {
                return Err(format!(
                    "expected 7 fields in a state record, found more ({})",
                    f.found()
                ));
            }
            if end < begin {
                return Err(format!(
                    "state record ends before it begins ({end} < {begin})"
                ));
            }
            let state = u32::try_from(state)
                .map_err(|_| format!("state value {state} does not fit 32 bits"))?;
            let loc = ctx.loc(a, t, h)?;
            if state != *last_state {
                out.state_values.insert(state);
                *last_state = state;
            }
            out.intervals.push(RawInterval {
                loc,
                state,
                start: ctx.time(begin)?,
                end: ctx.time(end)?,
            });
        }
        b'2' => {
            let n = &EVENT_FIELDS;
            let _cpu = f.uint(n)?;
            let (a, t, h) = (f.uint(n)?, f.uint(n)?, f.uint(n)?);
            let time = ctx.time(f.uint(n)?)?;
            let loc = ctx.loc(a, t, h)?;
            let mut pairs = 0;
            while !f.at_end() {
                f.idx = 5;
                let ty = f.uint(n)?;
                if f.at_end() {
                    return Err(format!(
                        "expected a value after event type {ty}, found the end of the line"
                    ));
                }
                let value = f.int(n)?;
                let ty = u32::try_from(ty)
                    .map_err(|_| format!("event type {ty} does not fit 32 bits"))?;
                if ty != *last_type {
                    out.event_types.insert(ty);
                    *last_type = ty;
                }
                out.events.push(RawEvent {
                    time,
                    loc,
                    kind: ty,
                    value,
                });
                pairs += 1;
            }
            if pairs == 0 {
                return Err(
                    "expected at least one type:value pair in an event record, found none".into(),
                );
            }
        }
        b'3' => {
            let n = &COMM_FIELDS;
            let _cpu = f.uint(n)?;
            let (a, t, h) = (f.uint(n)?, f.uint(n)?, f.uint(n)?);
            let lsend = f.uint(n)?;
            let _psend = f.uint(n)?;
            let _cpu_r = f.uint(n)?;
            let (ra, rt, rh) = (f.uint(n)?, f.uint(n)?, f.uint(n)?);
            let _lrecv = f.uint(n)?;
            let precv = f.uint(n)?;
            let size = f.uint(n)?;
            let tag = f.int(n)?;
            if !f.at_end() {
                return Err(format!(
                    "expected 15 fields in a communication record, found more ({})",
                    f.found()
                ));
            }
            out.messages.push(RawMessage {
                send: ctx.time(lsend)?,
                recv: ctx.time(precv)?,
                bytes: size,
                tag,
                src: ctx.loc(a, t, h)?,
                dst: ctx.loc(ra, rt, rh)?,
            });
        }
        b'4' => {
            let n = &GLOBAL_FIELDS;
            let _cpu = f.uint(n)?;
            let (a, t, h) = (f.uint(n)?, f.uint(n)?, f.uint(n)?);
            let time = ctx.time(f.uint(n)?)?;
            let comm = f.int(n)?;
            let mut opt = [0i64, 0, 0, -1];
            for slot in opt.iter_mut() {
                if f.at_end() {
                    break;
                }
                *slot = f.int(n)?;
            }
            if !f.at_end() {
                return Err(format!(
                    "expected at most 11 fields in a global operation record, found more ({})",
                    f.found()
                ));
            }
            let op = u32::try_from(opt[2])
                .map_err(|_| format!("global operation id {} out of range", opt[2]))?;
            out.global_ops.insert(op);
            out.collectives.push(RawCollective {
                begin: time,
                end: time,
                sent: opt[0].max(0) as u64,
                received: opt[1].max(0) as u64,
                comm,
                root: opt[3],
                loc: ctx.loc(a, t, h)?,
                op,
            });
        }
        b'c' => {
            let names = ["application", "communicator id", "member count", "member"];
            let _appl = f.uint(&names)?;
            let id = f.int(&names)?;
            let count = f.uint(&names)?;
            let mut members = Vec::with_capacity((count as usize).min(1 << 16));
            while !f.at_end() {
                f.idx = 3;
                members.push(f.int(&names)?);
            }
            if members.len() as u64 != count {
                return Err(format!(
                    "communicator {id} declares {count} member(s), found {}",
                    members.len()
                ));
            }
            out.comms.push(Communicator {
                id,
                name: format!("communicator {id}"),
                members,
            });
        }
        other => {
            return Err(format!(
                "expected a record type 1, 2, 3, 4 or c, found '{}'",
                String::from_utf8_lossy(&[other])
            ));
        }
    }
    Ok(())
}

fn parse_block(block: &Block, ctx: &Ctx) -> Chunk {
    parse_block_into(block, ctx, Chunk::default())
}

/// [`parse_block`] into `out`'s vectors (empty, perhaps with room from an
/// earlier block). A plain state, event or communication record (`1:`,
/// `2:` or `3:` and its fields of up to 15 digits, ending in a line feed,
/// no negative value) is read where it lies, in one pass that also finds
/// where the next line begins ([`plain_record`]); every other line
/// (comments, the other record kinds, CRLF ends, long or malformed fields:
/// whatever that pass declines) is cut at its line end and parsed by
/// [`parse_record`], which words the errors. The two paths give the same
/// records ([`tests::records_in_one_pass_give_those_of_lines_cut_first`]).
fn parse_block_into(block: &Block, ctx: &Ctx, mut out: Chunk) -> Chunk {
    let data = &block.data[..];
    let mut last_state = u32::MAX;
    let mut last_type = u32::MAX;
    let (mut pos, mut line_no) = (0usize, block.first_line);
    let mut fields = [0u64; colon_line::MAX_FIELDS];
    while pos < data.len() {
        let last = (&mut last_state, &mut last_type);
        if let Some(next) = plain_record(data, pos, ctx, &mut out, last, &mut fields) {
            pos = next;
            line_no += 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |k| pos + k);
        let mut line = &data[pos..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if !line.is_empty() && line[0] != b'#' {
            let ahead = &data[pos..];
            if let Err(msg) =
                parse_record(line, ahead, ctx, &mut out, &mut last_state, &mut last_type)
            {
                out.fail(block, line_no, block.first_byte + pos as u64, line, msg);
                break;
            }
        }
        pos = end + 1;
        line_no += 1;
    }
    out
}

/// `N` unsigned fields at `data[at..]`, each of 1 to 15 digits
/// ([`leading_digits`], which loads 16 bytes from each field's start), the
/// first `N - 1` ending in ':' and the last in `last`, and where the byte
/// after the last begins; `None` for anything else (then the line is left
/// to [`parse_record`]).
#[inline(always)]
fn plain_fields<const N: usize>(data: &[u8], mut at: usize, last: u8) -> Option<([u64; N], usize)> {
    let mut v = [0u64; N];
    for (i, slot) in v.iter_mut().enumerate() {
        let (x, end, term) = leading_digits(data, at)?;
        if term != if i + 1 < N { b':' } else { last } {
            return None;
        }
        *slot = x;
        at = end + 1;
    }
    Some((v, at))
}

/// The state, event or communication record at `data[pos..]`, added to
/// `out`, and where the next line begins; `None` (nothing added) unless it
/// is `1:`, `2:` or `3:` and its fields are [`plain_fields`] and valid as
/// [`parse_record`] checks them (a record within 16 bytes of its block's
/// end, a negative tag or event value or a long number is declined too,
/// and then parsed by [`parse_record`]). The fields are found from one
/// classification of the line ([`colon_line`]; `fields` is its room for an
/// event record's pairs); where it declines (a line longer than 128 bytes
/// or within 144 of its block's end), field after field.
#[inline(always)]
fn plain_record(
    data: &[u8],
    pos: usize,
    ctx: &Ctx,
    out: &mut Chunk,
    (last_state, last_type): (&mut u32, &mut u32),
    fields: &mut [u64; colon_line::MAX_FIELDS],
) -> Option<usize> {
    match data.get(pos..pos + 2)? {
        b"1:" => {
            let ([_cpu, a, t, h, begin, end, state], next) =
                match colon_line::exactly::<8>(data, pos) {
                    Some(([_, cpu, a, t, h, begin, end, state], next)) => {
                        ([cpu, a, t, h, begin, end, state], next)
                    }
                    None => plain_fields(data, pos + 2, b'\n')?,
                };
            if end < begin {
                return None;
            }
            let state = u32::try_from(state).ok()?;
            let loc = ctx.locs.get(a, t, h)?;
            let (start, end) = (begin.checked_mul(ctx.unit)?, end.checked_mul(ctx.unit)?);
            if state != *last_state {
                out.state_values.insert(state);
                *last_state = state;
            }
            out.intervals.push(RawInterval {
                loc,
                state,
                start,
                end,
            });
            Some(next)
        }
        b"2:" => {
            if let Some((n, next)) = colon_line::fields(data, pos, fields) {
                // 2, cpu, appl, task, thread, time, then pairs of a type
                // and its value (anything else is declined here as below)
                let (&[_, _cpu, a, t, h, time], pairs) = fields[..n].split_first_chunk::<6>()?;
                if pairs.is_empty()
                    || pairs.len() % 2 == 1
                    || pairs.iter().step_by(2).any(|&ty| ty > u64::from(u32::MAX))
                {
                    return None;
                }
                let time = time.checked_mul(ctx.unit)?;
                let loc = ctx.locs.get(a, t, h)?;
                for pair in pairs.chunks_exact(2) {
                    push_event(out, last_type, (time, loc), pair[0] as u32, pair[1]);
                }
                return Some(next);
            }
            let ([_cpu, a, t, h, time], mut at) = plain_fields(data, pos + 2, b':')?;
            let time = time.checked_mul(ctx.unit)?;
            let loc = ctx.locs.get(a, t, h)?;
            // the pairs: taken back, with the type last seen, where one
            // is declined
            let (kept, type_before) = (out.events.len(), *last_type);
            loop {
                // a type, its value, and whether the line ends after it
                let pair = (|| {
                    let (ty, end, b':') = leading_digits(data, at)? else {
                        return None;
                    };
                    let (value, end, term) = leading_digits(data, end + 1)?;
                    let last = match term {
                        b':' => false,
                        b'\n' => true,
                        _ => return None,
                    };
                    Some((u32::try_from(ty).ok()?, value, end + 1, last))
                })();
                let Some((kind, value, next, last)) = pair else {
                    out.events.truncate(kept);
                    *last_type = type_before;
                    return None;
                };
                push_event(out, last_type, (time, loc), kind, value);
                if last {
                    return Some(next);
                }
                at = next;
            }
        }
        b"3:" => {
            let (
                [
                    _cpu,
                    a,
                    t,
                    h,
                    lsend,
                    _psend,
                    _cpu_r,
                    ra,
                    rt,
                    rh,
                    _lrecv,
                    precv,
                    bytes,
                    tag,
                ],
                next,
            ) = match colon_line::exactly::<15>(data, pos) {
                Some(([_, rest @ ..], next)) => (rest, next),
                None => plain_fields(data, pos + 2, b'\n')?,
            };
            out.messages.push(RawMessage {
                send: lsend.checked_mul(ctx.unit)?,
                recv: precv.checked_mul(ctx.unit)?,
                bytes,
                tag: tag as i64,
                src: ctx.locs.get(a, t, h)?,
                dst: ctx.locs.get(ra, rt, rh)?,
            });
            Some(next)
        }
        _ => None,
    }
}

/// An event record's pair (`kind`, `value`) at `time` on `loc`, added to
/// `out` (its type noted where it differs from the last one seen).
#[inline(always)]
fn push_event(
    out: &mut Chunk,
    last_type: &mut u32,
    (time, loc): (u64, LocId),
    kind: u32,
    value: u64,
) {
    if kind != *last_type {
        out.event_types.insert(kind);
        *last_type = kind;
    }
    out.events.push(RawEvent {
        time,
        loc,
        kind,
        value: value as i64,
    });
}

/// The `.pcf` or `.row` beside `path` (same directory, same stem), by
/// its real path: one that leads outside the trace's directory is refused.
fn sibling(path: &Path, ext: &str) -> Result<Option<PathBuf>> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    let stem = name.strip_suffix(".gz").unwrap_or(name);
    let stem = stem.strip_suffix(".prv").unwrap_or(stem);
    let p = path.with_file_name(format!("{stem}.{ext}"));
    if !p.is_file() {
        return Ok(None);
    }
    input::confined(path, &p).map(Some)
}

/// A `.pcf` or `.row` (gzip accepted; at most 256 MiB).
fn read_text(path: &Path) -> Result<String> {
    let bytes = input::read_all(path, 256 << 20)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A block's malformed record: the unterminated last line of the file is
/// repaired (after saying that a gzip stream broke off, when that is the
/// cause); any other is an error at its position.
fn chunk_error(
    chunk: &Chunk,
    b: &mut TraceBuilder,
    damage: &input::DamageHandle,
    src: &Path,
) -> Result<()> {
    let Some((pos, msg)) = &chunk.error else {
        return Ok(());
    };
    if !chunk.truncated {
        return Err(Error::parse(src, *pos, msg.clone()));
    }
    damage.report(&mut b.diagnostics, src, "records")?;
    b.diagnostics.repair("truncated-record", src, *pos, 1, || {
        format!("the last record is incomplete ({msg}); skipped")
    })
}

/// A Paraver trace opened: its header, `.pcf`, `.row`, the provisional
/// location table and a builder, with the records still to read.
struct Opened {
    blocks: LineBlocks,
    damage: input::DamageHandle,
    header: Header,
    pcf: Pcf,
    row: HashMap<String, Vec<CompactString>>,
    table: LocTable,
    declared: u64,
    b: TraceBuilder,
}

fn open_trace(path: &Path, opts: &ReadOptions) -> Result<Opened> {
    let mut blocks = LineBlocks::new(input::open(path)?);
    let damage = blocks.damage_handle();
    let header_line = blocks.read_line()?.ok_or_else(|| {
        Error::parse(
            path,
            Position::line(1),
            "expected a '#Paraver' header, found an empty file",
        )
    })?;
    let header_text = String::from_utf8_lossy(&header_line);
    let header =
        parse_header(&header_text).map_err(|m| Error::parse(path, Position::line(1), m))?;

    let pcf = match sibling(path, "pcf")? {
        Some(p) => parse_pcf(&read_text(&p)?),
        None => Pcf::default(),
    };
    let row = match sibling(path, "row")? {
        Some(p) => parse_row(&read_text(&p)?),
        None => HashMap::new(),
    };

    let unit = TimeUnit {
        name: header.unit_name.clone(),
        ns_per_unit: header.ns_per_unit,
    };
    let mut b = TraceBuilder::new(Format::Paraver, path, unit, opts.strict);
    b.set_declared_end(header.end_time.saturating_mul(header.ns_per_unit));

    // provisional location ids: per task, its threads numbered in header
    // order; locations (and their node and process groups) are made after
    // reading, for every declared thread — or, when the header declares far
    // more threads than have records, only for those with records
    let mut table = LocTable { apps: Vec::new() };
    let mut declared = 0u64;
    for app in &header.apps {
        let mut tasks = Vec::with_capacity(app.len());
        for &(threads, _) in app {
            let base = u32::try_from(declared)
                .ok()
                .filter(|&b| b.checked_add(threads).is_some_and(|e| e < GLOBAL))
                .ok_or_else(|| {
                    Error::parse(
                        path,
                        Position::line(1),
                        "the header declares more than 4,294,967,294 threads",
                    )
                })?;
            tasks.push((base, threads));
            declared += threads as u64;
        }
        table.apps.push(tasks);
    }

    Ok(Opened {
        blocks,
        damage,
        header,
        pcf,
        row,
        table,
        declared,
        b,
    })
}

/// Reads a Paraver trace.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let Opened {
        mut blocks,
        damage,
        header,
        pcf,
        row,
        table,
        declared,
        mut b,
    } = open_trace(path, opts)?;
    let ctx = Ctx {
        locs: &table,
        unit: header.ns_per_unit,
    };
    let mut state_values: HashSet<u32> = HashSet::new();
    let mut event_types: HashSet<u32> = HashSet::new();
    let mut global_ops: HashSet<u32> = HashSet::new();
    let src = path.to_path_buf();
    // the provisional location ids are 0..declared
    let declared_ids = usize::try_from(declared).unwrap_or(usize::MAX);
    let spare = SpareVecs::default();
    // where no thread may be left out (a header of at most
    // `LAZY_LOCATIONS`), the locations are made before the records: the
    // `.row`'s names are gone before the records come, and the model's
    // lists of groups and locations are not made beside the records at
    // their fullest (at 65,536 threads, 5.9 MiB beside the `.row`'s 3.2)
    let mut row = Some(row);
    if declared <= LAZY_LOCATIONS {
        let _p = phases::span("paraver: locations");
        make_locations(
            &mut b,
            &header,
            &table,
            declared,
            row.take().unwrap_or_default(),
            false,
        )?;
    }
    // a communication record's line has 15 fields: 29 bytes and its end
    super::reserve_messages(&mut b, &blocks, 30);
    // the list's pages faulted in by the parsing threads, not by the
    // hand-over that every thread waits on
    let ahead = crate::memory::FilledAhead::of(&b.messages);
    let records = phases::span("paraver: records (read, parse, hand over)");
    {
        let b = &mut b;
        blocks.for_each_parallel(
            |block| {
                // grouped by location in the parsing thread where the block
                // has many records per location (4 bytes less a record)
                let mut chunk = parse_block_into(block, &ctx, spare.chunk());
                if let Some(a) = &ahead {
                    a.grow(chunk.messages.len());
                }
                let recs = std::mem::take(&mut chunk.intervals);
                let (grouped, copied) = IntervalBlock::group(recs, declared_ids);
                if let Some(v) = copied {
                    spare.give(|s| &mut s.intervals, v);
                }
                // the events in the fewest bytes (some 10 an event of
                // Extrae's counters, from 24)
                let events = EventBlock::pack(&chunk.events);
                spare.give(|s| &mut s.events, std::mem::take(&mut chunk.events));
                (chunk, grouped, events)
            },
            |_block, (chunk, intervals, events)| {
                let _p = phases::span("paraver: hand over (one thread)");
                chunk_error(&chunk, b, &damage, &src)?;
                b.add_interval_block(intervals);
                b.add_event_block(events);
                // into the list reserved before (reserve_messages)
                b.messages.extend_from_slice(&chunk.messages);
                spare.give(|s| &mut s.messages, chunk.messages);
                b.collectives.extend_from_slice(&chunk.collectives);
                b.communicators.extend(chunk.comms);
                state_values.extend(chunk.state_values);
                event_types.extend(chunk.event_types);
                global_ops.extend(chunk.global_ops);
                Ok(())
            },
        )?;
    }
    // freed before the model is built (its peak): kept until then, the
    // spare vectors (a few MiB a thread) and the input's buffers (4 MiB
    // on one thread) would add to it
    drop(spare);
    drop(blocks);
    drop(records);
    let tables = phases::span("paraver: locations, states, ids");

    damage.report(&mut b.diagnostics, path, "records")?;
    // the names move to the locations
    if let Some(row) = row {
        let _p = phases::span("paraver: locations");
        make_locations(&mut b, &header, &table, declared, row, true)?;
    }

    let step = phases::span("paraver: states mapped");
    add_states(&mut b, &pcf, state_values);
    let state_map = dense_map(b.states.iter().map(|(id, s)| (s.external_id, id)));
    b.map_raw_states(|v| state_map.get(v));
    drop(step);

    add_event_types(&mut b, &pcf, event_types);
    let type_map = dense_map(
        b.event_types
            .iter()
            .enumerate()
            .map(|(i, t)| (t.external_id, i as u32)),
    );
    b.map_raw_event_kinds(|k| type_map.get(k));

    let mut ops: Vec<u32> = global_ops.into_iter().collect();
    ops.sort_unstable();
    let mut op_map = HashMap::new();
    for o in ops {
        op_map.insert(o, b.collective_op(&format!("global op {o}")));
    }
    let op_map = dense_map(op_map.into_iter().map(|(k, v)| (k as i64, v)));
    remap(&mut b.collectives, |c| &mut c.op, &op_map);

    drop(tables);
    let mut t = b.finish(BuildOptions {
        warn_unsorted: true,
    })?;
    t.reclassify(&opts.classes)?;
    Ok(t)
}

/// The states: the `.pcf`'s, then the values met in the records (in value
/// order) that it does not name.
fn add_states(b: &mut TraceBuilder, pcf: &Pcf, state_values: HashSet<u32>) {
    for (id, name) in &pcf.states {
        b.states
            .add(name, default_class(name), pcf.colors.get(id).copied(), *id);
    }
    let mut values: Vec<u32> = state_values.into_iter().collect();
    values.sort_unstable();
    for v in values {
        if b.states.by_external(v as i64).is_none() {
            let name = match STANDARD_STATES.get(v as usize) {
                Some(n) if pcf.states.is_empty() => n.to_string(),
                _ => format!("State {v}"),
            };
            let name = if b.states.by_name(&name).is_some() {
                format!("State {v}")
            } else {
                name
            };
            b.states.add(
                &name,
                default_class(&name),
                pcf.colors.get(&(v as i64)).copied(),
                v as i64,
            );
        }
    }
}

/// The event types: the `.pcf`'s with their named values, then the types
/// met in the records.
fn add_event_types(b: &mut TraceBuilder, pcf: &Pcf, event_types: HashSet<u32>) {
    for (ty, name, vals) in &pcf.event_types {
        let id = b.event_types.add(*ty, name);
        for (v, n) in vals {
            b.event_types.name_value(id, *v, n);
        }
    }
    let mut types: Vec<u32> = event_types.into_iter().collect();
    types.sort_unstable();
    for t in types {
        if b.event_types.by_external(t as i64).is_none() {
            b.event_types.add(t as i64, &format!("Event type {t}"));
        }
    }
}

/// Streams a Paraver trace: every state record goes to `sink` as it is
/// read (its state as the Paraver value) and none is kept, so memory is
/// that of the sink, not of the trace. Returns the trace without records
/// (locations, states, event types, the span, repairs; every declared
/// thread is a location) and the state id of each Paraver value, and
/// counts the other records in the sink.
pub fn stream(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn IntervalSink,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    let (seen, skeleton) = stream_share(path, opts, sink, (0, 1), None)?;
    stream_skeleton(skeleton, opts, &seen, sink)
}

/// What a share keeps of the trace for [`stream_skeleton`]: the builder
/// with its locations made, the `.pcf` and the declared end (the header,
/// `.pcf` and `.row` are read once per process).
pub struct StreamSkeleton {
    b: TraceBuilder,
    pcf: Pcf,
    declared_end: Time,
}

/// What a share of a streamed trace saw besides what went to its sink.
#[derive(Debug, Default)]
pub struct ShareSeen {
    /// State values of the share's state records, sorted.
    pub state_values: Vec<u32>,
    /// Event types of the share's event records, sorted.
    pub event_types: Vec<u32>,
    /// Repairs made reading the share (a truncated last record).
    pub diagnostics: crate::Diagnostics,
}

impl ShareSeen {
    /// Adds what another share saw.
    pub fn merge(&mut self, other: ShareSeen) {
        self.state_values.extend(other.state_values);
        self.state_values.sort_unstable();
        self.state_values.dedup();
        self.event_types.extend(other.event_types);
        self.event_types.sort_unstable();
        self.event_types.dedup();
        self.diagnostics.warnings.extend(other.diagnostics.warnings);
    }
}

/// Streams share `k` of `n` of the records into `sink`: the records whose
/// line starts in the `k`-th of `n` equal byte ranges of the record
/// section (the file after its header line). Every share begins the sink
/// with all locations, so the sinks of the shares merge. When `n > 1` the
/// shares are read from `src` (the file, or a gzip file's decompressed
/// bytes through its index: [`crate::readers::gzip_index::shared_source`]);
/// without one the file must be plain.
pub fn stream_share(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn IntervalSink,
    (k, n): (u64, u64),
    src: Option<crate::readers::gzip_index::at::Source>,
) -> Result<(ShareSeen, StreamSkeleton)> {
    let Opened {
        blocks,
        damage,
        header,
        pcf,
        row,
        table,
        declared,
        mut b,
    } = open_trace(path, opts)?;
    make_locations(&mut b, &header, &table, declared, row, false)?;
    let declared_end = header.end_time.saturating_mul(header.ns_per_unit);
    sink.begin(b.locations.len(), declared_end)?;
    let n = n.max(1);
    let mut blocks = if n > 1 {
        let h = blocks.next_byte_offset();
        let len = match &src {
            Some(src) => src.size().map_err(|e| Error::io(path, e))?,
            None => std::fs::metadata(path)
                .map_err(|e| Error::io(path, e))?
                .len(),
        }
        .max(h);
        let at = |i: u64| h + ((len - h) as u128 * i as u128 / n as u128) as u64;
        match src {
            Some(src) => input::open_share_at(path, src, at(k), at(k + 1))?,
            None => input::open_share(path, at(k), at(k + 1))?,
        }
    } else {
        blocks
    };
    let ctx = Ctx {
        locs: &table,
        unit: header.ns_per_unit,
    };
    let mut state_values: HashSet<u32> = HashSet::new();
    let mut event_types: HashSet<u32> = HashSet::new();
    let src = path.to_path_buf();
    {
        let b = &mut b;
        let r = blocks.for_each_parallel(
            |block| parse_block(block, &ctx),
            |_block, chunk| {
                chunk_error(&chunk, b, &damage, &src)?;
                sink.intervals(&chunk.intervals)
                    .map_err(|m| Error::parse(&src, Position::none(), m))?;
                for m in &chunk.messages {
                    sink.message(m.src, m.dst, m.send, m.recv, m.bytes)
                        .map_err(|e| Error::parse(&src, Position::none(), e))?;
                }
                use crate::model::stream::Counted;
                let last_event = chunk.events.iter().map(|e| e.time).max().unwrap_or(0);
                sink.counted(Counted::Events, chunk.events.len() as u64, last_event);
                let last_op = chunk.collectives.iter().map(|c| c.end).max().unwrap_or(0);
                sink.counted(
                    Counted::Collectives,
                    chunk.collectives.len() as u64,
                    last_op,
                );
                sink.counted(Counted::Communicators, chunk.comms.len() as u64, 0);
                state_values.extend(chunk.state_values);
                event_types.extend(chunk.event_types);
                Ok(())
            },
        );
        if let Err(e) = r {
            // a share counts lines from its own start: name the file's line
            return Err(match e {
                Error::Parse { path: p, pos, msg } if n > 1 => Error::Parse {
                    pos: Position {
                        line: pos.byte.and_then(|byte| line_of(&p, byte)),
                        byte: pos.byte,
                    },
                    path: p,
                    msg,
                },
                e => e,
            });
        }
    }
    damage.report(&mut b.diagnostics, path, "records")?;
    // the warnings go with the share; the builder keeps its strictness
    let mut diagnostics = crate::Diagnostics::new(opts.strict);
    diagnostics.warnings = std::mem::take(&mut b.diagnostics.warnings);
    let mut seen = ShareSeen {
        state_values: state_values.into_iter().collect(),
        event_types: event_types.into_iter().collect(),
        diagnostics,
    };
    seen.state_values.sort_unstable();
    seen.event_types.sort_unstable();
    Ok((
        seen,
        StreamSkeleton {
            b,
            pcf,
            declared_end,
        },
    ))
}

/// The line number of byte `byte` of a plain file (counted on the error
/// path only).
fn line_of(path: &Path, byte: u64) -> Option<u64> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f).take(byte);
    let mut buf = vec![0u8; 1 << 20];
    let mut lines = 1u64;
    loop {
        let k = r.read(&mut buf).ok()?;
        if k == 0 {
            return Some(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64;
    }
}

/// The trace without records of a stream whose shares saw `seen` and whose
/// (merged) sink is `sink`: locations, the states of the `.pcf` and of the
/// values seen (as the in-memory reader makes them), event types, the span
/// and the repairs; with the state id of each Paraver value.
pub fn stream_skeleton(
    skeleton: StreamSkeleton,
    opts: &ReadOptions,
    seen: &ShareSeen,
    sink: &dyn IntervalSink,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    let StreamSkeleton {
        mut b,
        pcf,
        declared_end,
    } = skeleton;
    b.diagnostics
        .warnings
        .extend(seen.diagnostics.warnings.iter().cloned());
    add_states(&mut b, &pcf, seen.state_values.iter().copied().collect());
    add_event_types(&mut b, &pcf, seen.event_types.iter().copied().collect());
    // a value the `.pcf` names twice is the first state of that value, as
    // the in-memory reader maps it
    let mut keys: Vec<(u32, StateId)> = Vec::new();
    for (id, s) in b.states.iter() {
        if let Ok(v) = u32::try_from(s.external_id)
            && b.states.by_external(s.external_id) == Some(id)
        {
            keys.push((v, id));
        }
    }
    b.set_declared_end(declared_end.max(sink.end_time()));
    let (overlaps, first) = sink.overlaps();
    b.overlaps_clipped(overlaps, first.map(|(l, t)| (l as usize, t)))?;
    let mut t = b.finish(BuildOptions {
        warn_unsorted: true,
    })?;
    t.reclassify(&opts.classes)?;
    Ok((t, keys))
}

/// Declared threads beyond which, when fewer than a quarter have records,
/// only the threads with records become locations.
const LAZY_LOCATIONS: u64 = 65_536;

/// Makes the locations of the provisional ids of `table` (and their node
/// and process groups, named by the `.row`), and renumbers the records'
/// locations when only those with records are kept.
fn make_locations(
    b: &mut TraceBuilder,
    header: &Header,
    table: &LocTable,
    declared: u64,
    mut row: HashMap<String, Vec<CompactString>>,
    lazy_allowed: bool,
) -> Result<()> {
    let mut used: Vec<u32> = Vec::new();
    let lazy = lazy_allowed && declared > LAZY_LOCATIONS && {
        used.extend(b.raw_locations());
        b.raw_event_locations(|l| {
            if l != GLOBAL {
                used.push(l)
            }
        });
        used.extend(b.messages.iter().flat_map(|m| [m.src, m.dst]));
        used.extend(b.collectives.iter().map(|c| c.loc));
        used.sort_unstable();
        used.dedup();
        (used.len() as u64).saturating_mul(4) < declared
    };
    // the `.row`'s names move to the groups and locations (a copy and a
    // free of each at 65,536 threads cost more than making the names)
    let mut node_names = row.remove("NODE").unwrap_or_default();
    let mut task_names = row.remove("TASK").unwrap_or_default();
    let mut thread_names = row.remove("THREAD").unwrap_or_default();
    drop(row);
    // the tasks in order, with the provisional ids that become their
    // threads' locations (a task without any is left out)
    struct Task<'u> {
        app: usize,
        task: usize,
        node: u32,
        index: usize,
        base: u32,
        /// the used ids (lazy), else all of `base..end`
        used: &'u [u32],
        end: u32,
    }
    impl Task<'_> {
        fn ids(&self) -> impl Iterator<Item = u32> + '_ {
            let all = self.used.is_empty().then_some(self.base..self.end);
            self.used.iter().copied().chain(all.into_iter().flatten())
        }

        /// How many [`Self::ids`] gives.
        fn count(&self) -> usize {
            if self.used.is_empty() {
                self.end.saturating_sub(self.base) as usize
            } else {
                self.used.len()
            }
        }
    }
    // the tasks in order, walked again where needed: listed, at 56 bytes a
    // task, they were 3.6 MiB at 65,536 tasks beside the model's new lists
    // of groups and locations (the read's peak)
    let tasks = || {
        let (mut task_index, mut next_used) = (0usize, 0usize);
        let used = &used;
        header
            .apps
            .iter()
            .enumerate()
            .flat_map(|(ai, app)| app.iter().enumerate().map(move |(ti, t)| (ai, ti, *t)))
            .filter_map(move |(ai, ti, (threads, node))| {
                let index = task_index;
                task_index += 1;
                let (base, _) = table.apps[ai][ti];
                let ids = if lazy {
                    let from = next_used;
                    while next_used < used.len() && used[next_used] < base + threads {
                        next_used += 1;
                    }
                    if from == next_used {
                        return None;
                    }
                    &used[from..next_used]
                } else {
                    &[]
                };
                Some(Task {
                    app: ai,
                    task: ti,
                    node,
                    index,
                    base,
                    used: ids,
                    end: base + threads,
                })
            })
    };
    // the names the `.row` does not give, made on all threads (at 65,536
    // tasks of a thread each, copying and making the names was most of
    // the 0.04 s the locations took on one): the task's, and its
    // threads' beyond the `.row`'s
    let (tasks_named, threads_named) = (task_names.len(), thread_names.len());
    let all_named =
        tasks().all(|t| t.index < tasks_named && t.ids().all(|p| (p as usize) < threads_named));
    let made: Vec<(Option<CompactString>, Vec<CompactString>)> = if all_named {
        Vec::new()
    } else {
        use rayon::prelude::*;
        tasks()
            .collect::<Vec<_>>()
            .par_iter()
            .with_min_len(256)
            .map(|t| {
                let name = (t.index >= tasks_named)
                    .then(|| format_compact!("TASK {}.{}", t.app + 1, t.task + 1));
                let threads = t
                    .ids()
                    .filter(|&prov| prov as usize >= threads_named)
                    .map(|prov| {
                        format_compact!("THREAD {}.{}.{}", t.app + 1, t.task + 1, prov - t.base + 1)
                    })
                    .collect();
                (name, threads)
            })
            .collect()
    };
    // the model's lists of exactly their size: grown, the groups' took up
    // to twice the room, and half as much again while each copy was made
    // (at 65,536 tasks, the read's peak)
    let mut node_used = vec![false; header.nodes.len()];
    for t in tasks() {
        if let Some(used) = (t.node as usize)
            .checked_sub(1)
            .and_then(|n| node_used.get_mut(n))
        {
            *used = true;
        }
    }
    let nodes = node_used.iter().filter(|&&u| u).count();
    drop(node_used);
    let threads: usize = tasks().map(|t| t.count()).sum();
    let groups = nodes + tasks().count();
    // (refused, as for a header of billions of threads, they grow as they
    // fill, as before)
    let _ = b.locations.groups.try_reserve_exact(groups);
    let _ = b.locations.locations.try_reserve_exact(threads);
    let mut made = made.into_iter();
    let mut node_groups: HashMap<usize, u32> = HashMap::new();
    for t in tasks() {
        let (name, threads) = made.next().unwrap_or_default();
        let parent = (t.node as usize).checked_sub(1).and_then(|n| {
            (n < header.nodes.len()).then(|| {
                *node_groups.entry(n).or_insert_with(|| {
                    let name = match node_names.get_mut(n) {
                        Some(s) => std::mem::take(s),
                        None => format_compact!("node {}", n + 1),
                    };
                    b.locations.add_group(name, GroupKind::Node, None)
                })
            })
        });
        let name = match name {
            Some(s) => s,
            None => task_names
                .get_mut(t.index)
                .map(std::mem::take)
                .unwrap_or_default(),
        };
        let g = b.locations.add_group(name, GroupKind::Process, parent);
        let mut made = threads.into_iter();
        for prov in t.ids() {
            let name = match thread_names.get_mut(prov as usize) {
                Some(s) => std::mem::take(s),
                None => made.next().unwrap_or_default(),
            };
            b.locations
                .add(name, LocationKind::Thread, Some(g), prov as i64);
        }
    }
    if lazy {
        // provisional id → position among the used ones
        let at = |l: &mut u32| {
            if let Ok(k) = used.binary_search(l) {
                *l = k as u32;
            }
        };
        b.renumber_raw_locations(at);
        let src = b.source.clone();
        b.diagnostics.note(
            "declared-threads",
            &src,
            Position::line(1),
            declared - used.len() as u64,
            || {
                format!(
                    "the header declares {declared} threads, {} have records: only those are kept as locations",
                    used.len()
                )
            },
        );
    }
    Ok(())
}

/// A lookup from external ids (non-negative, fitting u32) to table ids.
enum IdMap {
    Dense(Vec<u32>),
    Sparse(HashMap<u32, u32>),
}

impl IdMap {
    /// The id of value `v` (0 for a value without one).
    fn get(&self, v: u32) -> u32 {
        match self {
            IdMap::Dense(m) => m.get(v as usize).copied().unwrap_or(0),
            IdMap::Sparse(m) => m.get(&v).copied().unwrap_or(0),
        }
    }
}

fn dense_map(pairs: impl Iterator<Item = (i64, u32)>) -> IdMap {
    let pairs: Vec<(u32, u32)> = pairs
        .filter_map(|(e, i)| u32::try_from(e).ok().map(|e| (e, i)))
        .collect();
    let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
    if max < 1 << 20 {
        let mut v = vec![u32::MAX; max as usize + 1];
        for (e, i) in pairs {
            if v[e as usize] == u32::MAX {
                v[e as usize] = i;
            }
        }
        IdMap::Dense(v)
    } else {
        let mut m = HashMap::new();
        for (e, i) in pairs {
            m.entry(e).or_insert(i);
        }
        IdMap::Sparse(m)
    }
}

fn remap<T: Send>(items: &mut [T], field: impl Fn(&mut T) -> &mut u32 + Sync, map: &IdMap) {
    use rayon::prelude::*;
    items.par_iter_mut().for_each(|it| {
        let f = field(it);
        *f = map.get(*f);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of random fields, as written and with every field padded
    /// with zeros to 16 to 20 digits: the padded fields are all read field
    /// by field, the plain ones mostly in one pass ([`leading_digits`]).
    #[test]
    fn fields_in_one_pass_give_the_records_of_the_field_by_field_parse() {
        let locs = LocTable {
            apps: vec![(0..8).map(|t| (t * 3, 3)).collect()],
        };
        let ctx = Ctx {
            locs: &locs,
            unit: 1,
        };
        let mut rng = crate::test_rng::XorShift(0x5EED);
        // a number of up to `digits` digits
        let num = |rng: &mut crate::test_rng::XorShift, digits: u64| {
            let k = rng.below(digits + 1) as u32;
            rng.below(10u64.pow(k))
        };
        let (mut plain, mut padded) = (String::new(), String::new());
        for _ in 0..20_000 {
            let (t, h) = (rng.below(8) + 1, rng.below(3) + 1);
            let begin = num(&mut rng, 15);
            let fields: Vec<u64> = match rng.below(3) {
                0 => {
                    let (len, state) = (num(&mut rng, 12), num(&mut rng, 4));
                    vec![1, 1, 1, t, h, begin, begin + len, state]
                }
                1 => {
                    let mut v = vec![2, 1, 1, t, h, begin];
                    for _ in 0..=rng.below(4) {
                        v.extend([num(&mut rng, 9), num(&mut rng, 19)]);
                    }
                    v
                }
                _ => {
                    let (to, late) = (rng.below(8) + 1, num(&mut rng, 8));
                    let (size, tag) = (num(&mut rng, 18), num(&mut rng, 6));
                    let recv = begin + 5 + late;
                    vec![
                        3, 1, 1, t, h, begin, begin, 1, 1, to, 1, recv, recv, size, tag,
                    ]
                }
            };
            let text: Vec<String> = fields.iter().map(u64::to_string).collect();
            plain += &(text.join(":") + "\n");
            let pad = 16 + rng.below(5) as usize;
            let text: Vec<String> = fields[1..].iter().map(|v| format!("{v:0pad$}")).collect();
            padded += &format!("{}:{}\n", fields[0], text.join(":"));
        }
        let parse = |text: &str| {
            let block = Block {
                data: text.as_bytes().to_vec(),
                first_line: 1,
                first_byte: 0,
                last: true,
            };
            let c = parse_block(&block, &ctx);
            assert!(c.error.is_none(), "{:?}", c.error);
            format!("{:?} {:?} {:?}", c.intervals, c.events, c.messages)
        };
        let (a, b) = (parse(&plain), parse(&padded));
        assert!(a.len() > 1_000_000);
        assert!(a == b);
    }

    /// The block parse as it was before [`plain_record`]: every line cut
    /// at its end first, then parsed by [`parse_record`].
    fn parse_lines_cut_first(block: &Block, ctx: &Ctx) -> Chunk {
        let mut out = Chunk::default();
        let (mut last_state, mut last_type) = (u32::MAX, u32::MAX);
        for (line_no, byte, line) in block.lines() {
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let ahead = block.from_byte(byte).unwrap_or(line);
            if let Err(msg) =
                parse_record(line, ahead, ctx, &mut out, &mut last_state, &mut last_type)
            {
                out.fail(block, line_no, byte, line, msg);
                break;
            }
        }
        out
    }

    /// State, event and communication records read in one pass ([`plain_record`])
    /// and declined to the line parse give what cutting every line first
    /// gave: plain and padded fields, CRLF ends, comments, blank lines,
    /// events, negative tags, malformed and out-of-range fields (the error,
    /// its line and byte), a last line with no line feed, at any offset.
    #[test]
    fn records_in_one_pass_give_those_of_lines_cut_first() {
        let locs = LocTable {
            apps: vec![(0..4).map(|t| (t * 2, 2)).collect()],
        };
        let mut rng = crate::test_rng::XorShift(0xB10C);
        for round in 0..400 {
            let ctx = Ctx {
                locs: &locs,
                unit: if round % 5 == 0 { 1000 } else { 1 },
            };
            let mut text = String::new();
            for _ in 0..rng.below(60) {
                let (t, h) = (rng.below(5) + 1, rng.below(3) + 1);
                let digits = rng.below(17) as u32;
                let begin = rng.below(10u64.pow(digits));
                let end = begin + rng.below(1000);
                let line = match rng.below(40) {
                    0 => "# a comment".to_string(),
                    1 => String::new(),
                    2 => format!("2:1:1:{t}:{h}:{begin}:7:{}", rng.below(9)),
                    18..=24 => {
                        let mut line = format!("2:1:1:{t}:{h}:{begin}");
                        for _ in 0..=rng.below(4) {
                            let (ty, value) = (rng.below(1 << 34), rng.below(1 << 50));
                            line += &match rng.below(12) {
                                0 => format!(":{ty}:-{value}"),
                                1 => format!(":{ty}"),
                                2 => format!(":{ty}:{value}:"),
                                3 => format!(":{ty}:{value:020}"),
                                _ => format!(":{}:{value}", ty % 9),
                            };
                        }
                        if rng.below(8) == 0 {
                            line.push('\r');
                        }
                        line
                    }
                    3 => format!("1:1:1:{t}:{h}:{end}:{begin}:1"),
                    4 => format!("1:1:1:{t}:{h}:{begin}:{end}:{}", 1u64 << 33),
                    5 => format!("1:1:1:{t}:{h}:{begin}:{end}:x"),
                    6 => format!("1:1:1:{t}:{h}:{begin}:{end}:1:9"),
                    7 => format!("1:1:1:{t}:{h}:{begin:020}:{end:020}:2"),
                    8 => format!("1:1:1:{t}:{h}:{begin}:{end}:3\r"),
                    9 => format!("1:1:1:{t}:{h}::{end}:3"),
                    10 => format!("1:1:1:{t}:{h}:{}:{}:3", u64::MAX / 10, u64::MAX / 10),
                    11..=17 => {
                        let (to, size, tag) = (rng.below(5) + 1, rng.below(1 << 40), rng.below(99));
                        let tag = match rng.below(5) {
                            0 => format!("-{tag}"),
                            1 => format!("{tag}:5"),
                            2 => format!("{tag}\r"),
                            _ => tag.to_string(),
                        };
                        let (psend, precv) = (begin + 3, end + 7);
                        format!(
                            "3:1:1:{t}:{h}:{begin}:{psend}:2:1:{to}:1:{end}:{precv}:{size}:{tag}"
                        )
                    }
                    _ => {
                        let (cpu, state) = (rng.below(99), rng.below(20));
                        format!("1:{cpu}:1:{t}:{h}:{begin}:{end}:{state}")
                    }
                };
                text += &line;
                text.push('\n');
            }
            if rng.below(3) == 0 {
                text.pop(); // no line feed at the end
            }
            let block = Block {
                data: text.into_bytes(),
                first_line: 1 + rng.below(100),
                first_byte: rng.below(1 << 40),
                last: rng.below(2) == 0,
            };
            let (a, b) = (
                parse_block(&block, &ctx),
                parse_lines_cut_first(&block, &ctx),
            );
            let show = |c: &Chunk| {
                let sorted = |set: &HashSet<u32>| {
                    let mut v: Vec<u32> = set.iter().copied().collect();
                    v.sort_unstable();
                    v
                };
                let (states, types) = (sorted(&c.state_values), sorted(&c.event_types));
                format!(
                    "{:?} {:?} {:?} {states:?} {types:?} {:?} {}",
                    c.intervals, c.events, c.messages, c.error, c.truncated
                )
            };
            assert_eq!(show(&a), show(&b), "round {round}");
        }
    }

    #[test]
    fn header_of_the_qsort_trace() {
        let h =
            parse_header("#Paraver (26/01/04 at 16:35):260199:4:1:4(1:1,1:2,1:3,1:4),8").unwrap();
        assert_eq!(h.end_time, 260199);
        assert_eq!(h.ns_per_unit, 1000);
        assert_eq!(h.nodes, vec![0, 0, 0, 0]);
        assert_eq!(h.apps, vec![vec![(1, 1), (1, 2), (1, 3), (1, 4)]]);
    }

    #[test]
    fn header_with_nodes_and_ns() {
        let h =
            parse_header("#Paraver (06/01/2011 at 11:22):2001_ns:2(1,1):1:2(1:1,1:2),0").unwrap();
        assert_eq!(h.ns_per_unit, 1);
        assert_eq!(h.nodes, vec![1, 1]);
        assert_eq!(h.apps[0].len(), 2);
        let h = parse_header("#Paraver (x):10_ns:0:2:1(2:1):2(1:1,1:1)").unwrap();
        assert_eq!(h.apps, vec![vec![(2, 1)], vec![(1, 1), (1, 1)]]);
    }

    /// A trace of several blocks (messages, intervals and events in each)
    /// gives one model whatever the number of threads that parse it. Its
    /// 14 MB leave the list of messages room enough (16 MiB) for the
    /// parsing threads to fault its pages in ahead of the hand-over
    /// ([`crate::memory::FilledAhead`]), on 2 threads and more.
    #[test]
    fn a_read_gives_one_model_on_any_number_of_threads() {
        use crate::synth::{self, MachineModel, OutputFormat, SynthConfig, Workload};
        let cfg = SynthConfig {
            workload: Workload::Broadcast {
                bytes: 4096,
                reps: 1400,
                work: 20_000.0,
            },
            procs: 64,
            procs_per_node: 4,
            model: MachineModel::default(),
            seed: 3,
            counters: 0,
        };
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("b.prv");
        synth::write(&cfg, OutputFormat::Paraver, &path, None).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 3 * input::BLOCK_SIZE as u64);
        // the room reserved for the messages (a line of 30 bytes at least)
        let room = (len / 30) as usize * std::mem::size_of::<crate::model::builder::RawMessage>();
        assert!(room >= 16 << 20, "{room} bytes of room");
        let model = |threads: usize| {
            let pool = crate::test_pool::pool(threads);
            let t = pool
                .install(|| read(&path, &ReadOptions::default()))
                .unwrap();
            (t.messages.len(), serde_json::to_string(&t).unwrap())
        };
        let one = model(1);
        assert!(one.0 > 50_000, "{} messages", one.0);
        for threads in [2, 5, 12] {
            assert!(model(threads) == one, "{threads} threads");
        }
        // written compressed (its .pcf and .row are b.pcf and b.row again),
        // the list of messages is not reserved from the file's size: the
        // same messages
        let gz = d.path().join("b.prv.gz");
        synth::write(&cfg, OutputFormat::Paraver, &gz, None).unwrap();
        let plain = read(&path, &ReadOptions::default()).unwrap();
        let zipped = read(&gz, &ReadOptions::default()).unwrap();
        assert_eq!(
            serde_json::to_string(&zipped.messages).unwrap(),
            serde_json::to_string(&plain.messages).unwrap()
        );
    }

    /// A `.row` that names some nodes, tasks and threads: theirs are kept,
    /// the others get the standard names; with a lazy header too, where
    /// only the threads with records become locations.
    #[test]
    fn a_row_naming_some_locations() {
        let d = tempfile::tempdir().unwrap();
        let row = "LEVEL NODE SIZE 1\nalpha\n\nLEVEL TASK SIZE 2\nt-one\nt-two\n\n\
                   LEVEL THREAD SIZE 3\nth-a\nth-b\nth-c\n";
        for (header, records, want) in [
            (
                "#Paraver (01/01/70 at 00:00):100_ns:2(1,1):1:3(2:1,1:2,1:2)",
                "1:1:1:1:1:0:10:1\n1:1:1:1:2:0:10:1\n1:2:1:2:1:0:10:1\n1:2:1:3:1:0:10:1\n",
                vec![
                    "alpha/t-one/th-a",
                    "alpha/t-one/th-b",
                    "node 2/t-two/th-c",
                    "node 2/TASK 1.3/THREAD 1.3.1",
                ],
            ),
            (
                "#Paraver (01/01/70 at 00:00):100_ns:1(1):1:2(1:1,100000:1)",
                "1:1:1:1:1:0:10:1\n1:1:1:2:7:0:10:1\n1:1:1:2:2:0:10:1\n",
                vec![
                    "alpha/t-one/th-a",
                    "alpha/t-two/th-c",
                    "alpha/t-two/THREAD 1.2.7",
                ],
            ),
        ] {
            let path = d.path().join("t.prv");
            std::fs::write(&path, format!("{header}\n{records}")).unwrap();
            std::fs::write(d.path().join("t.row"), row).unwrap();
            let t = read(&path, &ReadOptions::default()).unwrap();
            let got: Vec<String> = (0..t.num_locations() as u32)
                .map(|l| t.locations.path(l))
                .collect();
            assert_eq!(got, want, "{header}");
        }
    }

    #[test]
    fn bad_headers() {
        for (h, want) in [
            ("#Paraver (x):abc:0:1:1(1:1)", "end time"),
            ("#Paraver (x):10:0:2:1(1:1)", "application description"),
            ("#Paraver (x):10:0:1:2(1:1)", "task description"),
            ("#Paraver (x):10:0:1:1(20000000:1)", "absurd"),
            ("#Paraver (x):10:0:1:20000000(1:1)", "absurd"),
            ("#Paraver (x", "')'"),
            ("hello", "#Paraver"),
        ] {
            let e = parse_header(h).unwrap_err();
            assert!(e.contains(want), "{h}: {e}");
        }
    }
}
