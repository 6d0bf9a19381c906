//! OTF2 archives (Score-P): decoded here ([`native`], safe Rust, every
//! build) where the archive is of the POSIX substrate, uncompressed and of
//! OTF2 2.0 or later (what Score-P writes), else through the official OTF2
//! library (`library`, feature `otf2`; Debian:
//! `libopen-trace-format2-dev`). Both fill the same definitions and event
//! sinks; the model below does not know which read.
//!
//! Definitions read: strings, clock properties, system tree nodes, location
//! groups, locations, regions (role, paradigm), groups, communicators,
//! metric members, classes and instances. Events read: Enter/Leave, MPI
//! send/isend/isend-complete/recv/irecv/irecv-request, collective
//! begin/end, metrics, program begin/end; unknown records are counted.
//!
//! Model: one location per OTF2 location, under its location group
//! (process) and system tree nodes (machine → node); the state of a location
//! is its innermost open region. Messages are matched sender ↔ receiver per
//! (communicator, ranks, tag), in order, from the send event to the receive
//! event. Metrics become counters named after their members. Timestamps
//! become nanoseconds since the global offset, with the timer resolution.
//!
//! Two readers give that model: an archive whose locations' regions come
//! in time order, none of its events before the global offset (what the
//! OTF2 writer lets Score-P write), is read with each location's regions
//! flattened as they come (`in_order`); any other is read again by the
//! general reader here ([`Events`]), which keeps every region, sorts and
//! nests them, and counts time from the earliest event.
//!
//! Default classes: regions of the MPI, SHMEM, GASPI and UPC paradigms, of
//! the measurement system, and regions whose role is a barrier, a
//! collective, point-to-point, RMA, data transfer, task or thread wait are
//! overhead; every other region is busy.

#[cfg(feature = "otf2")]
mod ffi;
mod format;
mod in_order;
#[cfg(feature = "otf2")]
mod library;
mod native;
pub mod stream;

use std::collections::{BTreeMap, VecDeque};

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

use super::ReadOptions;
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::builder::{IntervalBlock, RawCounter, RawMessage};
use crate::model::matching::{KeyedEvents, match_parts, par_filter_map};
use crate::model::{
    BuildOptions, Format, GroupKind, LocId, LocationKind, NestedSlice, StateClass, StateId, Time,
    TimeUnit, Trace, TraceBuilder, flatten_nested,
};

const UNDEF32: u32 = u32::MAX;

#[derive(Default)]
struct Defs {
    strings: HashMap<u32, String>,
    /// (resolution, global offset, trace length)
    clock: Option<(u64, u64, u64)>,
    /// id → (name, class, parent)
    system_nodes: BTreeMap<u32, (u32, u32, u32)>,
    /// id → (name, system tree parent)
    location_groups: BTreeMap<u32, (u32, u32)>,
    /// id → (name, type, group)
    locations: BTreeMap<u64, (u32, u8, u32)>,
    /// id → (name, role, paradigm)
    regions: HashMap<u32, (u32, u8, u8)>,
    /// id → (type, paradigm, members)
    groups: HashMap<u32, (u8, u8, Vec<u64>)>,
    /// id → (name, group)
    comms: HashMap<u32, (u32, u32)>,
    /// id → (name, unit)
    metric_members: HashMap<u32, (u32, u32)>,
    /// class or instance id → members
    metric_classes: HashMap<u32, Vec<u32>>,
    metric_instances: HashMap<u32, u32>,
}

/// A point-to-point event: (time, location, peer rank, communicator, tag, bytes).
type P2p = (u64, u64, u32, u32, u32, u64);

/// A collective: (location, begin, end, op, communicator, root, sent, received).
type Coll = (u64, u64, u64, u8, u32, u32, u64, u64);

/// An open region: (time, region, seq).
type Open = (u64, u32, u64);
/// A closed region: (start, end, region, seq).
type Closed = (u64, u64, u32, u64);

#[derive(Default)]
struct Events {
    /// per OTF2 location: open regions
    stacks: HashMap<u64, Vec<Open>>,
    /// per OTF2 location: closed regions
    slices: HashMap<u64, Vec<Closed>>,
    sends: Vec<P2p>,
    recvs: Vec<P2p>,
    coll_begin: HashMap<u64, VecDeque<u64>>,
    collectives: Vec<Coll>,
    /// (location, time, member, value)
    metrics: Vec<Metric>,
    markers: Vec<Marker>,
    mismatched_leave: u64,
    unmatched_collective: u64,
    unknown: u64,
    min_time: u64,
    seq: u64,
    /// The location whose events are arriving, with its open and closed
    /// regions taken out of `stacks` and `slices` (events come location by
    /// location: no hash lookup per event); `None` before the first.
    cur: Option<u64>,
    cur_stack: Vec<Open>,
    cur_slices: Vec<Closed>,
    /// The sends, receives and metric samples of the parts absorbed after
    /// this one, in order: kept apart, not copied onto this part's (the
    /// copy was on one thread, and with many threads it is most of them).
    later: Vec<Later>,
}

/// A metric sample: (location, time, member, value).
type Metric = (u64, u64, u32, f64);

/// A program marker: (location, time, kind: 0 program begin / 1 program
/// end, value).
type Marker = (u64, u64, u8, i64);

/// A message's key: (sender, receiver, communicator, tag), the locations
/// as [`KeyLocs`] numbers them.
type Key = (LocId, LocId, u32, u32);

/// The sends, receives and metric samples of a part of the locations.
#[derive(Default)]
struct Later {
    sends: Vec<P2p>,
    recvs: Vec<P2p>,
    metrics: Vec<Metric>,
}

impl Events {
    /// The sends (`recv` false) or receives of every part, in order.
    fn p2p(&self, recv: bool) -> Vec<&[P2p]> {
        let pick = |s, r| if recv { r } else { s };
        std::iter::once(pick(&self.sends[..], &self.recvs[..]))
            .chain(self.later.iter().map(|l| pick(&l.sends[..], &l.recvs[..])))
            .collect()
    }

    /// The metric samples of every part, part after part.
    fn metric_parts(&self) -> impl Iterator<Item = &Vec<Metric>> {
        std::iter::once(&self.metrics).chain(self.later.iter().map(|l| &l.metrics))
    }
}

/// The members of the metric sampled last, for each next sample: samples
/// of one metric follow each other, so the two lookups (an instance's
/// class, the class's members) are made once per run of them.
struct MetricMembers<'d> {
    defs: &'d Defs,
    last: Option<(u32, &'d [u32])>,
}

impl<'d> MetricMembers<'d> {
    fn new(defs: &'d Defs) -> Self {
        MetricMembers { defs, last: None }
    }

    /// The members of `metric` (a class, or an instance of one; none when
    /// undefined).
    fn of(&mut self, metric: u32) -> &'d [u32] {
        match self.last {
            Some((m, members)) if m == metric => members,
            _ => {
                let d = self.defs;
                let class = d.metric_instances.get(&metric).copied().unwrap_or(metric);
                let members = d.metric_classes.get(&class).map_or(&[][..], |m| &m[..]);
                self.last = Some((metric, members));
                members
            }
        }
    }
}

/// A metric sample's value of OTF2 type `ty` from its 64 bits (a signed or
/// unsigned integer, or a double).
fn metric_value(ty: u8, bits: u64) -> f64 {
    match ty {
        format::TYPE_INT64 => bits as i64 as f64,
        format::TYPE_DOUBLE => f64::from_bits(bits),
        _ => bits as f64,
    }
}

// ---- event callbacks ------------------------------------------------------

/// What the event callbacks of one reader fill: the events kept for the
/// model ([`Events`]) or reduced as they arrive (`stream::StreamEvents`).
/// Each returns whether to go on (false interrupts the read).
trait EventSink {
    /// Before the events of location `loc`, whose event file holds `bytes`.
    fn start_location(&mut self, loc: u64, bytes: u64);
    fn enter(&mut self, loc: u64, time: u64, region: u32) -> bool;
    fn leave(&mut self, loc: u64, time: u64, region: u32) -> bool;
    /// A send to rank `peer` of `comm`.
    fn send(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool;
    /// A receive from rank `peer` of `comm`.
    fn recv(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool;
    /// An event kept only for its time (request completions).
    fn timed(&mut self, loc: u64, time: u64) -> bool;
    fn coll_begin(&mut self, loc: u64, time: u64) -> bool;
    #[allow(clippy::too_many_arguments)]
    fn coll_end(
        &mut self,
        loc: u64,
        time: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> bool;
    /// One value of a metric sample (`member` of the metric class).
    fn metric(&mut self, loc: u64, time: u64, member: u32, value: f64) -> bool;
    /// Program begin (`kind` 0) or end (1, `value` its exit status).
    fn program(&mut self, loc: u64, time: u64, kind: u8, value: i64) -> bool;
    fn unknown(&mut self, loc: u64, time: u64) -> bool;
}

fn seen(ev: &mut Events, time: u64) -> u64 {
    ev.min_time = ev.min_time.min(time);
    ev.seq += 1;
    ev.seq
}

impl EventSink for Events {
    fn start_location(&mut self, loc: u64, bytes: u64) {
        // room for a region per 8 bytes of the location's events (an
        // event takes at least 3): reserved, not touched, so the regions
        // do not move as they grow
        self.switch_to(loc);
        self.cur_slices.reserve((bytes / 8) as usize);
    }

    fn enter(&mut self, loc: u64, time: u64, region: u32) -> bool {
        let seq = seen(self, time);
        if self.cur != Some(loc) {
            self.switch_to(loc);
        }
        self.cur_stack.push((time, region, seq));
        true
    }

    fn leave(&mut self, loc: u64, time: u64, region: u32) -> bool {
        seen(self, time);
        if self.cur != Some(loc) {
            self.switch_to(loc);
        }
        match self.cur_stack.pop() {
            Some((start, r, seq)) => {
                if r != region {
                    self.mismatched_leave += 1;
                }
                self.cur_slices.push((start, time, r, seq));
            }
            None => self.mismatched_leave += 1,
        }
        true
    }

    fn send(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        seen(self, time);
        self.sends.push((time, loc, peer, comm, tag, len));
        true
    }

    fn recv(&mut self, loc: u64, time: u64, peer: u32, comm: u32, tag: u32, len: u64) -> bool {
        seen(self, time);
        self.recvs.push((time, loc, peer, comm, tag, len));
        true
    }

    fn timed(&mut self, _loc: u64, time: u64) -> bool {
        seen(self, time);
        true
    }

    fn coll_begin(&mut self, loc: u64, time: u64) -> bool {
        seen(self, time);
        self.coll_begin.entry(loc).or_default().push_back(time);
        true
    }

    fn coll_end(
        &mut self,
        loc: u64,
        time: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> bool {
        seen(self, time);
        let begin = match self.coll_begin.get_mut(&loc).and_then(|q| q.pop_back()) {
            Some(b) => b,
            None => {
                self.unmatched_collective += 1;
                time
            }
        };
        self.collectives
            .push((loc, begin, time, op, comm, root, sent, received));
        true
    }

    fn metric(&mut self, loc: u64, time: u64, member: u32, value: f64) -> bool {
        seen(self, time);
        self.metrics.push((loc, time, member, value));
        true
    }

    fn program(&mut self, loc: u64, time: u64, kind: u8, value: i64) -> bool {
        seen(self, time);
        self.markers.push((loc, time, kind, value));
        true
    }

    fn unknown(&mut self, _loc: u64, _time: u64) -> bool {
        self.unknown += 1;
        true
    }
}

/// Why reading the events of some locations failed.
enum GroupError {
    /// Before any location's events: what failed, the library's error.
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    Setup(String, String),
    /// Location `.0` failed after `.1` of its events: the library's error.
    #[cfg_attr(not(feature = "otf2"), allow(dead_code))]
    Location(u64, u64, String),
    /// Location `.0` failed after `.1` of its events, decoded here: the
    /// file and where in it.
    Native(u64, u64, PathBuf, native::Bad),
}

/// A thread's run of locations holds at least this many bytes of events
/// ([`read_groups`]).
const MIN_GROUP_BYTES: u64 = 8 << 20;

/// The runs of `locations` that the pool's threads read, one each: as many
/// as the threads, but each with at least [`MIN_GROUP_BYTES`] of events
/// (`size` of each location), at least one. Each run holds its own
/// decoding state and growing columns: a 60 MB archive of 64 locations
/// read on 16 threads (2-core machine) peaked at 1.30-1.31× its model in
/// 16 runs, 1.24-1.25× in 8 and 1.20× in 2; on 16 cores that archive read
/// at 611 MB/s on 8 and 648-678 on 16 (H200, 2026-12-04).
/// `TAPESTRY_OTF2_GROUP_BYTES` (or [`set_min_group_bytes`]) sets the
/// least bytes of a run (for measuring, and for tests of several runs on
/// small archives).
fn read_groups(locations: &[u64], size: impl Fn(u64) -> u64) -> Vec<Vec<u64>> {
    let total: u64 = locations.iter().map(|&l| size(l)).sum();
    let by_size = usize::try_from(total / min_group_bytes()).unwrap_or(usize::MAX);
    balance(
        locations,
        &size,
        rayon::current_num_threads().min(by_size).max(1),
    )
}

/// The least event bytes of a thread's run ([`read_groups`]).
fn min_group_bytes() -> u64 {
    match MIN_GROUP_SET.load(std::sync::atomic::Ordering::Relaxed) {
        0 => std::env::var("TAPESTRY_OTF2_GROUP_BYTES")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(MIN_GROUP_BYTES)
            .max(1),
        b => b,
    }
}

static MIN_GROUP_SET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Sets the least event bytes of a thread's run of locations in this
/// process, as `TAPESTRY_OTF2_GROUP_BYTES` does (for tests of several runs
/// on small archives); 0 restores the default.
#[doc(hidden)]
pub fn set_min_group_bytes(bytes: u64) {
    MIN_GROUP_SET.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Splits `locations` into at most `parts` runs of about equal event
/// bytes (`size` of each; runs keep the locations' order).
fn balance(locations: &[u64], size: impl Fn(u64) -> u64, parts: usize) -> Vec<Vec<u64>> {
    let sizes: Vec<u64> = locations.iter().map(|&l| size(l).max(1)).collect();
    let total: u64 = sizes.iter().sum();
    let parts = parts.clamp(1, locations.len().max(1));
    let mut out: Vec<Vec<u64>> = vec![Vec::new()];
    let mut acc = 0u64;
    for (&l, &b) in locations.iter().zip(&sizes) {
        // a new run once this one holds its share of the bytes
        let share = total.div_ceil(parts as u64);
        if acc >= share * out.len() as u64 && out.len() < parts && !out[out.len() - 1].is_empty() {
            out.push(Vec::new());
        }
        if let Some(last) = out.last_mut() {
            last.push(l);
        }
        acc += b;
    }
    out.retain(|g| !g.is_empty());
    out
}

impl Events {
    /// Makes `loc` the location whose regions are at hand.
    fn switch_to(&mut self, loc: u64) {
        self.flush();
        self.cur_stack = self.stacks.remove(&loc).unwrap_or_default();
        self.cur_slices = self.slices.remove(&loc).unwrap_or_default();
        self.cur = Some(loc);
    }

    /// Puts the regions at hand back in `stacks` and `slices`.
    fn flush(&mut self) {
        if let Some(l) = self.cur.take() {
            let st = std::mem::take(&mut self.cur_stack);
            let sl = std::mem::take(&mut self.cur_slices);
            if !st.is_empty() {
                self.stacks.insert(l, st);
            }
            if !sl.is_empty() {
                self.slices.insert(l, sl);
            }
        }
    }

    /// Adds the events of other locations (read by another thread).
    fn absorb(&mut self, mut o: Events) {
        self.flush();
        o.flush();
        self.stacks.extend(o.stacks);
        self.slices.extend(o.slices);
        self.later.push(Later {
            sends: o.sends,
            recvs: o.recvs,
            metrics: o.metrics,
        });
        self.later.extend(o.later);
        self.coll_begin.extend(o.coll_begin);
        self.collectives.extend(o.collectives);
        self.markers.extend(o.markers);
        self.mismatched_leave += o.mismatched_leave;
        self.unmatched_collective += o.unmatched_collective;
        self.unknown += o.unknown;
        self.min_time = self.min_time.min(o.min_time);
        self.seq += o.seq;
    }
}

/// Refuses an anchor whose property count the library would trust: OTF2
/// 3.0 allocates `2 × count` string slots in 32-bit arithmetic, so a
/// damaged count of 2^31 or more wraps to a small allocation that its
/// reading loop then overruns (heap corruption, found by the fuzz
/// harness). The anchor layout (format ≥ 2): a 2-byte chunk header,
/// "OTF2\0", the anchor format (1 byte), 38 bytes of versions, chunk sizes,
/// substrate, compression and counts, three NUL-terminated strings
/// (machine, creator, description), then the 32-bit property count and
/// `count` name/value string pairs. A layout this check does not
/// recognise is left to the library.
fn check_anchor_properties(a: &[u8]) -> std::result::Result<(), String> {
    if a.get(2..7) != Some(b"OTF2\0") || a.get(7).is_none_or(|&f| f < 2) {
        return Ok(());
    }
    let mut at = 8 + 38;
    for _ in 0..3 {
        match a.get(at..).and_then(|r| memchr::memchr(0, r)) {
            Some(k) => at += k + 1,
            None => return Ok(()),
        }
    }
    let Some(raw) = a.get(at..at + 4) else {
        return Ok(());
    };
    let raw = [raw[0], raw[1], raw[2], raw[3]];
    // the buffer's byte order is the writer's: take the smaller reading
    let count = u32::from_le_bytes(raw).min(u32::from_be_bytes(raw));
    let strings = memchr::memchr_iter(0, &a[at + 4..]).count() as u64;
    if count >= 1 << 31 || 2 * count as u64 > strings {
        return Err(format!(
            "damaged OTF2 anchor: it declares {count} properties at byte {at}, but holds at most \
             {} (refused before the OTF2 library reads it)",
            strings / 2
        ));
    }
    Ok(())
}

/// Checks that the archive's files stay inside the anchor's directory:
/// the anchor's real path and its bytes.
fn check_archive(anchor: &Path) -> Result<(PathBuf, Vec<u8>)> {
    let real = anchor.canonicalize().map_err(|e| Error::io(anchor, e))?;
    if !real.is_file() {
        return Err(Error::parse(
            anchor,
            Position::none(),
            "expected an OTF2 anchor file (.otf2), found a directory",
        ));
    }
    let bytes = crate::readers::input::read_all(&real, 16 << 20)?;
    check_anchor_properties(&bytes).map_err(|m| Error::parse(anchor, Position::none(), m))?;
    let dir = real.parent().unwrap_or(Path::new("/")).to_path_buf();
    let stem = real
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let def = dir.join(format!("{stem}.def"));
    if !def.is_file() {
        return Err(Error::parse(
            anchor,
            Position::none(),
            format!(
                "expected the global definitions {} beside the anchor, found none",
                def.display()
            ),
        ));
    }
    // the definitions, the location directory and every file in it (the
    // library opens N.evt and N.def by name: links out are refused first)
    let mut files = vec![def, dir.join(&stem)];
    if let Ok(rd) = std::fs::read_dir(dir.join(&stem)) {
        files.extend(rd.flatten().take(1 << 20).map(|e| e.path()));
    }
    for p in files {
        if let Ok(r) = p.canonicalize()
            && !r.starts_with(&dir)
        {
            return Err(Error::parse(
                anchor,
                Position::none(),
                format!(
                    "{} resolves to {}, outside the archive's directory {}; refusing to read it",
                    p.display(),
                    r.display(),
                    dir.display()
                ),
            ));
        }
    }
    Ok((real, bytes))
}

/// The OTF2 paradigm's name, lower case (`mpi`, `openmp`, `cuda`, ...).
fn paradigm_name(p: u8) -> &'static str {
    const NAMES: [&str; 25] = [
        "unknown",
        "user",
        "compiler",
        "openmp",
        "mpi",
        "cuda",
        "measurement_system",
        "pthread",
        "hmpp",
        "ompss",
        "hardware",
        "gaspi",
        "upc",
        "shmem",
        "winthread",
        "qtthread",
        "acethread",
        "tbbthread",
        "openacc",
        "opencl",
        "mtapi",
        "sampling",
        "none",
        "hip",
        "kokkos",
    ];
    NAMES.get(p as usize).copied().unwrap_or("unknown")
}

/// The OTF2 region role's name, lower case (`function`, `barrier`,
/// `point2point`, `coll_all2all`, ...).
fn role_name(r: u8) -> &'static str {
    const NAMES: [&str; 38] = [
        "unknown",
        "function",
        "wrapper",
        "loop",
        "code",
        "parallel",
        "sections",
        "section",
        "workshare",
        "single",
        "single_sblock",
        "master",
        "critical",
        "critical_sblock",
        "atomic",
        "barrier",
        "implicit_barrier",
        "flush",
        "ordered",
        "ordered_sblock",
        "task",
        "task_create",
        "task_wait",
        "coll_one2all",
        "coll_all2one",
        "coll_all2all",
        "coll_other",
        "file_io",
        "point2point",
        "rma",
        "data_transfer",
        "artificial",
        "thread_create",
        "thread_wait",
        "task_untied",
        "allocate",
        "deallocate",
        "reallocate",
    ];
    NAMES.get(r as usize).copied().unwrap_or("unknown")
}

fn overhead(role: u8, paradigm: u8) -> bool {
    use format::*;
    matches!(
        paradigm as u32,
        PARADIGM_MPI | PARADIGM_SHMEM | PARADIGM_GASPI | PARADIGM_UPC | PARADIGM_MEASUREMENT_SYSTEM
    ) || matches!(
        role as u32,
        REGION_ROLE_BARRIER
            | REGION_ROLE_IMPLICIT_BARRIER
            | REGION_ROLE_COLL_ONE2ALL
            | REGION_ROLE_COLL_ALL2ONE
            | REGION_ROLE_COLL_ALL2ALL
            | REGION_ROLE_COLL_OTHER
            | REGION_ROLE_POINT2POINT
            | REGION_ROLE_RMA
            | REGION_ROLE_DATA_TRANSFER
            | REGION_ROLE_TASK_WAIT
            | REGION_ROLE_THREAD_WAIT
    )
}

/// An archive whose global definitions are read: the anchor (its real
/// path, for the library), the definitions, the locations to read and the
/// directory of their event files.
struct Archive {
    source: Source,
    defs: Defs,
    locations: Vec<u64>,
    evt_dir: PathBuf,
}

/// Who decodes an archive's files.
enum Source {
    /// The OTF2 library, given the anchor's real path.
    #[cfg(feature = "otf2")]
    Library(std::ffi::CString),
    /// This crate ([`native`]).
    Native(native::Files),
}

/// Reads the events of `locations` into `ev` with the archive's decoder.
fn read_locations<S: EventSink>(
    a: &Archive,
    locations: &[u64],
    size: impl Fn(u64) -> u64,
    ev: S,
) -> Result<S, GroupError> {
    match &a.source {
        #[cfg(feature = "otf2")]
        Source::Library(c_path) => library::read_group(c_path, &a.defs, locations, size, ev),
        Source::Native(files) => native::read_group(files, &a.defs, locations, size, ev),
    }
}

/// Whether the OTF2 library reads every archive (`TAPESTRY_OTF2_LIBRARY`
/// set), not only those the native decoder leaves to it.
fn library_only() -> bool {
    LIBRARY_ONLY.load(std::sync::atomic::Ordering::Relaxed)
        || std::env::var_os("TAPESTRY_OTF2_LIBRARY").is_some()
}

static LIBRARY_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes the OTF2 library read every archive in this process, as
/// `TAPESTRY_OTF2_LIBRARY` does (for tests of the library's path).
#[doc(hidden)]
pub fn force_library(on: bool) {
    LIBRARY_ONLY.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Checks the archive and reads its global definitions, natively where the
/// archive is one [`native`] decodes, else with the library; every
/// location's event file must be there (named when missing).
fn open_archive(path: &Path) -> Result<Archive> {
    let (real, bytes) = check_archive(path)?;
    let why = if library_only() {
        "TAPESTRY_OTF2_LIBRARY is set".to_string()
    } else {
        match open_native(path, &real, &bytes)? {
            Ok(a) => return Ok(a),
            Err(native::Unsupported(why)) => why,
        }
    };
    #[cfg(feature = "otf2")]
    {
        let _ = why;
        library::open(path, real)
    }
    #[cfg(not(feature = "otf2"))]
    {
        Err(needs_library(path, &why))
    }
}

/// The error for an archive only the OTF2 library reads, in a build
/// without it.
#[cfg(not(feature = "otf2"))]
fn needs_library(path: &Path, why: &str) -> Error {
    Error::parse(
        path,
        Position::none(),
        format!(
            "this OTF2 archive needs the OTF2 library ({why}), and this tapestry was built \
             without it: install libopen-trace-format2-dev and build with `cargo build \
             --release --features otf2`"
        ),
    )
}

/// [`open_archive`] with the native decoder: `Err` (why) when the archive
/// is one it leaves to the library.
fn open_native(
    path: &Path,
    real: &Path,
    anchor: &[u8],
) -> Result<std::result::Result<Archive, native::Unsupported>> {
    let evt_dir = real.with_extension("");
    let files = match native::anchor(anchor, evt_dir.clone()) {
        Ok(f) => f,
        Err(why) => return Ok(Err(why)),
    };
    let def = real.with_extension("def");
    let defs = match native::global_defs(&def, &files) {
        Ok(d) => d,
        Err(native::DefsError::Unsupported(why)) => return Ok(Err(why)),
        Err(native::DefsError::Bad(file, bad)) => {
            return Err(Error::parse(
                path,
                Position::none(),
                format!(
                    "damaged OTF2 global definitions: {} at byte {}: {}",
                    file.display(),
                    bad.byte,
                    bad.why
                ),
            ));
        }
    };
    let locations = archive_locations(path, &defs, &evt_dir)?;
    Ok(Ok(Archive {
        source: Source::Native(files),
        defs,
        locations,
        evt_dir,
    }))
}

/// Whether the native decoder reads the archive at `path`: `Err` says why
/// it leaves it to the OTF2 library.
#[doc(hidden)]
pub fn native_support(path: &Path) -> Result<std::result::Result<(), String>> {
    let (real, bytes) = check_archive(path)?;
    Ok(open_native(path, &real, &bytes)?
        .map(|_| ())
        .map_err(|w| w.0))
}

/// [`read`] with the OTF2 library only, whatever the archive: what the
/// native decoder is tested against.
#[doc(hidden)]
#[cfg(feature = "otf2")]
pub fn read_library(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let (real, _) = check_archive(path)?;
    let a = library::open(path, real)?;
    read_archive(a, path, opts)
}

/// The locations of the global definitions, each with its event file.
fn archive_locations(path: &Path, defs: &Defs, evt_dir: &Path) -> Result<Vec<u64>> {
    let locations: Vec<u64> = defs.locations.keys().copied().collect();
    if locations.is_empty() {
        return Err(Error::parse(
            path,
            Position::none(),
            "expected at least one location in the global definitions, found none",
        ));
    }
    // per-location event files (POSIX substrate): name a missing one exactly
    if evt_dir.is_dir() {
        for &l in &locations {
            let f = evt_dir.join(format!("{l}.evt"));
            if !f.is_file() {
                return Err(Error::parse(
                    path,
                    Position::none(),
                    format!(
                        "expected the event file {} of location {l}, found none",
                        f.display()
                    ),
                ));
            }
        }
    }
    Ok(locations)
}

/// Reads an OTF2 archive from its anchor file: as one whose locations'
/// regions come in time order (`in_order`), or else with the general
/// reader.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let phase = crate::phases::span("otf2: global definitions (one thread)");
    let a = open_archive(path)?;
    drop(phase);
    read_archive(a, path, opts)
}

/// [`read`] when the native decoder reads the archive: no call into the
/// OTF2 library, so nothing to isolate in a helper process. `None` when
/// the archive is one it leaves to the library (or `TAPESTRY_OTF2_LIBRARY`
/// is set).
pub fn read_native(path: &Path, opts: &ReadOptions) -> Result<Option<Trace>> {
    if library_only() {
        return Ok(None);
    }
    let phase = crate::phases::span("otf2: global definitions (one thread)");
    let (real, bytes) = check_archive(path)?;
    let Ok(a) = open_native(path, &real, &bytes)? else {
        return Ok(None);
    };
    drop(phase);
    read_archive(a, path, opts).map(Some)
}

/// The events of an opened archive: read in order, or else again with the
/// general reader.
fn read_archive(a: Archive, path: &Path, opts: &ReadOptions) -> Result<Trace> {
    if let Some(t) = in_order::read(&a, path, opts)? {
        return Ok(t);
    }
    read_events_general(a, path, opts)
}

/// [`read`] as an archive whose locations' regions come in time order
/// only: `None` when it is not one (what [`read`] then reads again with
/// the general reader).
#[doc(hidden)]
pub fn read_in_order(path: &Path, opts: &ReadOptions) -> Result<Option<Trace>> {
    let a = open_archive(path)?;
    in_order::read(&a, path, opts)
}

/// [`read`] with the general reader only (every region kept and sorted),
/// whatever the archive: what the in-order read is tested against.
#[doc(hidden)]
pub fn read_general(path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let a = open_archive(path)?;
    read_events_general(a, path, opts)
}

fn read_events_general(a: Archive, path: &Path, opts: &ReadOptions) -> Result<Trace> {
    let ev = read_events(&a, path)?;
    assemble(a.defs, ev, path, opts)
}

/// The bytes of location `l`'s event file (1 when unknown).
fn event_bytes(evt_dir: &Path, l: u64) -> u64 {
    std::fs::metadata(evt_dir.join(format!("{l}.evt")))
        .map(|m| m.len())
        .unwrap_or(1)
}

/// The error of a group of locations that failed, with the file of the
/// location that failed.
fn group_error(path: &Path, evt_dir: &Path, e: GroupError) -> Error {
    match e {
        GroupError::Setup(what, why) => Error::parse(
            path,
            Position::none(),
            format!("OTF2 library: {what} failed: {why}"),
        ),
        GroupError::Native(l, n, file, bad) => {
            let what = if file.extension().is_some_and(|e| e == "def") {
                format!(
                    "reading the local definitions failed: {} fails at byte {} (location {l})",
                    file.display(),
                    bad.byte
                )
            } else {
                format!(
                    "reading the events failed: {} fails at byte {} (location {l}, after {n} \
                     of its events)",
                    file.display(),
                    bad.byte
                )
            };
            Error::parse(path, Position::none(), format!("{what}: {}", bad.why))
        }
        GroupError::Location(l, n, why) => {
            let file = evt_dir.join(format!("{l}.evt"));
            let file = if file.is_file() {
                file.display().to_string()
            } else {
                format!("the events of location {l}")
            };
            Error::parse(
                path,
                Position::none(),
                format!(
                    "OTF2 library: reading the events failed: {file} fails after {n} of its events: {why}"
                ),
            )
        }
    }
}

/// Reads the events of every location: the locations split into about
/// equal runs of event bytes, one run per thread, each with a reader of
/// its own; a failing location is named with its file.
fn read_events(a: &Archive, path: &Path) -> Result<Events> {
    let (evt_dir, locations) = (&a.evt_dir, &a.locations[..]);
    let size = |l: u64| event_bytes(evt_dir, l);
    let groups = read_groups(locations, size);
    let phase = crate::phases::span("otf2: events read (all threads)");
    let parts: Vec<Result<Events, GroupError>> = groups
        .par_iter()
        .map(|g| {
            let ev = Events {
                min_time: u64::MAX,
                ..Default::default()
            };
            read_locations(a, g, size, ev)
        })
        .collect();
    drop(phase);
    let _phase = crate::phases::span("otf2: parts joined (one thread)");
    // the first part is the whole (moved, not copied: a one-thread read's
    // only part; copying it was 18 % of that read's page faults), the
    // others are appended to it
    let mut parts = parts
        .into_iter()
        .map(|p| p.map_err(|e| group_error(path, evt_dir, e)));
    let mut ev = match parts.next() {
        Some(first) => first?,
        None => Events {
            min_time: u64::MAX,
            ..Default::default()
        },
    };
    for p in parts {
        ev.absorb(p?);
    }
    Ok(ev)
}

/// Ticks of the archive's timer to nanoseconds after `origin` (ticks).
#[derive(Debug, Clone, Copy)]
struct Clock {
    res: u64,
    origin: u64,
}

impl Clock {
    /// `floor((t - origin) · 10^9 / res)`, at most `u64::MAX` (ticks before
    /// the origin count as 0).
    #[inline]
    fn ns(&self, t: u64) -> Time {
        const NS: u64 = 1_000_000_000;
        let d = t.saturating_sub(self.origin);
        let res = self.res;
        if res == NS {
            return d;
        }
        if res <= u64::MAX / NS {
            // d = q·res + r, so d·10^9/res = q·10^9 + r·10^9/res exactly,
            // and r·10^9 < res·10^9 fits 64 bits: two 64-bit divisions in
            // place of a 128-bit one (`__udivti3`, 4 % of a one-core read
            // of the bench archive)
            let (q, r) = (d / res, d % res);
            return q
                .checked_mul(NS)
                .and_then(|a| a.checked_add(r * NS / res))
                .unwrap_or(u64::MAX);
        }
        ((d as u128 * NS as u128) / res as u128).min(u64::MAX as u128) as Time
    }
}

/// The trace without its records: the hierarchy of locations, one state
/// per region name, the communicators, the origin and the declared end;
/// with the model's location of each OTF2 location and the state of each
/// region.
struct Skeleton {
    b: TraceBuilder,
    loc_of: HashMap<u64, LocId>,
    state_of: HashMap<u32, StateId>,
    clock: Clock,
}

/// The clock's (resolution, global offset, trace length) in ticks.
fn clock_of(defs: &Defs, path: &Path) -> Result<(u64, u64, u64)> {
    let (res, offset, length) = defs.clock.unwrap_or((1_000_000_000, 0, 0));
    if res == 0 {
        return Err(Error::parse(
            path,
            Position::none(),
            "expected a timer resolution above 0 in the clock properties, found 0",
        ));
    }
    Ok((res, offset, length))
}

/// Builds the [`Skeleton`] of the archive with times counted from `origin`
/// (ticks).
fn skeleton(defs: &Defs, path: &Path, opts: &ReadOptions, origin: u64) -> Result<Skeleton> {
    let name = |id: u32| defs.strings.get(&id).cloned().unwrap_or_default();
    let (res, offset, length) = clock_of(defs, path)?;
    let unit = TimeUnit {
        name: format!("1/{res} s"),
        ns_per_unit: (1_000_000_000 / res).max(1),
    };
    let mut b = TraceBuilder::new(Format::Otf2, path, unit, opts.strict);
    let clock = Clock { res, origin };
    b.set_origin(((origin as u128 * 1_000_000_000 / res as u128).min(i64::MAX as u128)) as i64);
    b.set_declared_end(clock.ns(offset.saturating_add(length)));

    // hierarchy: system tree nodes, location groups, locations
    let mut node_group: HashMap<u32, u32> = HashMap::default();
    // parents first: iterate until every node whose parent is known is placed
    let mut pending: Vec<u32> = defs.system_nodes.keys().copied().collect();
    let mut guard = 0;
    while !pending.is_empty() && guard < 64 {
        guard += 1;
        pending.retain(|id| {
            let (n, class, parent) = defs.system_nodes[id];
            let parent_group = if parent == UNDEF32 || !defs.system_nodes.contains_key(&parent) {
                None
            } else if let Some(g) = node_group.get(&parent) {
                Some(*g)
            } else {
                return true;
            };
            let kind = if name(class).eq_ignore_ascii_case("machine") {
                GroupKind::Machine
            } else {
                GroupKind::Node
            };
            let g = b.locations.add_group(name(n), kind, parent_group);
            node_group.insert(*id, g);
            false
        });
    }
    let mut lg_group: HashMap<u32, u32> = HashMap::default();
    for (id, &(n, parent)) in &defs.location_groups {
        let g = b.locations.add_group(
            name(n),
            GroupKind::Process,
            node_group.get(&parent).copied(),
        );
        lg_group.insert(*id, g);
    }
    let mut loc_of: HashMap<u64, LocId> = HashMap::default();
    let mut ordered: Vec<(u32, u64)> = defs
        .locations
        .iter()
        .map(|(id, &(_, _, g))| (g, *id))
        .collect();
    ordered.sort_unstable();
    for (g, id) in ordered {
        let (n, ty, _) = defs.locations[&id];
        let kind = if ty as u32 == format::LOCATION_TYPE_CPU_THREAD {
            LocationKind::Thread
        } else {
            LocationKind::Stream
        };
        let l = b
            .locations
            .add(name(n), kind, lg_group.get(&g).copied(), id as i64);
        loc_of.insert(id, l);
    }

    // states: one per region, by name
    let mut state_of: HashMap<u32, StateId> = HashMap::default();
    let mut regions: Vec<_> = defs.regions.iter().collect();
    regions.sort_by_key(|(id, _)| **id);
    for (id, &(n, role, paradigm)) in regions {
        let class = if overhead(role, paradigm) {
            StateClass::Overhead
        } else {
            StateClass::Busy
        };
        let nm = name(n);
        let s = match b.states.by_name(&nm) {
            Some(s) => s,
            None => b.states.add(&nm, class, None, *id as i64),
        };
        b.states.tag(s, "paradigm", paradigm_name(paradigm));
        b.states.tag(s, "role", role_name(role));
        state_of.insert(*id, s);
    }
    b.communicators = {
        let mut v: Vec<_> = defs
            .comms
            .iter()
            .map(|(id, &(n, g))| crate::model::Communicator {
                id: *id as i64,
                name: name(n),
                members: defs
                    .groups
                    .get(&g)
                    .map(|g| g.2.iter().map(|&m| m as i64).collect())
                    .unwrap_or_default(),
            })
            .collect();
        v.sort_by_key(|c| c.id);
        v
    };
    Ok(Skeleton {
        b,
        loc_of,
        state_of,
        clock,
    })
}

/// The locations of the ranks of each communicator, as OTF2's location
/// ids (`W` = `u64`) or as message keys take them ([`KeyLocs`]).
struct Ranks<'d, W = u64> {
    defs: &'d Defs,
    /// per paradigm: the locations of its world (`COMM_LOCATIONS` group)
    world: HashMap<u8, &'d [W]>,
}

/// The last communicator [`Ranks::location_in`] resolved (messages mostly
/// use one): its id and its ranks (`None`: a `COMM_SELF` group).
type LastComm<'d, W = u64> = Option<(u32, Option<CommRanks<'d, W>>)>;

/// A communicator's ranks: its group's members (indices into its
/// paradigm's world) and that world's locations.
struct CommRanks<'d, W> {
    members: &'d [u64],
    world: &'d [W],
}

impl<W> Clone for CommRanks<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for CommRanks<'_, W> {}

/// The worlds (`COMM_LOCATIONS` groups) of the definitions, each of its
/// paradigm (the last of a paradigm when it has several).
fn worlds(defs: &Defs) -> impl Iterator<Item = (u8, &Vec<u64>)> {
    defs.groups
        .values()
        .filter(|g| g.0 as u32 == format::GROUP_TYPE_COMM_LOCATIONS)
        .map(|g| (g.1, &g.2))
}

impl<'d> Ranks<'d> {
    fn new(defs: &'d Defs) -> Self {
        let world = worlds(defs).map(|(p, w)| (p, &w[..])).collect();
        Ranks { defs, world }
    }
}

impl<'d> Ranks<'d, LocId> {
    /// The ranks with their locations as `keys` numbers them.
    fn of_keys(defs: &'d Defs, keys: &'d KeyLocs) -> Self {
        let world = keys.world.iter().map(|(&p, w)| (p, &w[..])).collect();
        Ranks { defs, world }
    }
}

impl<'d, W: Copy> Ranks<'d, W> {
    /// The ranks of `comm`: `Some(None)` for a `COMM_SELF` group, `None`
    /// when the definitions do not resolve it.
    fn resolve(&self, comm: u32) -> Option<Option<CommRanks<'d, W>>> {
        let (_, group) = self.defs.comms.get(&comm)?;
        let (ty, paradigm, members) = self.defs.groups.get(group)?;
        if *ty as u32 == format::GROUP_TYPE_COMM_SELF {
            return Some(None);
        }
        let world = *self.world.get(paradigm)?;
        Some(Some(CommRanks { members, world }))
    }

    /// The location of rank `rank` of `comm`, seen from location `me`.
    fn location(&self, comm: u32, rank: u32, me: W) -> Option<W> {
        self.location_in(&mut None, comm, rank, me)
    }

    /// [`Self::location`], the communicator resolved again only when it
    /// is not the `last` one.
    fn location_in(&self, last: &mut LastComm<'d, W>, comm: u32, rank: u32, me: W) -> Option<W> {
        let ranks = match *last {
            Some((c, r)) if c == comm => r,
            _ => {
                let r = self.resolve(comm)?;
                *last = Some((comm, r));
                r
            }
        };
        match ranks {
            None => Some(me),
            Some(r) => {
                let idx = *r.members.get(rank as usize)?;
                r.world.get(idx as usize).copied()
            }
        }
    }
}

/// The locations as message keys take them: each defined location as the
/// model's, and past the model's locations one number for each location
/// a world names that the definitions do not define (its messages pair
/// up, and are then left out as unmatched, as the model has no location
/// for them). Keys of 16 bytes, and a matched pair's locations without a
/// lookup.
struct KeyLocs {
    /// per paradigm: its world's locations, numbered
    world: HashMap<u8, Vec<LocId>>,
    /// The model's locations: key locations at or above are undefined.
    defined: LocId,
}

impl KeyLocs {
    fn new(defs: &Defs, loc_of: &HashMap<u64, LocId>) -> KeyLocs {
        let defined = loc_of.values().map(|&l| l + 1).max().unwrap_or(0);
        let mut undefined: HashMap<u64, LocId> = HashMap::default();
        let mut key = |l: u64| match loc_of.get(&l) {
            Some(&k) => k,
            None => {
                let n = undefined.len() as LocId;
                *undefined.entry(l).or_insert(defined.saturating_add(n))
            }
        };
        let world = worlds(defs)
            .map(|(p, w)| (p, w.iter().map(|&l| key(l)).collect()))
            .collect();
        KeyLocs { world, defined }
    }
}

/// What reading repaired or left out, reported as the in-memory reader
/// and a stream report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Repairs {
    mismatched_leave: u64,
    unclosed: u64,
    clipped: u64,
    unknown_region: u64,
    unmatched_message: u64,
    unmatched_collective: u64,
    unknown_events: u64,
}

impl Repairs {
    fn add(&mut self, o: &Repairs) {
        self.mismatched_leave += o.mismatched_leave;
        self.unclosed += o.unclosed;
        self.clipped += o.clipped;
        self.unknown_region += o.unknown_region;
        self.unmatched_message += o.unmatched_message;
        self.unmatched_collective += o.unmatched_collective;
        self.unknown_events += o.unknown_events;
    }

    fn report(&self, b: &mut TraceBuilder, path: &Path) -> Result<()> {
        if self.unknown_events > 0 {
            b.ignore(
                "OTF2 events of unknown or unsupported kinds",
                self.unknown_events,
            );
        }
        let src = path.to_path_buf();
        let none = Position::none();
        let Repairs {
            mismatched_leave: mismatched,
            unclosed,
            clipped,
            unknown_region,
            unmatched_message: unmatched,
            unmatched_collective: uc,
            ..
        } = *self;
        b.diagnostics
            .repair("unmatched-leave", &src, none, mismatched, || {
                format!("{mismatched} Leave event(s) without a matching Enter of the same region")
            })?;
        b.diagnostics
            .repair("unclosed-enter", &src, none, unclosed, || {
                format!(
                    "{unclosed} region(s) entered and never left; closed at the end of the trace"
                )
            })?;
        b.diagnostics
            .repair("improper-nesting", &src, none, clipped, || {
                format!("{clipped} region(s) end after their enclosing region; clipped to it")
            })?;
        b.diagnostics
            .repair("unknown-region", &src, none, unknown_region, || {
                format!("{unknown_region} Enter/Leave event(s) name an undefined region; ignored")
            })?;
        b.diagnostics.repair("unmatched-message", &src, none, unmatched, || {
            format!("{unmatched} send(s) or receive(s) without a partner (or with an unknown rank); no message for them")
        })?;
        b.diagnostics
            .repair("unmatched-collective", &src, none, uc, || {
                format!("{uc} collective end(s) without a begin")
            })?;
        Ok(())
    }
}

/// The general reader's intervals of one location into `flat` (ns): its
/// closed regions and those still `open`, closed at `end` (ticks), nested
/// and flattened; `slices` is scratch. Returns the regions left open, the
/// regions of an undefined state, and the regions clipped.
fn nest_location(
    closed: Vec<Closed>,
    open: Vec<Open>,
    end: u64,
    state_of: &HashMap<u32, StateId>,
    clock: Clock,
    slices: &mut Vec<NestedSlice>,
    flat: &mut Vec<(Time, Time, StateId)>,
) -> (u64, u64, u64) {
    let unclosed = open.len() as u64;
    let mut unknown = 0u64;
    slices.clear();
    for (s, e, r, seq) in closed
        .into_iter()
        .chain(open.into_iter().map(|(s, r, seq)| (s, end, r, seq)))
    {
        match state_of.get(&r) {
            Some(&st) => slices.push(NestedSlice {
                start: clock.ns(s),
                end: clock.ns(e),
                state: st,
                seq,
            }),
            None => unknown += 1,
        }
    }
    flat.clear();
    let clipped = flatten_nested(slices, flat);
    (unclosed, unknown, clipped)
}

fn assemble(defs: Defs, mut ev: Events, path: &Path, opts: &ReadOptions) -> Result<Trace> {
    ev.flush();
    let phase = crate::phases::span("otf2: skeleton (one thread)");
    let (_, offset, length) = clock_of(&defs, path)?;
    let Skeleton {
        mut b,
        loc_of,
        state_of,
        clock,
    } = skeleton(&defs, path, opts, offset.min(ev.min_time))?;
    let mut rep = Repairs {
        mismatched_leave: ev.mismatched_leave,
        unmatched_collective: ev.unmatched_collective,
        unknown_events: ev.unknown,
        ..Default::default()
    };
    let end_time = ev
        .slices
        .values()
        .flatten()
        .map(|s| s.1)
        .max()
        .unwrap_or(0)
        .max(offset.saturating_add(length));
    drop(phase);
    let phase = crate::phases::span("otf2: regions nested and flattened (all threads)");
    // per location, in parallel: its regions (closed, then those still
    // open, closed at the end), nested and flattened
    let mut all_locs: Vec<u64> = ev.slices.keys().chain(ev.stacks.keys()).copied().collect();
    all_locs.sort_unstable();
    all_locs.dedup();
    let work: Vec<(LocId, Vec<Closed>, Vec<Open>)> = all_locs
        .into_iter()
        .filter_map(|l| {
            let loc = *loc_of.get(&l)?;
            let open = ev.stacks.remove(&l).unwrap_or_default();
            let closed = ev.slices.remove(&l).unwrap_or_default();
            Some((loc, closed, open))
        })
        .collect();
    let per_loc: Vec<(IntervalBlock, u64, u64, u64)> = work
        .into_par_iter()
        .map_init(
            // scratch of each thread, used again location after location
            || (Vec::<NestedSlice>::new(), Vec::new()),
            |(slices, flat), (loc, closed, open)| {
                let (unclosed, unknown, clipped) =
                    nest_location(closed, open, end_time, &state_of, clock, slices, flat);
                (
                    IntervalBlock::of_location(loc, flat),
                    unclosed,
                    unknown,
                    clipped,
                )
            },
        )
        .collect();
    for (raw, u, k, c) in per_loc {
        rep.unclosed += u;
        rep.unknown_region += k;
        rep.clipped += c;
        b.add_interval_block(raw);
    }
    drop(phase);

    let phase = crate::phases::span("otf2: sends and receives keyed (all threads)");
    // (sender, receiver, communicator, tag), time, bytes; on all threads,
    // each keeping the last communicator it resolved
    let keys = KeyLocs::new(&defs, &loc_of);
    let ranks = Ranks::of_keys(&defs, &keys);
    let side = |parts: Vec<&[P2p]>, send: bool| {
        let keyed = par_filter_map(
            &parts,
            || None,
            |last, &(t, loc, peer, comm, tag, len)| {
                let me = *loc_of.get(&loc)?;
                let other = ranks.location_in(last, comm, peer, me)?;
                let key = if send {
                    (me, other, comm, tag)
                } else {
                    (other, me, comm, tag)
                };
                Some((key, t, len))
            },
        );
        let unknown = (parts.iter().map(|p| p.len()).sum::<usize>() - keyed.len()) as u64;
        (keyed, unknown)
    };
    let (sends, unknown_sends) = side(ev.p2p(false), true);
    let (recvs, unknown_recvs) = side(ev.p2p(true), false);
    rep.unmatched_message += unknown_sends + unknown_recvs;
    drop(phase);
    // the samples as the model's, each with its member until `finish`
    // numbers the counters
    let samples = ev
        .metric_parts()
        .flatten()
        .filter_map(|&(l, t, member, value)| {
            Some(RawCounter {
                loc: *loc_of.get(&l)?,
                counter: member,
                time: clock.ns(t),
                value,
            })
        })
        .collect();
    let rest = Rest {
        p2p: vec![KeyedEvents::from_lists(sends, recvs)],
        defined: keys.defined,
        collectives: vec![&ev.collectives[..]],
        samples,
        markers: vec![&ev.markers[..]],
    };
    finish(&defs, b, &loc_of, clock, rest, rep, path, opts)
}

/// What the model keeps besides the state intervals, as a reader collected
/// it: the keyed sends and receives and the metric samples (each with its
/// member as its counter), in file order, and the collectives and markers
/// of each part of the locations, in order.
struct Rest<'e> {
    /// The sends and receives (times in ticks) of each part of the
    /// locations, in order.
    p2p: Vec<KeyedEvents<Key>>,
    /// Key locations at or above are not the model's ([`KeyLocs`]).
    defined: LocId,
    collectives: Vec<&'e [Coll]>,
    samples: Vec<RawCounter>,
    markers: Vec<&'e [Marker]>,
}

/// The records of every part, part after part: the one part's moved, the
/// parts of several threads copied into a list of their own mapping, each
/// part freed once copied ([`crate::memory::own_mapping`]: the parts'
/// metric samples are mappings of their own too, so that the copy's peak
/// is the records and one part, not the records twice, and the model's
/// columns later take the list's place as it shrinks).
fn concat<T: Copy>(mut parts: Vec<Vec<T>>) -> Vec<T> {
    if parts.len() == 1 {
        return parts.pop().unwrap_or_default();
    }
    let total: usize = parts.iter().map(Vec::len).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut all = crate::memory::own_mapping(total);
    for part in parts {
        all.extend_from_slice(&part);
    }
    all
}

/// Completes the trace whose intervals `b` holds: the messages matched,
/// the collectives, counters and markers, the repairs reported.
#[allow(clippy::too_many_arguments)]
fn finish(
    defs: &Defs,
    mut b: TraceBuilder,
    loc_of: &HashMap<u64, LocId>,
    clock: Clock,
    rest: Rest<'_>,
    mut rep: Repairs,
    path: &Path,
    opts: &ReadOptions,
) -> Result<Trace> {
    let ns = |t: u64| clock.ns(t);
    let name = |id: u32| defs.strings.get(&id).cloned().unwrap_or_default();
    let phase = crate::phases::span("otf2: messages matched (grouped by key on one thread)");
    // each pair made into the model's message where it is matched (a pair
    // whose locations are unknown counts as unmatched)
    let defined = rest.defined;
    let (messages, left) = match_parts(rest.p2p, |m| {
        let (src, dst, _, tag) = m.key;
        (src < defined && dst < defined).then(|| RawMessage {
            send: ns(m.send_time),
            recv: ns(m.recv_time),
            bytes: m.send_bytes.max(m.recv_bytes),
            tag: tag as i64,
            src,
            dst,
        })
    });
    rep.unmatched_message += left;
    b.add_messages(messages);
    drop(phase);

    let phase = crate::phases::span("otf2: collectives, metrics, markers (one thread)");
    for &(l, begin, end, op, comm, root, sent, received) in
        rest.collectives.iter().copied().flatten()
    {
        let Some(&loc) = loc_of.get(&l) else { continue };
        let opname = collective_name(op);
        let o = b.collective_op(opname);
        b.collective(
            loc,
            ns(begin),
            ns(end),
            comm as i64,
            o,
            sent,
            received,
            if root == UNDEF32 { -1 } else { root as i64 },
        );
    }
    // each member's counter named once, at its first sample (the
    // counters in the order of first appearance, as before): no name
    // built and looked up per sample
    let mut counter_of: HashMap<u32, u32> = HashMap::default();
    let mut all = rest.samples;
    let mut last: Option<(u32, u32)> = None;
    for c in &mut all {
        let member = c.counter;
        c.counter = match last {
            Some((m, id)) if m == member => id,
            _ => {
                let id = *counter_of.entry(member).or_insert_with(|| {
                    let (n, u) = metric_name(defs, member, &name);
                    b.counter_def(&n, &u)
                });
                last = Some((member, id));
                id
            }
        };
    }
    // the skeleton has no counter records: the samples become them
    debug_assert!(b.counters.is_empty());
    b.counters = all;
    let mut kind_of: HashMap<u8, u32> = HashMap::default();
    for &(l, t, kind, v) in rest.markers.iter().copied().flatten() {
        let Some(&loc) = loc_of.get(&l) else { continue };
        let k = *kind_of
            .entry(kind)
            .or_insert_with(|| b.event_types.intern(marker_name(kind)));
        b.event(loc, ns(t), k, v);
    }
    rep.report(&mut b, path)?;
    drop(phase);
    let mut t = b.finish(BuildOptions {
        warn_unsorted: false,
    })?;
    t.reclassify(&opts.classes)?;
    Ok(t)
}

/// A location's intervals `(start, end, state)` (ns).
#[cfg(test)]
type Flat = Vec<(Time, Time, StateId)>;

/// The general reader's intervals of one location of `m` (its regions
/// closed at `declared`, or at the last end when later), for the tests of
/// the readers that flatten as events come: (intervals, the end, regions
/// left open, regions of an undefined state, regions clipped).
#[cfg(test)]
fn general_intervals(
    m: &mut Events,
    loc: u64,
    declared: u64,
    state_of: &HashMap<u32, StateId>,
    clock: Clock,
) -> (Flat, u64, u64, u64, u64) {
    m.flush();
    let closed = m.slices.remove(&loc).unwrap_or_default();
    let open = m.stacks.remove(&loc).unwrap_or_default();
    let end = closed.iter().map(|c| c.1).max().unwrap_or(0).max(declared);
    let mut flat = Vec::new();
    let (unclosed, unknown, clipped) = nest_location(
        closed,
        open,
        end,
        state_of,
        clock,
        &mut Vec::new(),
        &mut flat,
    );
    (flat, end, unclosed, unknown, clipped)
}

/// A metric member's counter name and unit.
fn metric_name(defs: &Defs, member: u32, name: &impl Fn(u32) -> String) -> (String, String) {
    defs.metric_members
        .get(&member)
        .map_or((format!("metric {member}"), String::new()), |&(n, u)| {
            (name(n), name(u))
        })
}

/// The event type of a program begin (0) or end (1).
fn marker_name(kind: u8) -> &'static str {
    if kind == 0 {
        "program begin"
    } else {
        "program end"
    }
}

fn collective_name(op: u8) -> &'static str {
    const NAMES: [&str; 23] = [
        "barrier",
        "broadcast",
        "gather",
        "gatherv",
        "scatter",
        "scatterv",
        "allgather",
        "allgatherv",
        "alltoall",
        "alltoallv",
        "alltoallw",
        "allreduce",
        "reduce",
        "reduce_scatter",
        "scan",
        "exscan",
        "reduce_scatter_block",
        "create_handle",
        "destroy_handle",
        "allocate",
        "deallocate",
        "create_handle_and_allocate",
        "destroy_handle_and_deallocate",
    ];
    NAMES.get(op as usize).copied().unwrap_or("collective")
}

#[cfg(test)]
mod names {
    use super::*;

    #[test]
    fn paradigm_and_role_names_follow_the_library_constants() {
        assert_eq!(paradigm_name(format::PARADIGM_MPI as u8), "mpi");
        assert_eq!(paradigm_name(format::PARADIGM_KOKKOS as u8), "kokkos");
        assert_eq!(
            paradigm_name(format::PARADIGM_MEASUREMENT_SYSTEM as u8),
            "measurement_system"
        );
        assert_eq!(role_name(format::REGION_ROLE_BARRIER as u8), "barrier");
        assert_eq!(
            role_name(format::REGION_ROLE_POINT2POINT as u8),
            "point2point"
        );
        assert_eq!(
            role_name(format::REGION_ROLE_REALLOCATE as u8),
            "reallocate"
        );
        assert_eq!(role_name(200), "unknown");
    }
}

#[cfg(test)]
mod clock_tests {
    use super::Clock;

    /// The clock's 64-bit paths give the 128-bit quotient, saturated, for
    /// every kind of resolution: 10^9, divisors and multiples of it, a
    /// TSC's (2,095,197,216 ticks/s, a Score-P archive's), one past the
    /// 64-bit path's bound, and times near the ends of the range.
    #[test]
    fn nanoseconds_equal_the_wide_quotient() {
        let wide = |c: &Clock, t: u64| {
            ((t.saturating_sub(c.origin) as u128 * 1_000_000_000) / c.res as u128)
                .min(u64::MAX as u128) as u64
        };
        let mut rng = crate::test_rng::XorShift(0x243f6a8885a308d3);
        let bound = u64::MAX / 1_000_000_000;
        let resolutions = [
            1,
            3,
            1_000,
            1_000_000,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            2_095_197_216,
            1_000_000_000_000,
            bound,
            bound + 1,
            u64::MAX,
        ];
        for &res in &resolutions {
            for origin in [0, 1000, 7_397_466_976_977_800, u64::MAX - 5] {
                let c = Clock { res, origin };
                let mut times = vec![
                    0,
                    1,
                    origin,
                    origin.saturating_add(1),
                    u64::MAX,
                    u64::MAX - 1,
                ];
                times.extend((0..2000).map(|_| match rng.below(3) {
                    0 => rng.next(),
                    1 => origin.saturating_add(rng.below(1 << 40)),
                    _ => origin.saturating_add(rng.next() >> rng.below(64)),
                }));
                for t in times {
                    assert_eq!(c.ns(t), wide(&c, t), "res {res} origin {origin} t {t}");
                }
            }
        }
    }
}

#[cfg(test)]
mod balance_tests {
    use super::{balance, read_groups};

    #[test]
    fn runs_keep_order_cover_every_location_and_share_the_bytes() {
        let locs: Vec<u64> = (0..10).collect();
        for parts in 1..=12 {
            let g = balance(&locs, |_| 100, parts);
            assert_eq!(g.concat(), locs, "{parts}");
            assert_eq!(g.len(), parts.min(10), "{parts}");
            let (lo, hi) = (
                g.iter().map(Vec::len).min().unwrap(),
                g.iter().map(Vec::len).max().unwrap(),
            );
            assert!(hi - lo <= 2, "{parts}: {g:?}");
        }
        // one big location gets a run of its own
        let g = balance(&locs, |l| if l == 3 { 10_000 } else { 10 }, 3);
        assert_eq!(g.concat(), locs);
        assert!(g.iter().any(|r| r.contains(&3) && r.len() <= 4), "{g:?}");
        assert!(balance(&[], |_| 1, 4).is_empty());
        // a thread's run holds at least 8 MiB of events
        let locs: Vec<u64> = (0..64).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .unwrap();
        pool.install(|| {
            assert_eq!(read_groups(&locs, |_| 1 << 20).len(), 8);
            assert_eq!(read_groups(&locs, |_| 100_000).len(), 1);
            assert_eq!(read_groups(&locs, |_| 4 << 20).len(), 16);
            assert_eq!(read_groups(&locs, |_| 0).len(), 1);
        });
        assert_eq!(balance(&[7], |_| 0, 4), vec![vec![7]]);
    }
}

#[cfg(test)]
mod region_tests {
    use super::*;

    /// Enters and leaves of several locations, interleaved at random, give
    /// each location the regions a per-event lookup by location gives.
    #[test]
    fn interleaved_locations_keep_their_own_regions() {
        let mut ev = Events::default();
        let mut want_open: HashMap<u64, Vec<(u64, u32)>> = HashMap::default();
        let mut want_closed: HashMap<u64, Vec<(u64, u64, u32)>> = HashMap::default();
        let mut rng = crate::test_rng::XorShift(0x853c49e6748fea9bu64);
        for t in 0..5000u64 {
            let x = rng.next();
            let loc = [3u64, 7, 11][(x % 3) as usize];
            // runs of one location, sometimes broken
            let enter = (x >> 8) % 5 < 3;
            let region = ((x >> 16) % 4) as u32;
            if enter {
                ev.enter(loc, t, region);
                want_open.entry(loc).or_default().push((t, region));
            } else {
                ev.leave(loc, t, region);
                if let Some((s, r)) = want_open.entry(loc).or_default().pop() {
                    want_closed.entry(loc).or_default().push((s, t, r));
                }
            }
        }
        ev.flush();
        for l in [3u64, 7, 11] {
            let closed: Vec<(u64, u64, u32)> = ev
                .slices
                .get(&l)
                .map(|v| v.iter().map(|&(s, e, r, _)| (s, e, r)).collect())
                .unwrap_or_default();
            let open: Vec<(u64, u32)> = ev
                .stacks
                .get(&l)
                .map(|v| v.iter().map(|&(s, r, _)| (s, r)).collect())
                .unwrap_or_default();
            assert_eq!(closed, want_closed.remove(&l).unwrap_or_default(), "{l}");
            assert_eq!(open, want_open.remove(&l).unwrap_or_default(), "{l}");
        }
    }
}

#[cfg(test)]
mod concat_tests {
    use super::concat;

    /// The parts' records in order: one part moved (not copied), several
    /// copied into a list with room of its own, none or empty ones empty.
    #[test]
    fn parts_follow_one_another() {
        let one = vec![7u64, 8, 9];
        let at = one.as_ptr();
        let moved = concat(vec![one]);
        assert_eq!((moved.as_ptr(), &moved[..]), (at, &[7, 8, 9][..]));
        let parts = vec![vec![1u64, 2], vec![3], Vec::new(), vec![4, 5, 6]];
        let all = concat(parts);
        assert_eq!(all, [1, 2, 3, 4, 5, 6]);
        assert!(all.capacity() >= (32 << 20) / 8);
        assert!(concat::<u64>(vec![Vec::new(), Vec::new()]).is_empty());
        assert!(concat::<u64>(Vec::new()).is_empty());
    }
}
