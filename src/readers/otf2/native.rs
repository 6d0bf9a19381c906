//! OTF2 archives decoded here, in safe Rust, without the OTF2 library: the
//! anchor, the global definitions, each location's local definitions
//! (mapping tables, clock offsets) and its events, from the files of the
//! POSIX substrate, uncompressed (what Score-P writes).
//!
//! The format (OTF2 2.x and 3.x, read from its writer's sources): every
//! file but the anchor is a run of chunks of the anchor's chunk size (256
//! KiB to 16 MiB; the last one shorter), each opened by a header (byte 3,
//! the byte order 0x23 big / 0x42 little, the numbers of its first and
//! last event as 8 bytes each) and closed by byte 0 (the next chunk
//! follows) or 2 (the end of the file). A record is its type byte, a
//! length (1 byte, or 255 and 8 bytes) and its attributes, or, for ten
//! event types with one attribute, the type and that attribute alone; an
//! event's time is the last timestamp record (byte 5 and 8 bytes) before
//! it. Integers but timestamps are compressed: a byte 0 (zero), 255 (all
//! ones) or n ≤ 8 followed by the value's n low bytes in the file's byte
//! order. Readers take a record's attributes that they know and jump to
//! its announced end: later versions of the format only append.
//!
//! What the library's readers give is given here: local ids through the
//! location's mapping tables (identity where a table has no entry), times
//! corrected by the location's clock offsets (linear between each two,
//! rounded half to even), the same events counted as unknown. An archive
//! this module does not decode (another substrate, compression, a format
//! before OTF2 2.0, records older than their current layout) is left to
//! the library ([`Unsupported`]).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Defs, EventSink, GroupError, MetricMembers, UNDEF32, metric_value};

/// The archive is one this module leaves to the library, and why.
#[derive(Debug)]
pub(super) struct Unsupported(pub String);

/// A damaged file: where and what.
#[derive(Debug)]
pub(super) struct Bad {
    pub byte: u64,
    pub why: String,
}

type Res<T> = std::result::Result<T, Bad>;

/// What the anchor says about the files (both chunk sizes in bytes).
#[derive(Debug, Clone)]
pub(super) struct Files {
    pub chunk_events: usize,
    pub chunk_defs: usize,
    /// The directory of the locations' `N.evt` and `N.def`.
    pub dir: PathBuf,
}

const CHUNK_MIN: u64 = 256 * 1024;
const CHUNK_MAX: u64 = 16 * 1024 * 1024;

const END_OF_CHUNK: u8 = 0;
const END_OF_FILE: u8 = 2;
const CHUNK_HEADER: u8 = 3;
const TIMESTAMP: u8 = 5;
const ATTRIBUTE_LIST: u8 = 6;
const BIG: u8 = 0x23;
const LITTLE: u8 = 0x42;

/// A reading position in one chunk (`b` is the chunk; `base` its offset in
/// the file, for messages).
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
    base: u64,
}

impl<'a> Cursor<'a> {
    fn bad<T>(&self, why: impl Into<String>) -> Res<T> {
        Err(Bad {
            byte: self.base + self.pos as u64,
            why: why.into(),
        })
    }

    #[inline]
    fn u8(&mut self) -> Res<u8> {
        match self.b.get(self.pos) {
            Some(&v) => {
                self.pos += 1;
                Ok(v)
            }
            None => self.bad("the chunk ends inside a record"),
        }
    }

    #[inline]
    fn bytes(&mut self, n: usize) -> Res<&'a [u8]> {
        match self.b.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.bad("the chunk ends inside a record"),
        }
    }

    /// 8 bytes in the file's byte order.
    #[inline(always)]
    fn u64_full(&mut self) -> Res<u64> {
        let s = self.bytes(8)?;
        let a = [s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]];
        Ok(if self.big {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    }

    fn f64(&mut self) -> Res<f64> {
        Ok(f64::from_bits(self.u64_full()?))
    }

    /// A compressed integer of at most `max` bytes.
    #[inline(always)]
    fn compressed(&mut self, max: u8, ones: u64) -> Res<u64> {
        // the common case, a little-endian value with 8 bytes after it in
        // the chunk: one unaligned load, masked to its length
        let p = self.pos;
        if !self.big
            && let Some(w) = self.b.get(p..p + 9)
        {
            let n = w[0];
            if n == 0 {
                self.pos = p + 1;
                return Ok(0);
            }
            if n <= max {
                let raw = u64::from_le_bytes([w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]]);
                let v = if n == 8 {
                    raw
                } else {
                    raw & ((1u64 << (8 * n as u32)) - 1)
                };
                self.pos = p + 1 + n as usize;
                return Ok(v);
            }
        }
        self.compressed_slow(max, ones)
    }

    #[inline(never)]
    fn compressed_slow(&mut self, max: u8, ones: u64) -> Res<u64> {
        let n = self.u8()?;
        match n {
            0 => Ok(0),
            255 => Ok(ones),
            n if n > max => self.bad(format!("a compressed integer of {n} bytes (at most {max})")),
            n => {
                let s = self.bytes(n as usize)?;
                let mut v = 0u64;
                if self.big {
                    for &x in s {
                        v = (v << 8) | x as u64;
                    }
                } else {
                    for &x in s.iter().rev() {
                        v = (v << 8) | x as u64;
                    }
                }
                Ok(v)
            }
        }
    }

    #[inline]
    fn cu32(&mut self) -> Res<u32> {
        Ok(self.compressed(4, u32::MAX as u64)? as u32)
    }

    #[inline]
    fn cu64(&mut self) -> Res<u64> {
        self.compressed(8, u64::MAX)
    }

    fn ci64(&mut self) -> Res<i64> {
        Ok(self.cu64()? as i64)
    }

    /// A NUL-terminated string.
    fn string(&mut self) -> Res<String> {
        let rest = &self.b[self.pos.min(self.b.len())..];
        match memchr::memchr(0, rest) {
            Some(k) => {
                let s = String::from_utf8_lossy(&rest[..k]).into_owned();
                self.pos += k + 1;
                Ok(s)
            }
            None => self.bad("a string without its terminating NUL"),
        }
    }

    /// Reads a record's length; where its attributes end.
    #[inline]
    fn record(&mut self) -> Res<usize> {
        let n = match self.u8()? {
            255 => self.u64_full()?,
            n => n as u64,
        };
        let end = (self.pos as u64).saturating_add(n);
        if end > self.b.len() as u64 {
            return self.bad(format!(
                "a record of {n} bytes runs past the end of its chunk"
            ));
        }
        Ok(end as usize)
    }

    /// Whether attributes remain before `end`.
    fn more(&self, end: usize) -> bool {
        self.pos < end
    }

    /// Jumps to a record's announced end; reading past it is damage.
    fn end_record(&mut self, end: usize) -> Res<()> {
        if self.pos > end {
            return self.bad("a record's attributes run past its announced length");
        }
        self.pos = end;
        Ok(())
    }
}

/// Reads the chunks of one file in turn into a buffer of the chunk size.
struct Chunks {
    file: File,
    size: usize,
    /// Where the next chunk starts in the file.
    next: u64,
    buf: Vec<u8>,
    /// Where the last chunk read ends in the file.
    end: u64,
}

impl Chunks {
    fn open(path: &Path, size: usize, buf: Vec<u8>) -> std::io::Result<Chunks> {
        Ok(Chunks {
            file: File::open(path)?,
            size,
            next: 0,
            buf,
            end: 0,
        })
    }

    /// The next chunk (`None` at the end of the file).
    fn next(&mut self) -> Res<Option<Cursor<'_>>> {
        let at = self.next;
        self.next += self.size as u64;
        // the buffer keeps its room (a location's 4 MiB definition chunk,
        // then its 1 MiB event chunks), and its pages are touched as far as
        // what is read goes: filled with zeros to the chunk size first, a
        // reading thread's buffer took 4 MiB for a definition file of a few
        // KiB, and 16 threads 1.2× the model of a 150 MB archive
        self.buf.clear();
        self.buf.reserve_exact(self.size);
        let read = std::io::Read::by_ref(&mut self.file)
            .take(self.size as u64)
            .read_to_end(&mut self.buf);
        let got = self.buf.len();
        if let Err(e) = read {
            return Err(Bad {
                byte: at + got as u64,
                why: format!("cannot read: {e}"),
            });
        }
        if got == 0 {
            return Ok(None);
        }
        self.end = at + got as u64;
        let mut c = Cursor {
            b: &self.buf[..got],
            pos: 0,
            big: false,
            base: at,
        };
        if c.u8()? != CHUNK_HEADER {
            return c.bad("expected a chunk header (byte 3)");
        }
        c.big = match c.u8()? {
            BIG => true,
            LITTLE => false,
            b => return c.bad(format!("byte order {b:#04x} is neither 0x23 nor 0x42")),
        };
        c.bytes(16)?;
        Ok(Some(c))
    }
}

/// Calls `f(type, cursor, time)` for each record of a chunked file up to
/// its end-of-file byte; `timed` files (events) take timestamp records.
/// `f` returns false to stop. The buffer is handed back for reuse.
fn records(
    path: &Path,
    size: usize,
    buf: Vec<u8>,
    timed: bool,
    mut f: impl FnMut(u8, &mut Cursor, u64) -> Res<bool>,
) -> (Vec<u8>, std::result::Result<(), (PathBuf, Bad)>) {
    let mut ch = match Chunks::open(path, size, buf) {
        Ok(c) => c,
        Err(e) => {
            return (
                Vec::new(),
                Err((
                    path.to_path_buf(),
                    Bad {
                        byte: 0,
                        why: format!("cannot open: {e}"),
                    },
                )),
            );
        }
    };
    let res = (|| -> Res<()> {
        let mut time = 0u64;
        loop {
            let Some(mut c) = ch.next()? else {
                return Err(Bad {
                    byte: ch.end,
                    why: "the file ends without its end-of-file record".into(),
                });
            };
            loop {
                let mut ty = c.u8()?;
                if timed && ty == TIMESTAMP {
                    time = c.u64_full()?;
                    ty = c.u8()?;
                }
                match ty {
                    END_OF_CHUNK => break,
                    END_OF_FILE => return Ok(()),
                    _ => {
                        if !f(ty, &mut c, time)? {
                            return Ok(());
                        }
                    }
                }
            }
        }
    })();
    let buf = std::mem::take(&mut ch.buf);
    (buf, res.map_err(|b| (path.to_path_buf(), b)))
}

/// What the anchor's fixed part says.
struct Anchor {
    trace_format: u8,
    version: (u8, u8, u8),
    chunk_events: u64,
    chunk_defs: u64,
    substrate: u8,
    compression: u8,
}

/// The anchor's fixed part: a chunk header without event numbers,
/// "OTF2\0", the anchor format, the trace format, the writer's version (3
/// bytes), the chunk sizes (8 bytes each), the substrate and the
/// compression. `None` when it is not an anchor so laid out.
fn parse_anchor(c: &mut Cursor) -> Res<Option<Anchor>> {
    if c.u8()? != CHUNK_HEADER {
        return Ok(None);
    }
    c.big = match c.u8()? {
        BIG => true,
        LITTLE => false,
        _ => return Ok(None),
    };
    if c.bytes(5)? != b"OTF2\0" {
        return Ok(None);
    }
    let _anchor_format = c.u8()?;
    Ok(Some(Anchor {
        trace_format: c.u8()?,
        version: (c.u8()?, c.u8()?, c.u8()?),
        chunk_events: c.u64_full()?,
        chunk_defs: c.u64_full()?,
        substrate: c.u8()?,
        compression: c.u8()?,
    }))
}

/// The anchor's chunk sizes, or why the library should read it.
pub(super) fn anchor(bytes: &[u8], dir: PathBuf) -> std::result::Result<Files, Unsupported> {
    let mut c = Cursor {
        b: bytes,
        pos: 0,
        big: false,
        base: 0,
    };
    let Ok(Some(a)) = parse_anchor(&mut c) else {
        return Err(Unsupported(
            "an anchor this reader does not recognise".into(),
        ));
    };
    if a.trace_format != 2 {
        return Err(Unsupported(format!("trace format {}", a.trace_format)));
    }
    let (major, minor, bugfix) = a.version;
    if major < 2 {
        return Err(Unsupported(format!(
            "written by OTF2 {major}.{minor}.{bugfix} (before 2.0)"
        )));
    }
    if a.substrate != 1 {
        return Err(Unsupported(format!(
            "file substrate {} (not POSIX)",
            a.substrate
        )));
    }
    if a.compression != 1 {
        return Err(Unsupported(format!("compression {}", a.compression)));
    }
    for s in [a.chunk_events, a.chunk_defs] {
        if !(CHUNK_MIN..=CHUNK_MAX).contains(&s) {
            return Err(Unsupported(format!("chunk size {s}")));
        }
    }
    Ok(Files {
        chunk_events: a.chunk_events as usize,
        chunk_defs: a.chunk_defs as usize,
        dir,
    })
}

// global definition records
const DEF_CLOCK_PROPERTIES: u8 = 5;
const DEF_STRING: u8 = 10;
const DEF_SYSTEM_TREE_NODE: u8 = 12;
const DEF_LOCATION_GROUP: u8 = 13;
const DEF_LOCATION: u8 = 14;
const DEF_REGION: u8 = 15;
const DEF_GROUP: u8 = 18;
const DEF_METRIC_MEMBER: u8 = 19;
const DEF_METRIC_CLASS: u8 = 20;
const DEF_METRIC_INSTANCE: u8 = 21;
const DEF_COMM: u8 = 22;

/// Why the definitions could not be read natively.
pub(super) enum DefsError {
    Unsupported(Unsupported),
    Bad(PathBuf, Bad),
}

/// Reads the global definitions file `path`.
pub(super) fn global_defs(path: &Path, files: &Files) -> std::result::Result<Defs, DefsError> {
    let mut d = Defs::default();
    let mut old: Option<&'static str> = None;
    let (_, res) = records(path, files.chunk_defs, Vec::new(), false, |ty, c, _| {
        let end = c.record()?;
        match ty {
            DEF_CLOCK_PROPERTIES => {
                let res = c.cu64()?;
                let offset = c.cu64()?;
                let length = c.cu64()?;
                d.clock = Some((res, offset, length));
            }
            DEF_STRING => {
                let id = c.cu32()?;
                let s = c.string()?;
                d.strings.insert(id, s);
            }
            DEF_SYSTEM_TREE_NODE => {
                let id = c.cu32()?;
                let name = c.cu32()?;
                let class = c.cu32()?;
                let parent = c.cu32()?;
                d.system_nodes.insert(id, (name, class, parent));
            }
            DEF_LOCATION_GROUP => {
                let id = c.cu32()?;
                let name = c.cu32()?;
                let _ty = c.u8()?;
                let parent = c.cu32()?;
                d.location_groups.insert(id, (name, parent));
            }
            DEF_LOCATION => {
                let id = c.cu64()?;
                let name = c.cu32()?;
                let ty = c.u8()?;
                let _events = c.cu64()?;
                let group = c.cu32()?;
                d.locations.insert(id, (name, ty, group));
            }
            DEF_REGION => {
                let id = c.cu32()?;
                let name = c.cu32()?;
                let _description = c.cu32()?;
                let _region_type = c.u8()?;
                let _file = c.cu32()?;
                let _begin = c.cu32()?;
                let _end = c.cu32()?;
                if !c.more(end) {
                    // before OTF2 1.1: a role derived from the region type
                    old = Some("a region without its role (OTF2 before 1.1)");
                    return Ok(false);
                }
                let _canonical = c.cu32()?;
                let role = c.u8()?;
                let paradigm = c.u8()?;
                d.regions.insert(id, (name, role, paradigm));
            }
            DEF_GROUP => {
                let id = c.cu32()?;
                let _name = c.cu32()?;
                let _pre12 = c.u8()?;
                let n = c.cu32()?;
                // each member takes a byte at least: a count past the
                // record is damage, not an allocation
                if n as usize > end.saturating_sub(c.pos) {
                    return c.bad(format!("a group of {n} members in a shorter record"));
                }
                let mut members = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    members.push(c.cu64()?);
                }
                if !c.more(end) {
                    old = Some("a group without its type (OTF2 before 1.2)");
                    return Ok(false);
                }
                let ty = c.u8()?;
                let paradigm = c.u8()?;
                d.groups.insert(id, (ty, paradigm, members));
            }
            DEF_METRIC_MEMBER => {
                let id = c.cu32()?;
                let name = c.cu32()?;
                let _description = c.cu32()?;
                let _ty = c.u8()?;
                let _mode = c.u8()?;
                let _value = c.u8()?;
                let _base = c.u8()?;
                let _exponent = c.ci64()?;
                let unit = c.cu32()?;
                d.metric_members.insert(id, (name, unit));
            }
            DEF_METRIC_CLASS => {
                let id = c.cu32()?;
                let n = c.u8()?;
                let mut m = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    m.push(c.cu32()?);
                }
                d.metric_classes.insert(id, m);
            }
            DEF_METRIC_INSTANCE => {
                let id = c.cu32()?;
                let class = c.cu32()?;
                d.metric_instances.insert(id, class);
            }
            DEF_COMM => {
                let id = c.cu32()?;
                let name = c.cu32()?;
                let group = c.cu32()?;
                d.comms.insert(id, (name, group));
            }
            _ => {}
        }
        c.end_record(end)?;
        Ok(true)
    });
    if let Some(why) = old {
        return Err(DefsError::Unsupported(Unsupported(why.to_string())));
    }
    res.map_err(|(p, b)| DefsError::Bad(p, b))?;
    Ok(d)
}

// local definition records
const LOCAL_MAPPING_TABLE: u8 = 5;
const LOCAL_CLOCK_OFFSET: u8 = 6;

const MAPPING_REGION: usize = 3;
const MAPPING_METRIC: usize = 5;
const MAPPING_COMM: usize = 6;
const MAPPINGS: usize = 15;

/// A location's table of local to global ids.
enum IdMap {
    /// `global[local]`
    Dense(Vec<u64>),
    /// `(local, global)` sorted by local, one per local (the last given)
    Sparse(Vec<(u64, u64)>),
}

impl IdMap {
    #[inline]
    fn global(&self, local: u64) -> u64 {
        match self {
            IdMap::Dense(g) => g.get(local as usize).copied().unwrap_or(local),
            IdMap::Sparse(p) => match p.binary_search_by_key(&local, |&(l, _)| l) {
                Ok(i) => p[i].1,
                Err(_) => local,
            },
        }
    }
}

/// A clock correction between two synchronisations: from `begin` (ticks)
/// to `end`, `offset` at `begin` changing by `slope` per tick.
#[derive(Clone, Copy)]
struct ClockInterval {
    begin: u64,
    end: u64,
    offset: i64,
    slope: f64,
}

/// What a location's local definitions give its events.
#[derive(Default)]
struct Local {
    maps: [Option<IdMap>; MAPPINGS],
    clock: Vec<ClockInterval>,
}

impl Local {
    #[inline]
    fn map(&self, kind: usize, local: u64) -> u64 {
        match &self.maps[kind] {
            Some(m) => m.global(local),
            None => local,
        }
    }
}

/// Reads location `l`'s local definitions (`N.def`; none when missing).
fn local_defs(files: &Files, l: u64, buf: Vec<u8>) -> (Vec<u8>, Result<Local, GroupError>) {
    let path = files.dir.join(format!("{l}.def"));
    if !path.is_file() {
        return (buf, Ok(Local::default()));
    }
    let mut local = Local::default();
    let mut pending: Option<(u64, i64)> = None;
    let (buf, res) = records(&path, files.chunk_defs, buf, false, |ty, c, _| {
        let end = c.record()?;
        match ty {
            LOCAL_MAPPING_TABLE => {
                let kind = c.u8()? as usize;
                let n = c.cu64()?;
                let mode = c.u8()?;
                if n == 0 {
                    return c.bad("an empty mapping table");
                }
                // an id takes a byte at least, a pair two
                let room = end.saturating_sub(c.pos) as u64 / if mode == 1 { 2 } else { 1 };
                if n > room {
                    return c.bad(format!("a mapping table of {n} ids in a shorter record"));
                }
                let map = match mode {
                    0 => {
                        let mut g = Vec::with_capacity(n as usize);
                        for _ in 0..n {
                            g.push(c.cu64()?);
                        }
                        IdMap::Dense(g)
                    }
                    1 => {
                        let mut p: Vec<(u64, u64)> = Vec::with_capacity(n as usize);
                        for _ in 0..n {
                            let lo = c.cu64()?;
                            let gl = c.cu64()?;
                            p.push((lo, gl));
                        }
                        // sorted by local id, the last pair of a local id kept
                        p.reverse();
                        p.sort_by_key(|&(lo, _)| lo);
                        p.dedup_by_key(|&mut (lo, _)| lo);
                        IdMap::Sparse(p)
                    }
                    m => return c.bad(format!("mapping table mode {m} (0 dense, 1 sparse)")),
                };
                if kind >= MAPPINGS {
                    return c.bad(format!("mapping table of kind {kind}"));
                }
                if local.maps[kind].is_some() {
                    return c.bad(format!("a second mapping table of kind {kind}"));
                }
                local.maps[kind] = Some(map);
            }
            LOCAL_CLOCK_OFFSET => {
                let time = c.u64_full()?;
                let offset = c.ci64()?;
                let _sd = c.f64()?;
                if let Some((begin, off)) = pending {
                    if begin >= time {
                        return c
                            .bad("two clock synchronisations at the same time or out of order");
                    }
                    local.clock.push(ClockInterval {
                        begin,
                        end: time,
                        offset: off,
                        slope: offset.wrapping_sub(off) as f64 / (time - begin) as f64,
                    });
                }
                pending = Some((time, offset));
            }
            _ => {}
        }
        c.end_record(end)?;
        Ok(true)
    });
    let res = match res {
        Ok(()) => Ok(local),
        Err((p, b)) => Err(GroupError::Native(l, 0, p, b)),
    };
    (buf, res)
}

// event records
const EV_ENTER: u8 = 12;
const EV_LEAVE: u8 = 13;
const EV_MPI_SEND: u8 = 14;
const EV_MPI_ISEND: u8 = 15;
const EV_MPI_ISEND_COMPLETE: u8 = 16;
const EV_MPI_IRECV_REQUEST: u8 = 17;
const EV_MPI_RECV: u8 = 18;
const EV_MPI_IRECV: u8 = 19;
const EV_MPI_REQUEST_TEST: u8 = 20;
const EV_MPI_REQUEST_CANCELLED: u8 = 21;
const EV_MPI_COLLECTIVE_BEGIN: u8 = 22;
const EV_MPI_COLLECTIVE_END: u8 = 23;
const EV_OMP_FORK: u8 = 24;
const EV_OMP_TASK_CREATE: u8 = 28;
const EV_OMP_TASK_SWITCH: u8 = 29;
const EV_OMP_TASK_COMPLETE: u8 = 30;
const EV_METRIC: u8 = 31;
const EV_PROGRAM_BEGIN: u8 = 83;
const EV_PROGRAM_END: u8 = 84;
/// The last event type the OTF2 3.0 library knows (CommDestroy); later
/// ones, and 7 to 9, are unknown to it.
const EV_LAST_KNOWN: u8 = 88;

impl Local {
    /// The library's correction of a raw time: the offset at the begin of
    /// the time's interval (the first before it, the last after it,
    /// searched forward from `cur` only) and its slope times the ticks
    /// since, rounded half to even (OTF2 3.0's arithmetic).
    #[inline]
    fn correct(&self, cur: &mut usize, time: u64) -> u64 {
        if self.clock.is_empty() {
            return time;
        }
        while *cur + 1 < self.clock.len() && time > self.clock[*cur].end {
            *cur += 1;
        }
        let c = self.clock[*cur];
        // the difference to the interval's begin in double, not the times
        let diff = if time >= c.begin {
            (time - c.begin) as f64
        } else {
            -((c.begin - time) as f64)
        };
        let offset = c
            .offset
            .wrapping_add((c.slope * diff).round_ties_even() as i64);
        time.wrapping_add(offset as u64)
    }
}

/// Reads the events of `locations` into `ev`, each location's local
/// definitions first, then its events in file order (what the library's
/// `read_group` does).
pub(super) fn read_group<S: EventSink>(
    files: &Files,
    defs: &Defs,
    locations: &[u64],
    size: impl Fn(u64) -> u64,
    mut ev: S,
) -> Result<S, GroupError> {
    let mut buf = Vec::new();
    let mut members_of = MetricMembers::new(defs);
    for &l in locations {
        let (b, local) = local_defs(files, l, buf);
        buf = b;
        let local = local?;
        ev.start_location(l, size(l));
        let path = files.dir.join(format!("{l}.evt"));
        let mut n = 0u64;
        let mut cur = 0usize;
        let mut stopped = false;
        let (b, res) = records(&path, files.chunk_events, buf, true, |ty, c, raw| {
            let t = local.correct(&mut cur, raw);
            let go = match ty {
                EV_ENTER | EV_LEAVE => {
                    let r = local.map(MAPPING_REGION, c.cu32()? as u64) as u32;
                    if ty == EV_ENTER {
                        ev.enter(l, t, r)
                    } else {
                        ev.leave(l, t, r)
                    }
                }
                EV_MPI_ISEND_COMPLETE | EV_MPI_IRECV_REQUEST => {
                    c.cu64()?;
                    ev.timed(l, t)
                }
                EV_MPI_REQUEST_TEST
                | EV_MPI_REQUEST_CANCELLED
                | EV_OMP_TASK_CREATE
                | EV_OMP_TASK_SWITCH
                | EV_OMP_TASK_COMPLETE => {
                    c.cu64()?;
                    true
                }
                EV_OMP_FORK => {
                    c.cu32()?;
                    true
                }
                ATTRIBUTE_LIST => {
                    // attributes of the next event: not kept, not an event
                    let end = c.record()?;
                    c.end_record(end)?;
                    return Ok(true);
                }
                _ => {
                    let end = c.record()?;
                    let go = match ty {
                        EV_MPI_SEND | EV_MPI_ISEND | EV_MPI_RECV | EV_MPI_IRECV => {
                            let peer = c.cu32()?;
                            let comm = local.map(MAPPING_COMM, c.cu32()? as u64) as u32;
                            let tag = c.cu32()?;
                            let len = c.cu64()?;
                            if ty == EV_MPI_SEND || ty == EV_MPI_ISEND {
                                ev.send(l, t, peer, comm, tag, len)
                            } else {
                                ev.recv(l, t, peer, comm, tag, len)
                            }
                        }
                        EV_MPI_COLLECTIVE_BEGIN => ev.coll_begin(l, t),
                        EV_MPI_COLLECTIVE_END => {
                            let op = c.u8()?;
                            let comm = local.map(MAPPING_COMM, c.cu32()? as u64) as u32;
                            let root = c.cu32()?;
                            let sent = c.cu64()?;
                            let received = c.cu64()?;
                            ev.coll_end(l, t, op, comm, root, sent, received)
                        }
                        EV_METRIC => {
                            let metric = local.map(MAPPING_METRIC, c.cu32()? as u64) as u32;
                            let k = c.u8()?;
                            if k == 0 {
                                ev.timed(l, t)
                            } else {
                                let members = members_of.of(metric);
                                let mut go = true;
                                for i in 0..k as usize {
                                    let ty = c.u8()?;
                                    let x = metric_value(ty, c.cu64()?);
                                    if go {
                                        let member = members.get(i).copied().unwrap_or(UNDEF32);
                                        go = ev.metric(l, t, member, x);
                                    }
                                }
                                go
                            }
                        }
                        EV_PROGRAM_BEGIN => ev.program(l, t, 0, 0),
                        EV_PROGRAM_END => {
                            let status = c.ci64()?;
                            ev.program(l, t, 1, status)
                        }
                        10..=EV_LAST_KNOWN => true,
                        _ => ev.unknown(l, t),
                    };
                    c.end_record(end)?;
                    go
                }
            };
            n += 1;
            if !go {
                stopped = true;
            }
            Ok(go)
        });
        buf = b;
        if let Err((p, b)) = res {
            return Err(GroupError::Native(l, n, p, b));
        }
        if stopped {
            return Err(GroupError::Native(
                l,
                n,
                path,
                Bad {
                    byte: 0,
                    why: "interrupted by the reader".into(),
                },
            ));
        }
    }
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::super::format::{TYPE_DOUBLE, TYPE_INT64};
    use super::*;

    fn cursor(b: &[u8], big: bool) -> Cursor<'_> {
        Cursor {
            b,
            pos: 0,
            big,
            base: 0,
        }
    }

    #[test]
    fn compressed_integers_read_in_either_byte_order() {
        let mut c = cursor(&[0, 255, 1, 7, 2, 0x34, 0x12, 5], false);
        assert_eq!(c.cu32().unwrap(), 0);
        assert_eq!(c.cu32().unwrap(), u32::MAX);
        assert_eq!(c.cu32().unwrap(), 7);
        assert_eq!(c.cu32().unwrap(), 0x1234);
        // 5 bytes for a 32-bit integer is damage
        assert!(c.cu32().is_err());
        let mut c = cursor(&[2, 0x12, 0x34, 255], true);
        assert_eq!(c.cu64().unwrap(), 0x1234);
        assert_eq!(c.ci64().unwrap(), -1);
        // a value cut by the chunk's end
        assert!(cursor(&[3, 1], false).cu64().is_err());
    }

    #[test]
    fn records_longer_than_their_chunk_are_damage() {
        let mut c = cursor(&[200, 1, 2], false);
        assert!(c.record().is_err());
        let mut c = cursor(&[255, 0, 0, 0, 0, 0, 0, 0, 1], false);
        assert!(c.record().is_err());
        let mut c = cursor(&[2, 9, 9, 7], false);
        let end = c.record().unwrap();
        assert_eq!(end, 3);
        c.end_record(end).unwrap();
        assert_eq!(c.u8().unwrap(), 7);
    }

    #[test]
    fn sparse_and_dense_maps_fall_back_to_the_local_id() {
        let d = IdMap::Dense(vec![5, 6]);
        assert_eq!((d.global(0), d.global(1), d.global(9)), (5, 6, 9));
        let s = IdMap::Sparse(vec![(2, 20), (4, 40)]);
        assert_eq!((s.global(2), s.global(3), s.global(4)), (20, 3, 40));
    }

    /// Writes the format: compressed integers, full ones, records, chunk
    /// headers, in either byte order.
    struct W {
        b: Vec<u8>,
        big: bool,
    }

    impl W {
        fn new(big: bool) -> W {
            W { b: Vec::new(), big }
        }
        fn u8(&mut self, v: u8) -> &mut Self {
            self.b.push(v);
            self
        }
        fn full(&mut self, v: u64) -> &mut Self {
            let bytes = if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.b.extend_from_slice(&bytes);
            self
        }
        fn cu(&mut self, v: u64) -> &mut Self {
            if v == 0 || v == u64::MAX {
                return self.u8(if v == 0 { 0 } else { 255 });
            }
            let n = (8 - v.leading_zeros() as usize / 8).max(1);
            self.b.push(n as u8);
            if self.big {
                self.b.extend_from_slice(&v.to_be_bytes()[8 - n..]);
            } else {
                self.b.extend_from_slice(&v.to_le_bytes()[..n]);
            }
            self
        }
        fn header(&mut self) -> &mut Self {
            let order = if self.big { BIG } else { LITTLE };
            self.u8(CHUNK_HEADER).u8(order).full(1).full(0)
        }
        /// A record of type `ty` whose attributes `f` writes.
        fn rec(&mut self, ty: u8, f: impl FnOnce(&mut W)) -> &mut Self {
            let mut body = W::new(self.big);
            f(&mut body);
            self.u8(ty).u8(body.b.len() as u8);
            self.b.extend_from_slice(&body.b);
            self
        }
    }

    /// What the decoder calls, as text.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl EventSink for Log {
        fn start_location(&mut self, loc: u64, _bytes: u64) {
            self.0.push(format!("location {loc}"));
        }
        fn enter(&mut self, _l: u64, t: u64, r: u32) -> bool {
            self.0.push(format!("enter {t} {r}"));
            true
        }
        fn leave(&mut self, _l: u64, t: u64, r: u32) -> bool {
            self.0.push(format!("leave {t} {r}"));
            true
        }
        fn send(&mut self, _l: u64, t: u64, p: u32, c: u32, tag: u32, n: u64) -> bool {
            self.0.push(format!("send {t} {p} {c} {tag} {n}"));
            true
        }
        fn recv(&mut self, _l: u64, t: u64, p: u32, c: u32, tag: u32, n: u64) -> bool {
            self.0.push(format!("recv {t} {p} {c} {tag} {n}"));
            true
        }
        fn timed(&mut self, _l: u64, t: u64) -> bool {
            self.0.push(format!("timed {t}"));
            true
        }
        fn coll_begin(&mut self, _l: u64, t: u64) -> bool {
            self.0.push(format!("coll_begin {t}"));
            true
        }
        fn coll_end(&mut self, _l: u64, t: u64, op: u8, c: u32, r: u32, s: u64, v: u64) -> bool {
            self.0.push(format!("coll_end {t} {op} {c} {r} {s} {v}"));
            true
        }
        fn metric(&mut self, _l: u64, t: u64, m: u32, v: f64) -> bool {
            self.0.push(format!("metric {t} {m} {v}"));
            true
        }
        fn program(&mut self, _l: u64, t: u64, k: u8, v: i64) -> bool {
            self.0.push(format!("program {t} {k} {v}"));
            true
        }
        fn unknown(&mut self, _l: u64, t: u64) -> bool {
            self.0.push(format!("unknown {t}"));
            true
        }
    }

    /// A whole archive written byte by byte, in both byte orders, decoded:
    /// its definitions (in two chunks, with a record of a type it does not
    /// know), a dense region table and a sparse communicator
    /// table, two clock offsets, timestamps, singleton and sized events,
    /// an attribute list, a metric, an event of a type newer than OTF2
    /// 3.0 (unknown), a second chunk.
    #[test]
    fn a_hand_written_archive_decodes_in_either_byte_order() {
        for big in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let chunk = CHUNK_MIN as usize;
            let mut anchor = W::new(big);
            anchor.u8(CHUNK_HEADER).u8(if big { BIG } else { LITTLE });
            anchor.b.extend_from_slice(b"OTF2\0");
            anchor.u8(3).u8(2).u8(3).u8(0).u8(2);
            anchor.full(chunk as u64).full(chunk as u64).u8(1).u8(1);
            let files = super::anchor(&anchor.b, dir.path().join("traces")).unwrap();
            assert_eq!(files.chunk_events, chunk);

            let mut d = W::new(big);
            d.header()
                .rec(DEF_CLOCK_PROPERTIES, |w| {
                    w.cu(1_000_000_000).cu(1000).cu(500);
                })
                .rec(DEF_STRING, |w| {
                    w.cu(0);
                    w.b.extend_from_slice(b"main\0");
                })
                .rec(DEF_LOCATION, |w| {
                    w.cu(7).cu(0).u8(1).cu(9).cu(0);
                })
                .rec(DEF_REGION, |w| {
                    w.cu(300)
                        .cu(0)
                        .cu(0)
                        .u8(0)
                        .cu(0)
                        .cu(0)
                        .cu(0)
                        .cu(0)
                        .u8(1)
                        .u8(1)
                        .cu(0);
                })
                .u8(END_OF_CHUNK);
            // the definitions go on in a second chunk
            d.b.resize(chunk, 0xEE);
            d.header()
                .rec(DEF_METRIC_CLASS, |w| {
                    w.cu(4).u8(2).cu(40).cu(41);
                })
                .rec(99, |w| {
                    w.cu(5);
                })
                .u8(END_OF_FILE);
            let def = dir.path().join("traces.def");
            std::fs::write(&def, &d.b).unwrap();
            let Ok(defs) = global_defs(&def, &files) else {
                panic!("global definitions")
            };
            assert_eq!(defs.clock, Some((1_000_000_000, 1000, 500)));
            assert_eq!(defs.strings[&0], "main");
            assert_eq!(defs.locations[&7], (0, 1, 0));
            assert_eq!(defs.regions[&300], (0, 1, 1));
            assert_eq!(defs.metric_classes[&4], vec![40, 41]);

            std::fs::create_dir(dir.path().join("traces")).unwrap();
            let mut l = W::new(big);
            l.header()
                .rec(LOCAL_MAPPING_TABLE, |w| {
                    // dense regions: local 0 → 300, local 1 → 301
                    w.u8(MAPPING_REGION as u8).cu(2).u8(0).cu(300).cu(301);
                })
                .rec(LOCAL_MAPPING_TABLE, |w| {
                    // sparse communicators: local 9 → 2
                    w.u8(MAPPING_COMM as u8).cu(1).u8(1).cu(9).cu(2);
                })
                .rec(LOCAL_CLOCK_OFFSET, |w| {
                    w.full(1000).cu(10).full(0);
                })
                .rec(LOCAL_CLOCK_OFFSET, |w| {
                    w.full(3000).cu(30).full(0);
                })
                .u8(END_OF_FILE);
            std::fs::write(dir.path().join("traces/7.def"), &l.b).unwrap();

            let mut e = W::new(big);
            e.header().u8(TIMESTAMP).full(2000);
            e.u8(EV_ENTER).cu(0);
            e.rec(ATTRIBUTE_LIST, |w| {
                w.cu(1).u8(4).cu(0).cu(42);
            });
            e.rec(EV_MPI_SEND, |w| {
                w.cu(3).cu(9).cu(5).cu(64);
            });
            e.u8(TIMESTAMP).full(2100);
            e.rec(EV_METRIC, |w| {
                w.cu(4)
                    .u8(2)
                    .u8(TYPE_DOUBLE)
                    .cu(1.5f64.to_bits())
                    .u8(TYPE_INT64)
                    .cu(u64::MAX);
            });
            e.u8(EV_MPI_ISEND_COMPLETE).cu(77);
            e.rec(120, |w| {
                w.cu(1);
            });
            e.u8(END_OF_CHUNK);
            e.b.resize(chunk, 0xEE);
            e.header().u8(TIMESTAMP).full(2200);
            e.u8(EV_LEAVE).cu(0);
            e.rec(EV_PROGRAM_END, |w| {
                w.cu(3);
            });
            e.u8(END_OF_FILE);
            std::fs::write(dir.path().join("traces/7.evt"), &e.b).unwrap();

            let Ok(log) = read_group(&files, &defs, &[7], |_| 1, Log::default()) else {
                panic!("events")
            };
            // times t + 10 + 0.01 · (t − 1000): 2000 → 2020, 2100 → 2121,
            // 2200 → 2222
            assert_eq!(
                log.0,
                [
                    "location 7",
                    "enter 2020 300",
                    "send 2020 3 2 5 64",
                    "metric 2121 40 1.5",
                    "metric 2121 41 -1",
                    "timed 2121",
                    "unknown 2121",
                    "leave 2222 300",
                    "program 2222 1 3",
                ],
                "big endian: {big}"
            );
        }
    }

    #[test]
    fn clock_corrections_are_linear_between_synchronisations() {
        let l = Local {
            maps: Default::default(),
            clock: vec![
                ClockInterval {
                    begin: 100,
                    end: 200,
                    offset: 10,
                    slope: 0.1,
                },
                ClockInterval {
                    begin: 200,
                    end: 300,
                    offset: 20,
                    slope: 0.0,
                },
            ],
        };
        let mut cur = 0;
        // before the first synchronisation: the first interval's line
        assert_eq!(l.correct(&mut cur, 50), 55);
        assert_eq!(l.correct(&mut cur, 150), 165);
        assert_eq!(l.correct(&mut cur, 250), 270);
        // past the last: the last interval
        assert_eq!(l.correct(&mut cur, 400), 420);
        // the search only goes forward, as the library's does
        assert_eq!(l.correct(&mut cur, 150), 170);
    }
}
