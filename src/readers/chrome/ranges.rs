//! A plain Chrome trace read into memory by every thread at once.
//!
//! One pipeline reads a file's events in file order, and its intake (each
//! event into the accumulator, on one thread) and its splitter (the JSON's
//! structure, on one thread) bound it: on 16 cores they took 0.77 and 0.45
//! of a 1.01 s read. Here the file is cut into ranges of events, up to
//! one per thread and as many as the trace's threads leave room for
//! ([`count`]; [`byte_shares::cut`], the cut that `mpirun … reduce` makes
//! for its processes), each range is split, parsed and taken into an
//! accumulator of its own by its own pipeline (each event taken as it is
//! parsed), and the accumulators are merged in file order:
//!
//! * what is numbered in order of first appearance (processes, threads,
//!   states and their categories, event types, counters, flow ids, async
//!   ids) is taken range by range, each range's in its own order: the first
//!   appearance in the file is the first in some range, after every range
//!   before it, so the numbers are those one pipeline gives;
//! * a thread's slices, `B`/`E` events and metadata are appended range by
//!   range (the threads on all cores), its `B`/`E` events' places moved on
//!   by the slice events of the ranges before;
//! * flow events (their places), instants, counter samples and async
//!   slices (their sequence numbers) are appended in range order beside
//!   the threads.
//!
//! The model is the one pipeline's, byte for byte (tested for every cut of
//! small traces and on the real ones). A file that cannot be cut (gzip, a
//! backslash outside a string, a cut deep inside an event) is read by one
//! pipeline, as is one with more flow events than one read holds (which
//! then fails where that read fails).

use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::byte_shares::{self, Share};
use super::{Acc, AsyncEv, Intake, IntakeInto, MAX_FLOWS, ThreadAcc, builder, for_each_event};
use crate::error::{Error, Result};
use crate::model::{StateId, TraceBuilder};
use crate::phases;
use crate::readers::ReadOptions;
use crate::readers::gzip_index::{
    self,
    at::{ReadAt, Source},
};
use crate::readers::input;
use crate::readers::json_split::Truncation;

/// A range takes at least this many bytes of the file (fewer ranges than
/// threads for a smaller file; one pipeline below twice this).
pub(super) const MIN_RANGE_BYTES: u64 = 16 << 20;

/// A range reads batches of at most this many bytes: the ranges are what
/// runs side by side, and each holds a few batches at a time (the one it
/// parses, two read ahead, two emptied for reuse).
const RANGE_BATCH_BYTES: usize = 256 << 10;

/// The ranges' batches together take about this many bytes: a range's
/// batch is this over the ranges, from [`MIN_RANGE_BATCH_BYTES`] to
/// [`RANGE_BATCH_BYTES`]. 16 ranges of 256 KiB batches held 6 MiB more
/// than of 64 KiB ones (a 241 MB trace of 512 threads on 16 threads:
/// 62-63 MiB at the peak against 64-70, for a 45 MiB model), in the same
/// time.
const RANGES_BATCH_BYTES: usize = 1 << 20;
const MIN_RANGE_BATCH_BYTES: usize = 64 << 10;

/// The bytes of a batch of one of `ranges` ranges.
fn range_batch_bytes(ranges: usize) -> usize {
    (RANGES_BATCH_BYTES / ranges.max(1)).clamp(MIN_RANGE_BATCH_BYTES, RANGE_BATCH_BYTES)
}

/// How a range's events reach its intake: the ranges keep every thread
/// busy, each its own pipeline.
const RANGE_INTAKE: Intake = Intake::Inline;

/// At most this many ranges.
const MAX_RANGES: usize = 64;

/// Below this many threads a trace is read by one pipeline. On two cores
/// two ranges, each taking its events as it parses them, read in 0.95-0.97
/// of the pipeline's time (paired medians, 241 and 528 MB).
const MIN_THREADS: usize = 2;

/// The fewest threads a gzip trace is read by ranges on, through the index
/// the threads build first: below, one pipeline (its zlib decoding beside
/// the parse) is faster. Building the index and counting each range's
/// lines cost some three decodings of the file more than one pipeline's
/// one: on dev's 2 cores the 241 MB Chrome trace of 512 threads (22.9 MB
/// of `gzip -6`) took 1.49× the wall time and 1.50× the CPU by 2 ranges
/// (0.64 against 0.43 s, 7 pairs). Where the ranges pay is not measured
/// (no machine with more cores lent since); `TAPESTRY_CHROME_RANGES`
/// forces them on any number of threads.
const GZIP_MIN_THREADS: usize = 8;

/// Bytes a range holds for each thread of the trace it meets, beside the
/// thread's records (its accumulator, its place in the thread maps, the
/// slack of its slices' vector): a second range took 27 MiB more at 65,536
/// threads (720 bytes of slices each).
const THREAD_BYTES: u64 = 450;

/// The ranges after the first may hold a hundredth of the file's size for
/// their threads: a twentieth of the model, which takes about a fifth of
/// the file (20 bytes an interval, 40 a message, of events of some 100
/// bytes).
const THREADS_SHARE: u64 = 100;

/// The ranges to cut the trace `inp` into: one per thread from
/// [`MIN_THREADS`] threads on (threads of the pool that the process has
/// cores for), each at least [`MIN_RANGE_BYTES`], and no
/// more than the threads that the trace seems to have leave room for
/// ([`threads_estimate`]: every range holds every thread it meets, so
/// that a trace of 65,536 threads read by 4 ranges took 1.6× the model,
/// where one pipeline took 1.3×). A gzip file is read by ranges on
/// [`GZIP_MIN_THREADS`] threads or more; its length is its trailer's, and
/// its threads are sampled once its index is built ([`read`]).
/// `TAPESTRY_CHROME_RANGES` sets the number (for measuring; 1 is one
/// pipeline).
pub(super) fn count(path: &Path, inp: &input::Input) -> usize {
    if let Some(n) = std::env::var("TAPESTRY_CHROME_RANGES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n.clamp(1, MAX_RANGES);
    }
    // a gzip file's length as its trailer says (modulo 4 GiB)
    let len = match inp.compressed {
        true => gzip_index::length_estimate(path).unwrap_or(inp.file_len),
        false => inp.file_len,
    };
    let threads = pool_threads();
    if inp.compressed && threads < GZIP_MIN_THREADS {
        return 1;
    }
    // the file is sampled only where it would be cut
    let n = ranges_for(threads, len, None);
    if n < 2 || inp.compressed {
        // a gzip file is sampled once its index is built ([`read`])
        return n;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return n;
    };
    ranges_for(threads, len, threads_estimate(&file, len))
}

/// The threads ranges run on: no more than run at once (one beyond the
/// cores only holds its threads and batches while it waits: a 241 MB
/// trace of 512 threads on 16 threads of 2 cores, 11 ranges peaked at
/// 62–70 MiB in 0.65–0.75 s, 2 at 56 MiB in 0.59–0.69 s).
fn pool_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(usize::MAX, |n| n.get());
    rayon::current_num_threads().min(cores)
}

/// [`count`] for `threads` threads, a file of `len` bytes and a trace of
/// about `trace_threads` threads (`None`: not known).
fn ranges_for(threads: usize, len: u64, trace_threads: Option<u64>) -> usize {
    if threads < MIN_THREADS {
        return 1;
    }
    let by_size = usize::try_from(len / MIN_RANGE_BYTES).unwrap_or(usize::MAX);
    let n = threads.min(by_size).clamp(1, MAX_RANGES);
    let room = len / THREADS_SHARE / THREAD_BYTES;
    let by_threads = match trace_threads {
        Some(t) => 1 + usize::try_from(room / t.max(1)).unwrap_or(usize::MAX),
        None => n,
    };
    n.min(by_threads)
}

/// Windows of the file sampled by [`threads_estimate`], and the bytes of
/// each.
const SAMPLES: u64 = 16;
const SAMPLE_BYTES: usize = 64 << 10;

/// About how many threads the plain trace at `path` (`len` bytes) has:
/// from the events of [`SAMPLES`] windows spread over the file, the count
/// of threads `T` whose `T (1 - e^(-E/T))` is the `D` distinct `(pid, tid)`
/// pairs among the `E` events (what `E` events falling on `T` threads at
/// random would meet). Events of a thread lie together, so it counts low.
/// `None` when the windows hold no event with a `tid` (the file then is
/// read as it would be without).
fn threads_estimate(file: &dyn ReadAt, len: u64) -> Option<u64> {
    let mut buf = vec![0u8; SAMPLE_BYTES];
    let mut seen = rustc_hash::FxHashSet::default();
    let mut events = 0u64;
    for k in 0..SAMPLES {
        let at = (u128::from(len) * u128::from(k) / u128::from(SAMPLES)) as u64;
        let got = file.read_at(&mut buf, at).ok()?;
        // whole lines only: the window's first and last may be cut
        let mut w = &buf[..got];
        if at > 0 {
            w = memchr::memchr(b'\n', w).map_or(&[][..], |i| &w[i + 1..]);
        }
        if got == SAMPLE_BYTES {
            w = memchr::memrchr(b'\n', w).map_or(&[][..], |i| &w[..i]);
        }
        for line in w.split(|&c| c == b'\n') {
            if let Some(tid) = member(line, b"\"tid\":") {
                let pid = member(line, b"\"pid\":").unwrap_or(b"");
                seen.insert((pid.to_vec(), tid.to_vec()));
                events += 1;
            }
        }
    }
    if events == 0 {
        return None;
    }
    Some(occupancy_inverse(events, seen.len() as u64))
}

/// The text of the member written `key` (`"tid":`) in `line`, to the next
/// `,` or `}`.
fn member<'a>(line: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = memchr::memmem::find(line, key)? + key.len();
    let rest = &line[at..];
    let end = memchr::memchr2(b',', b'}', rest).unwrap_or(rest.len());
    Some(rest[..end].trim_ascii())
}

/// The `T` at least `d` with `T (1 - e^(-e/T)) = d` (`e` events, `d`
/// distinct); `e²` when every event is distinct.
fn occupancy_inverse(e: u64, d: u64) -> u64 {
    if d >= e {
        return e.saturating_mul(e);
    }
    let (e, d) = (e as f64, d as f64);
    let met = |t: f64| t * (1.0 - (-e / t).exp());
    // met grows with t, from d at t = d (at most) towards e
    let (mut lo, mut hi) = (d, e * e);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if met(mid) < d {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi.ceil() as u64
}

/// The ranges merged: the accumulator, the builder, and where the file
/// was cut short.
pub(super) type Merged = (Acc, TraceBuilder, Option<Truncation>);

/// One range's accumulator and dictionaries.
struct Part {
    acc: Acc,
    b: TraceBuilder,
    truncated: Option<Truncation>,
    /// Its end was guessed and is not between two events.
    misplaced: bool,
}

/// The events of the plain Chrome trace at `path` taken by `n` ranges read
/// side by side and merged: the accumulator, the builder and where the
/// file was cut short. `None` when `n` is below 2 or the file is not to be
/// cut; the caller reads it with one pipeline.
pub(super) fn read(
    path: &Path,
    opts: &ReadOptions,
    inp: &input::Input,
    n: usize,
) -> Result<Option<Merged>> {
    if n < 2 {
        return Ok(None);
    }
    // the file, or a gzip file's bytes through the index the threads
    // build (without one: one pipeline)
    let Some(src) = byte_shares::source(path, inp)? else {
        return Ok(None);
    };
    let len = src.size().map_err(|e| Error::io(path, e))?;
    // a gzip trace's threads, sampled through its index, as [`count`]
    // samples a plain one's
    let n = match inp.compressed && std::env::var_os("TAPESTRY_CHROME_RANGES").is_none() {
        true => n.min(ranges_for(
            pool_threads(),
            len,
            threads_estimate(src.as_ref(), len),
        )),
        false => n,
    };
    if n < 2 {
        return Ok(None);
    }
    // cuts guessed at line breaks first; walked to where a guess was wrong
    let cut = phases::span("chrome: cut into ranges (all threads)");
    let guessed = byte_shares::guess(path, &src, n)?;
    drop(cut);
    if let Some(shares) = guessed {
        match read_shares(path, opts, (&src, len), &shares)? {
            Outcome::Read(merged) => return Ok(Some(*merged)),
            Outcome::Whole => return Ok(None),
            Outcome::Misplaced => {}
        }
    }
    let cut = phases::span("chrome: cut into ranges, walked (all threads)");
    let Some(shares) = byte_shares::cut(path, &src, n)? else {
        return Ok(None);
    };
    drop(cut);
    Ok(match read_shares(path, opts, (&src, len), &shares)? {
        Outcome::Read(merged) => Some(*merged),
        // (a walked cut is never misplaced)
        Outcome::Misplaced | Outcome::Whole => None,
    })
}

/// What reading a file's shares came to.
enum Outcome {
    Read(Box<Merged>),
    /// A guessed cut was not between two events: to be cut again.
    Misplaced,
    /// More flow events than one read holds, or a gzip file whose bytes
    /// disagree with its CRC-32: to be read by one pipeline, which fails
    /// where it meets the first too many, or ends where the damage is
    /// found.
    Whole,
}

/// The events of `shares` (of `src`, `file_len` bytes) read side by side
/// and merged.
fn read_shares(
    path: &Path,
    opts: &ReadOptions,
    (src, file_len): (&Source, u64),
    shares: &[Share],
) -> Result<Outcome> {
    let each = phases::span("chrome: ranges read side by side (all threads)");
    let batch_bytes = range_batch_bytes(shares.len());
    let parts: Vec<Result<Part>> = shares
        .par_iter()
        .with_max_len(1)
        .map(|s| {
            let src = src.fork().map_err(|e| Error::io(path, e))?;
            read_share(path, opts, (src, file_len), s, batch_bytes)
        })
        .collect();
    drop(each);
    // the ranges' batches, freed in every thread's arena, leave before the
    // merge, and so does the parse's code
    crate::memory::return_freed_memory();
    crate::memory::unmap_code();
    // in file order: the first error is the one pipeline's, once every
    // range before it ended where the next one starts (a range whose start
    // was not guessed right is not looked at)
    let mut ok = Vec::with_capacity(parts.len());
    for p in parts {
        let p = p?;
        if p.misplaced {
            return Ok(Outcome::Misplaced);
        }
        ok.push(p);
    }
    // a gzip file's bytes, each span decoded whole by one of the ranges,
    // against its trailer's CRC-32: a damaged file is read by one
    // pipeline, which stops where zlib finds the damage and says so
    if !gzip_index::sums_agree(src.as_ref()) {
        return Ok(Outcome::Whole);
    }
    let m = phases::span("chrome: ranges merged");
    let merged = merge(ok);
    drop(m);
    // the later ranges' records, copied into the first's and freed in the
    // arenas of the threads that read them, leave before the model's
    // intervals come (from other arenas, which would not reuse them)
    crate::memory::return_freed_memory();
    Ok(merged.map_or(Outcome::Whole, |m| Outcome::Read(Box::new(m))))
}

/// One range's events (of a file of `file_len` bytes) into an accumulator
/// of its own, read in batches of `batch_bytes`.
fn read_share(
    path: &Path,
    opts: &ReadOptions,
    (src, file_len): (Source, u64),
    share: &Share,
    batch_bytes: usize,
) -> Result<Part> {
    let mut b = builder(path, opts);
    let mut acc = Acc::new(None);
    acc.reach = Some((
        share.start,
        share.end.unwrap_or(file_len).saturating_sub(share.start),
    ));
    let split = share
        .splitter_from(path, src)?
        .with_batch_bytes(batch_bytes);
    let split = for_each_event(
        path,
        split,
        RANGE_INTAKE,
        IntakeInto {
            acc: &mut acc,
            b: &mut b,
        },
    )?;
    Ok(Part {
        acc,
        b,
        truncated: split.truncated,
        misplaced: split.misplaced_end,
    })
}

/// What a range's own numbers are in the merged accumulator.
#[derive(Default)]
struct Numbers {
    procs: Vec<u32>,
    threads: Vec<u32>,
    states: Vec<StateId>,
    kinds: Vec<u32>,
    counters: Vec<u32>,
    flows: Vec<u32>,
    asyncs: Vec<u32>,
    /// The events of the ranges before.
    seq: u64,
}

/// What a merge frees of the later ranges' threads (their `B`/`E` events,
/// copied; the lists of their threads; not their slices, whose chunks are
/// taken over) is given back to the system each time this many bytes, and
/// at least a [`MERGE_TRIMS`]th of it, were freed. Freed in the arena of
/// the thread that read them, they would otherwise stay resident beside
/// their copies. (When the slices were copied too, with two ranges, half
/// the slices: a 241 MB trace of 512 threads read on two threads peaked
/// at 58.4–58.7 MiB in the merge in about half the runs, and at 56.0–56.4
/// MiB in every run so, for a 45 MiB model.) A trim walks every arena and
/// flushes every core's TLB (13 ms on 16 busy cores): where ranges are
/// many they are small, and a fixed size adds no trim there.
const MERGE_TRIM_BYTES: usize = 4 << 20;

/// What the later ranges' flow payloads and async slices took is given
/// back each time this many bytes of them were freed: their merged copies
/// grow in the arena of the merging thread, beside them. With the slices
/// no longer copied, the merge gave back nothing while they were, and a
/// 241 MB trace of 512 threads read by 16 ranges on two threads peaked in
/// the merge at 58.8 MiB, against 55.0 when each
/// range's slices were copied and given back.
const MERGE_FLOWS_TRIM_BYTES: usize = 1 << 20;

/// The most trims that [`MERGE_TRIM_BYTES`] adds to a merge.
const MERGE_TRIMS: usize = 32;

/// The ranges' accumulators merged into the first's, in file order.
/// `None` when they hold more flow events than one read can.
fn merge(parts: Vec<Part>) -> Option<Merged> {
    let flows: usize = parts.iter().map(|p| p.acc.flows.len()).sum();
    if flows > MAX_FLOWS {
        return None;
    }
    let mut parts = parts.into_iter();
    let Part {
        mut acc,
        mut b,
        mut truncated,
        ..
    } = parts.next()?;
    let mut rest: Vec<Part> = parts.collect();
    let ranges = rest.len();
    let mut flows_at_once = flow_numbers_at_once(&mut acc, &rest).map(Vec::into_iter);
    let numbers: Vec<Numbers> = rest
        .iter_mut()
        .enumerate()
        .map(|(r, p)| {
            if truncated.is_none() {
                truncated = p.truncated.take();
            }
            let flows = flows_at_once.as_mut().and_then(Iterator::next);
            let m = dictionaries(&mut acc, &mut b, p, r + 1 == ranges, flows);
            // its flows' dictionaries are done with
            p.acc.flow_tables = Vec::new();
            p.acc.flow_num_keys = Default::default();
            p.acc.flow_keys = Default::default();
            m
        })
        .collect();
    // and so are the merged ones (no event is taken after)
    acc.flow_tables = Vec::new();
    acc.flow_num_keys = Default::default();
    acc.flow_keys = Default::default();

    let thread_parts: Vec<_> = rest
        .iter_mut()
        .map(|p| std::mem::take(&mut p.acc.threads))
        .collect();
    let Acc {
        threads,
        flows: held,
        flow_runs,
        flow_payloads,
        instants,
        counters,
        asyncs,
        ..
    } = &mut acc;
    rayon::join(
        || append_threads(threads, thread_parts, &numbers),
        || {
            // each range's flows keep their vector, renumbered in place,
            // a range a thread; their payloads taken whole
            let mut before = held.len() as u32;
            let starts: Vec<u32> = rest
                .iter()
                .map(|p| {
                    let s = before;
                    before += p.acc.flows.len() as u32;
                    s
                })
                .collect();
            rest.par_iter_mut()
                .zip(&numbers)
                .zip(&starts)
                .for_each(|((p, m), &start)| {
                    for f in &mut p.acc.flows {
                        let (place, ph) = (start + (f.place_ph >> 2), f.place_ph & 3);
                        f.key = m.flows[f.key as usize];
                        f.thread = m.threads[f.thread as usize];
                        f.place_ph = (place << 2) | ph;
                    }
                });
            // what each range's payloads and async slices took, given back
            // a MiB at a time (from the readers' arenas: the merged copies
            // grow in another)
            let mut give_back = crate::memory::GiveBack::every(MERGE_FLOWS_TRIM_BYTES);
            for ((p, m), &start) in rest.iter_mut().zip(&numbers).zip(&starts) {
                let own = std::mem::take(&mut p.acc.flows);
                let payloads = std::mem::take(&mut p.acc.flow_payloads);
                let mut freed = payloads.bytes();
                flow_payloads.append_shifted(payloads, start, own.len() as u32);
                flow_runs.push(own);
                let thread = |t: u32| {
                    if t == u32::MAX {
                        t
                    } else {
                        m.threads[t as usize]
                    }
                };
                // (each range's blocks renumbered where they lie)
                instants.append(
                    std::mem::take(&mut p.acc.instants),
                    super::pack_instants,
                    |blk| {
                        blk.map_locations(thread);
                        blk.map_kinds(|k| m.kinds[k as usize]);
                    },
                );
                counters.append(
                    std::mem::take(&mut p.acc.counters),
                    super::pack_samples,
                    |blk| {
                        let rows = blk.rows_mut();
                        rows.map_locations(|t| m.threads[t as usize]);
                        rows.map_kinds(|c| m.counters[c as usize]);
                    },
                );
                freed += p.acc.asyncs.capacity() * std::mem::size_of::<AsyncEv>();
                asyncs.extend(
                    std::mem::take(&mut p.acc.asyncs)
                        .into_iter()
                        .map(|a| AsyncEv {
                            pid: m.procs[a.pid as usize],
                            key: m.asyncs[a.key as usize],
                            seq: a.seq + m.seq,
                            ..a
                        }),
                );
                give_back.freed(freed);
            }
        },
    );
    Some((acc, b, truncated))
}

/// Each thread's records from the later ranges (`parts`, numbered by
/// `numbers`) after its own in `threads`, range by range: their slices'
/// chunks taken over, their `B`/`E` events copied and freed as they go.
/// The merged threads are cut into blocks (four a pool thread), each
/// taking its threads' records on a thread of its own: the later ranges'
/// slices are renumbered as they are taken, and on one thread that was
/// half of the merge of a 528 MB trace by 16 ranges. What the records took
/// (and the ranges' lists of threads) is given back a share at a time, as
/// the blocks finish.
fn append_threads(threads: &mut [ThreadAcc], parts: Vec<Vec<ThreadAcc>>, numbers: &[Numbers]) {
    if threads.is_empty() {
        return;
    }
    let later: usize = parts.iter().flatten().map(ThreadAcc::be_bytes).sum();
    let mut give_back = crate::memory::GiveBack::every(MERGE_TRIM_BYTES.max(later / MERGE_TRIMS));
    let lists: usize = parts
        .iter()
        .map(|p| p.capacity() * std::mem::size_of::<ThreadAcc>())
        .sum();
    let blocks = (4 * rayon::current_num_threads()).clamp(1, threads.len());
    let per = threads.len().div_ceil(blocks);
    // each range's records by the block of the merged threads they go to
    // (their order kept), then each block's by range: the records and the
    // range's number
    type Pieces = (Vec<(u32, ThreadAcc)>, usize);
    let mut by_block: Vec<Vec<Pieces>> = (0..blocks)
        .map(|_| Vec::with_capacity(parts.len()))
        .collect();
    let sorted: Vec<Vec<Vec<(u32, ThreadAcc)>>> = parts
        .into_par_iter()
        .zip(numbers)
        .map(|(p, m)| {
            let mut out: Vec<Vec<(u32, ThreadAcc)>> = (0..blocks).map(|_| Vec::new()).collect();
            for (piece, &g) in p.into_iter().zip(&m.threads) {
                if let Some(o) = out.get_mut(g as usize / per) {
                    o.push((g, piece));
                }
            }
            out
        })
        .collect();
    // (the ranges' lists of threads are freed)
    give_back.freed(lists);
    let give_back = std::sync::Mutex::new(give_back);
    for (r, range) in sorted.into_iter().enumerate() {
        for (b, pieces) in range.into_iter().enumerate() {
            by_block[b].push((pieces, r));
        }
    }
    threads
        .par_chunks_mut(per)
        .zip(by_block)
        .enumerate()
        .for_each(|(b, (mine, ranges))| {
            let mut freed = 0;
            for (pieces, r) in ranges {
                freed += pieces.capacity() * std::mem::size_of::<(u32, ThreadAcc)>();
                for (g, piece) in pieces {
                    freed += piece.be_bytes();
                    if let Some(t) = mine.get_mut(g as usize - b * per) {
                        t.append(piece, &numbers[r].states);
                    }
                }
            }
            let due = give_back.lock().is_ok_and(|mut g| g.due(freed));
            if due {
                crate::memory::return_freed_memory();
            }
        });
}

/// Takes the dictionaries, metadata and totals of range `p` into `acc`
/// and `b` (after the ranges before it): what its numbers become; its
/// flows' merged numbers are `flows` where [`flow_numbers_at_once`] found
/// them.
fn dictionaries(
    acc: &mut Acc,
    b: &mut TraceBuilder,
    p: &mut Part,
    last: bool,
    flows: Option<Vec<u32>>,
) -> Numbers {
    let mut m = Numbers {
        seq: acc.seq,
        ..Default::default()
    };
    let part = &mut p.acc;
    // processes before threads: a thread's process is met no later than it
    m.procs = part
        .proc_keys()
        .iter()
        .map(|pid| acc.proc_of(pid))
        .collect();
    acc.proc_metas.take_later(&part.proc_metas, &m.procs);
    part.proc_metas = Default::default();
    m.threads = part
        .thread_keys()
        .iter()
        .map(|(pid, tid)| acc.thread_of(pid, tid))
        .collect();
    acc.thread_metas.take_later(&part.thread_metas, &m.threads);
    part.thread_metas = Default::default();
    m.states =
        p.b.states
            .iter()
            .map(|(_, st)| {
                let g = b.states.intern(&st.name, st.class);
                for t in &st.tags {
                    if let Some((key, value)) = t.split_once(':') {
                        b.states.tag(g, key, value);
                    }
                }
                g
            })
            .collect();
    m.kinds =
        p.b.event_types
            .iter()
            .map(|t| b.event_types.intern(&t.name))
            .collect();
    m.counters =
        p.b.counter_defs
            .iter()
            .map(|c| b.counter_def(&c.name, &c.unit))
            .collect();
    m.flows = match flows {
        Some(f) => f,
        None => flow_numbers(acc, part, last),
    };
    // an async id's key starts with its process's number in the range
    m.asyncs = by_number(&part.async_keys)
        .into_iter()
        .map(|k| {
            let (proc, rest) = k.split_once('\u{1}').unwrap_or(("", k));
            let proc = proc
                .parse::<usize>()
                .ok()
                .and_then(|p| m.procs.get(p))
                .map_or_else(|| proc.to_string(), |g| g.to_string());
            let rest = rest.strip_suffix('\u{1}').unwrap_or(rest);
            Acc::key(&mut acc.async_keys, &mut acc.key_buf, &[&proc, rest])
        })
        .collect();
    // totals
    acc.seq += part.seq;
    acc.min_ts = acc.min_ts.min(part.min_ts);
    acc.max_ts = acc.max_ts.max(part.max_ts);
    for (&ph, &n) in &part.ignored {
        *acc.ignored.entry(ph).or_default() += n;
    }
    acc.missing_dur.0 += part.missing_dur.0;
    if acc.missing_dur.1.is_none() {
        acc.missing_dur.1 = part.missing_dur.1;
    }
    m
}

/// The names of a dictionary (name → number from 0) in order of number.
fn by_number(map: &FxHashMap<String, u32>) -> Vec<&str> {
    let mut names = vec![""; map.len()];
    for (name, &i) in map {
        if let Some(slot) = names.get_mut(i as usize) {
            *slot = name.as_str();
        }
    }
    names
}

/// The merged numbers of range `part`'s flows (`last`: no range follows,
/// whose flows would need to find these): a flow met before keeps its
/// number, and the new ones are numbered on in the range's own order.
fn flow_numbers(acc: &mut Acc, part: &Acc, last: bool) -> Vec<u32> {
    let cats: Vec<u32> = by_number(&part.flow_cats)
        .into_iter()
        .map(|c| acc.flow_cat(c))
        .collect();
    let cat = |c: usize| cats.get(c).copied().unwrap_or(0);
    let numeric = numeric_flow_keys(part);
    let mut numbers = vec![u32::MAX; part.flow_count as usize];
    let mut set = |k: u32, to: Option<u32>| {
        if let (Some(slot), Some(to)) = (numbers.get_mut(k as usize), to) {
            *slot = to;
        }
    };
    for (c, n, k) in numeric.clone() {
        set(k, acc.flow_number_get(cat(c), n));
    }
    for (text, &k) in &part.flow_keys {
        set(k, acc.flow_keys.get(text.as_str()).copied());
    }
    // the new ones, in the range's order
    let first_new = acc.flow_count;
    for slot in &mut numbers {
        if *slot == u32::MAX {
            *slot = acc.flow_count;
            acc.flow_count += 1;
        }
    }
    if !last {
        let new = |k: u32| numbers.get(k as usize).copied().filter(|&g| g >= first_new);
        for (c, n, k) in numeric {
            if let Some(g) = new(k) {
                acc.flow_number_put(cat(c), n, g);
            }
        }
        for (text, &k) in &part.flow_keys {
            if let Some(g) = new(k) {
                acc.flow_keys.insert(text.clone(), g);
            }
        }
    }
    numbers
}

/// The flows of `part` whose ids are plain decimal numbers: (category,
/// id, key) each. (A key a range numbered is in exactly one of its three
/// tables, and below its count.)
fn numeric_flow_keys(part: &Acc) -> impl Iterator<Item = (usize, u64, u32)> + Clone + '_ {
    let tables = part.flow_tables.iter().enumerate().flat_map(|(c, t)| {
        t.keys
            .iter()
            .enumerate()
            .filter(|&(_, &k)| k != 0)
            .map(move |(i, &k)| (c, t.base + i as u64, k - 1))
    });
    tables.chain(
        part.flow_num_keys
            .iter()
            .map(|(&(c, n), &k)| (c as usize, n, k)),
    )
}

/// A key of a range [`flow_numbers_at_once`] has not numbered yet.
const UNNUMBERED: u32 = u32::MAX;
/// A key of a range met in a range before it.
const MET_BEFORE: u32 = u32::MAX - 1;

/// The merged numbers of the flows of every range after the first (`acc`,
/// whose numbers stay), the numbers [`flow_numbers`] gives them range
/// after range, found on all threads, a range a thread: `None` (and
/// nothing changed) unless every flow's id is a plain decimal number and
/// each category's ids lie close enough together for a table of them all,
/// a byte an id (the first range that met it).
///
/// A flow keeps the number of its first range, and the flows first met in
/// a range are numbered on after the ranges before, in the range's own
/// order. The ranges' tables are only read; `acc` takes the categories
/// and the count of flows, not the merged keys (which no event after the
/// merge looks up). Serial, the numbering of a 528 MB trace's 2 M flow
/// events by 16 ranges took 35–40 ms, a third of its merge.
fn flow_numbers_at_once(acc: &mut Acc, rest: &[Part]) -> Option<Vec<Vec<u32>>> {
    let ranges = rest.len() + 1;
    if rest.is_empty()
        || ranges >= usize::from(u8::MAX)
        || !acc.flow_keys.is_empty()
        || rest.iter().any(|p| !p.acc.flow_keys.is_empty())
    {
        return None;
    }
    let total: u64 = std::iter::once(acc.flow_count)
        .chain(rest.iter().map(|p| p.acc.flow_count))
        .map(u64::from)
        .sum();
    // each range's categories in the merged numbering: the first's own,
    // and the new ones numbered on in the ranges' order, as
    // [`Acc::flow_cat`] will number them (a range's categories are few)
    let first_cats = acc.flow_cats.len() as u32;
    let mut cats: Vec<Vec<u32>> = vec![(0..first_cats).collect()];
    let mut new_names: Vec<&str> = Vec::new();
    {
        let mut names: FxHashMap<&str, u32> = acc
            .flow_cats
            .iter()
            .map(|(c, &i)| (c.as_str(), i))
            .collect();
        for p in rest {
            cats.push(
                by_number(&p.acc.flow_cats)
                    .into_iter()
                    .map(|c| {
                        let next = first_cats + new_names.len() as u32;
                        *names.entry(c).or_insert_with(|| {
                            new_names.push(c);
                            next
                        })
                    })
                    .collect(),
            );
        }
    }
    let parts: Vec<&Acc> = std::iter::once(&*acc)
        .chain(rest.iter().map(|p| &p.acc))
        .collect();
    let ncats = first_cats as usize + new_names.len();
    let mut span = vec![(u64::MAX, 0u64); ncats];
    for (r, p) in parts.iter().enumerate() {
        let grow = |span: &mut Vec<(u64, u64)>, c: usize, lo: u64, hi: u64| {
            if let Some(&g) = cats[r].get(c) {
                let s = &mut span[g as usize];
                *s = (s.0.min(lo), s.1.max(hi));
            }
        };
        for (c, t) in p.flow_tables.iter().enumerate() {
            if !t.keys.is_empty() {
                grow(&mut span, c, t.base, t.base + t.keys.len() as u64);
            }
        }
        for &(c, n) in p.flow_num_keys.keys() {
            grow(&mut span, c as usize, n, n.saturating_add(1));
        }
    }
    // (a table of ids spread over no more than four times the keys takes
    // no more than the four bytes a key of a range's own tables)
    let room = 4 * total + super::FLOW_TABLE_SLACK * ranges as u64;
    if span.iter().any(|&(lo, hi)| lo < hi && hi - lo > room) {
        return None;
    }
    // the first range to meet each id (a byte an id), on all threads
    let first: Vec<Vec<std::sync::atomic::AtomicU8>> = span
        .iter()
        .map(|&(lo, hi)| {
            (0..hi.saturating_sub(lo))
                .map(|_| std::sync::atomic::AtomicU8::new(u8::MAX))
                .collect()
        })
        .collect();
    let slot = |r: usize, c: usize, n: u64| -> Option<&std::sync::atomic::AtomicU8> {
        let g = *cats[r].get(c)? as usize;
        first.get(g)?.get(usize::try_from(n - span[g].0).ok()?)
    };
    use std::sync::atomic::Ordering::Relaxed;
    parts.par_iter().enumerate().for_each(|(r, p)| {
        for (c, n, _) in numeric_flow_keys(p) {
            if let Some(f) = slot(r, c, n) {
                f.fetch_min(r as u8, Relaxed);
            }
        }
    });
    // each later range's keys met before marked, the rest counted
    let mut numbers: Vec<Vec<u32>> = parts[1..]
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            let r = i + 1;
            let mut own = vec![UNNUMBERED; p.flow_count as usize];
            for (c, n, k) in numeric_flow_keys(p) {
                if let (Some(f), Some(o)) = (slot(r, c, n), own.get_mut(k as usize))
                    && usize::from(f.load(Relaxed)) < r
                {
                    *o = MET_BEFORE;
                }
            }
            own
        })
        .collect();
    let new: Vec<u32> = numbers
        .par_iter()
        .map(|own| own.iter().filter(|&&k| k == UNNUMBERED).count() as u32)
        .collect();
    // the new ones numbered on, range after range, in each range's order
    let mut next = acc.flow_count;
    let starts: Vec<u32> = new
        .iter()
        .map(|&n| {
            let s = next;
            next += n;
            s
        })
        .collect();
    numbers
        .par_iter_mut()
        .zip(&starts)
        .for_each(|(own, &start)| {
            for (at, k) in (start..).zip(own.iter_mut().filter(|k| **k == UNNUMBERED)) {
                *k = at;
            }
        });
    // the ones met before take the number they have where first met
    let back: Vec<Vec<u32>> = cats
        .iter()
        .map(|cs| {
            let mut back = vec![u32::MAX; ncats];
            for (c, &g) in cs.iter().enumerate() {
                back[g as usize] = c as u32;
            }
            back
        })
        .collect();
    let numbers_ref = &numbers;
    // (a key met before and not found where it was met cannot be: the
    // serial numbering is then left to say what it becomes)
    let fixes: Option<Vec<Vec<(u32, u32)>>> = parts[1..]
        .par_iter()
        .enumerate()
        .map(|(i, p)| {
            let r = i + 1;
            let mut fixes = Vec::new();
            for (c, n, k) in numeric_flow_keys(p) {
                if numbers_ref[i].get(k as usize) != Some(&MET_BEFORE) {
                    continue;
                }
                let f = slot(r, c, n)?;
                let g = *cats[r].get(c)?;
                let was = usize::from(f.load(Relaxed));
                let there_cat = *back.get(was)?.get(g as usize).filter(|&&c| c != u32::MAX)?;
                let there = parts[was].flow_number_get(there_cat, n)?;
                let number = match was {
                    0 => there,
                    _ => *numbers_ref.get(was - 1)?.get(there as usize)?,
                };
                fixes.push((k, number));
            }
            Some(fixes)
        })
        .collect();
    let fixes = fixes?;
    drop(first);
    drop(parts);
    numbers.par_iter_mut().zip(fixes).for_each(|(own, fixes)| {
        for (k, number) in fixes {
            own[k as usize] = number;
        }
    });
    for c in new_names {
        acc.flow_cat(c);
    }
    acc.flow_count = next;
    Some(numbers)
}

impl ThreadAcc {
    /// Appends `later`, the same thread's records in a later range (its
    /// states numbered by `states`), after its own.
    fn append(&mut self, later: ThreadAcc, states: &[StateId]) {
        let state = |s: StateId| states.get(s as usize).copied().unwrap_or(s);
        // the places of its B/E events among its slice events move on by
        // this thread's slice events so far
        let before = (self.slices.len() + self.be_len()) as u64;
        if let Some(be) = later.be.filter(|be| !be.is_empty()) {
            let to = self.be_mut();
            for &(ts, place, begin, st) in be.iter() {
                let st = if begin { state(st) } else { st };
                to.push((ts, place + before, begin, st));
            }
        }
        self.slices.append(later.slices, state);
    }
}

#[cfg(test)]
mod tests {
    use super::super::read_in;
    use super::super::stream::tests::{deep_chrome, messy_and_shared_chrome};
    use super::*;
    use crate::model::Trace;
    use crate::test_rng::XorShift;

    /// The ranges leave room for the threads: one per thread for a trace
    /// of few threads (at least 16 MiB each), fewer as the trace's threads
    /// grow, one pipeline below two threads and for 65,536 threads in less
    /// than some 3 GB.
    #[test]
    fn ranges_leave_room_for_the_trace_threads() {
        let mb = 1_000_000u64;
        assert_eq!(ranges_for(1, 1000 * mb, Some(16)), 1);
        assert_eq!(ranges_for(2, 1000 * mb, Some(16)), 2);
        assert_eq!(ranges_for(16, 1000 * mb, Some(1024)), 16);
        assert_eq!(ranges_for(16, 1000 * mb, None), 16);
        assert_eq!(ranges_for(16, 100 * mb, Some(16)), 5); // 16 MiB each
        assert_eq!(ranges_for(16, 30 * mb, Some(16)), 1);
        assert_eq!(ranges_for(64, 100_000 * mb, Some(16)), MAX_RANGES);
        // 241 MB of 512 threads: 11 ranges; 708 MB of 65,536 (sampled as
        // 20,514): one pipeline
        assert_eq!(ranges_for(16, 241 * mb, Some(513)), 11);
        assert_eq!(ranges_for(16, 708 * mb, Some(20_514)), 1);
        assert_eq!(ranges_for(16, 708 * mb, Some(65_536)), 1);
        assert_eq!(ranges_for(16, 3_000 * mb, Some(65_536)), 2);
        assert_eq!(ranges_for(16, 30_000 * mb, Some(65_536)), 11);
        assert_eq!(ranges_for(16, u64::MAX, Some(u64::MAX)), 1);
        assert_eq!(ranges_for(16, u64::MAX, Some(0)), 16);
    }

    /// The ranges' batches take about a MiB together, each from 64 to 256
    /// KiB.
    #[test]
    fn batches_shrink_as_the_ranges_grow() {
        assert_eq!(range_batch_bytes(0), RANGE_BATCH_BYTES);
        assert_eq!(range_batch_bytes(2), 256 << 10);
        assert_eq!(range_batch_bytes(4), 256 << 10);
        assert_eq!(range_batch_bytes(8), 128 << 10);
        assert_eq!(range_batch_bytes(16), 64 << 10);
        assert_eq!(range_batch_bytes(MAX_RANGES), 64 << 10);
    }

    #[test]
    fn occupancy_is_inverted() {
        for t in [10u64, 500, 20_000] {
            for e in [100u64, 1000, 8000] {
                let tf = t as f64;
                let d = (tf * (1.0 - (-(e as f64) / tf).exp())).round() as u64;
                if d >= e {
                    continue;
                }
                let got = occupancy_inverse(e, d) as f64;
                // d is rounded: within what one distinct pair more or
                // less makes of it
                let lo = occupancy_inverse(e, d.saturating_sub(1).max(1)) as f64;
                let hi = occupancy_inverse(e, (d + 1).min(e - 1)) as f64;
                assert!(
                    lo <= tf + 1.0 && tf <= hi + 1.0,
                    "{t} {e}: {got} ({lo}..{hi})"
                );
            }
        }
        assert_eq!(occupancy_inverse(1000, 1000), 1_000_000);
        assert_eq!(occupancy_inverse(1, 1), 1);
        assert!(occupancy_inverse(1000, 1) <= 2);
    }

    /// The estimate from the file's windows: a few threads of many events
    /// each are counted near their number; many threads of a few events
    /// each count in the thousands (a low count: events of a thread lie
    /// together); a file without `tid` has none.
    #[test]
    fn the_trace_threads_are_estimated_from_windows() {
        let d = tempfile::tempdir().unwrap();
        let write = |name: &str, threads: usize, per: usize| {
            let mut s = String::from("[\n");
            for k in 0..threads * per {
                let t = if per > 10 { k % threads } else { k / per };
                s.push_str(&format!(
                    "{{\"ph\":\"X\",\"pid\":{},\"tid\":{t},\"ts\":{k},\"dur\":1,\"name\":\"a\"}},\n",
                    t / 4
                ));
            }
            s.push_str("{}]\n");
            let p = d.path().join(name);
            std::fs::write(&p, s).unwrap();
            p
        };
        let few = write("few.json", 12, 200_000);
        let len = std::fs::metadata(&few).unwrap().len();
        let t = threads_estimate(&std::fs::File::open(&few).unwrap(), len).unwrap();
        assert!((12..=16).contains(&t), "{t}");
        let many = write("many.json", 100_000, 3);
        let len = std::fs::metadata(&many).unwrap().len();
        let t = threads_estimate(&std::fs::File::open(&many).unwrap(), len).unwrap();
        assert!(t >= 5000, "{t}");
        let none = d.path().join("none.json");
        std::fs::write(&none, "[{\"ph\":\"X\"}]").unwrap();
        assert_eq!(
            threads_estimate(&std::fs::File::open(&none).unwrap(), 12),
            None
        );
    }

    fn model(path: &Path, ranges: usize) -> std::result::Result<String, String> {
        read_in(path, &ReadOptions::default(), Some(ranges))
            .map(|t: Trace| serde_json::to_string(&t).unwrap())
            .map_err(|e| e.to_string())
    }

    /// The model (or the error) of `path` read by 2 to 9 ranges is the one
    /// pipeline's, byte for byte.
    fn assert_ranges_equal_one_pipeline(path: &Path) {
        let want = model(path, 1);
        for n in 2..=9 {
            let got = model(path, n);
            assert!(
                got == want,
                "{} by {n} ranges: {:?}",
                path.display(),
                match (&got, &want) {
                    (Err(e), _) | (_, Err(e)) => e.clone(),
                    _ => "the models differ".to_string(),
                }
            );
        }
    }

    /// A gzip trace large enough to be indexed is read by ranges through
    /// its index, each range a reader of its own: the model one pipeline
    /// reads.
    #[test]
    fn a_gzip_trace_is_read_by_ranges_through_its_index() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("all.json.gz");
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let text = everything(29, 120_000);
        std::io::Write::write_all(&mut z, text.as_bytes()).unwrap();
        std::fs::write(&p, z.finish().unwrap()).unwrap();
        let inp = input::open(&p).unwrap();
        let src = byte_shares::source(&p, &inp).unwrap().expect("an index");
        assert_eq!(src.size().unwrap(), text.len() as u64);
        let shares = byte_shares::cut(&p, &src, 4).unwrap().expect("cut");
        assert_eq!(shares.len(), 4);
        let want = model(&p, 1);
        for n in [2, 3, 5] {
            assert!(model(&p, n) == want, "by {n} ranges");
        }
        // the trailer's CRC-32 disagrees: the ranges, read whole, say so
        // and the file is read by one pipeline, which repairs it
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n - 6] ^= 0x10;
        std::fs::write(&p, &bytes).unwrap();
        let inp = input::open(&p).unwrap();
        let src = byte_shares::source(&p, &inp).unwrap().expect("an index");
        let shares = byte_shares::cut(&p, &src, 4).unwrap().expect("cut");
        let opts = ReadOptions::default();
        assert!(matches!(
            read_shares(&p, &opts, (&src, inp.file_len), &shares).unwrap(),
            Outcome::Whole
        ));
        let want = model(&p, 1);
        assert!(want.as_ref().unwrap().contains("damaged-gzip"));
        for n in [2, 3, 5] {
            assert!(model(&p, n) == want, "damaged, by {n} ranges");
        }
    }

    /// Everything the ranges merge, spread over the file so that each
    /// range meets some of it first: threads and processes named by
    /// numbers and strings, renamed and reordered by metadata in later
    /// ranges (a sort index set, then set to none), states met with new
    /// categories late (beyond ASCII, lists), nested `B`/`E` crossing the
    /// cuts, `X` without `dur`, instants on threads and global, counters,
    /// flows with numeric and string ids whose steps lie in different
    /// ranges (bytes beyond 32 bits, tags beyond `i32`), async slices,
    /// ignored phases.
    fn everything(seed: u64, events: usize) -> String {
        let mut rng = XorShift(seed);
        let mut ev = Vec::new();
        let pid = |k: u64| ["1", "2", "\"svc\""][(k % 3) as usize];
        let tid = |k: u64| {
            if k % 5 == 4 {
                format!("\"w{}\"", k % 7)
            } else {
                format!("{}", k % 9)
            }
        };
        let cats = ["compute", "mpi", "Été", "io,net", "ÉTÉ"];
        let mut open_flows: Vec<(String, u64)> = Vec::new();
        for k in 0..events as u64 {
            let ts = 10 * k + rng.below(5);
            let who = rng.below(40);
            let (p, t) = (pid(who), tid(who));
            let name = format!("s{}", rng.below(6));
            let cat = cats[rng.below(cats.len() as u64) as usize];
            let head = format!(r#""pid":{p},"tid":{t},"ts":{ts}"#);
            let e = match rng.below(24) {
                0..=5 => format!(
                    r#"{{"ph":"X",{head},"dur":{},"name":"{name}","cat":"{cat}"}}"#,
                    rng.below(40)
                ),
                6 => format!(r#"{{"ph":"X",{head},"name":"{name}","cat":"{cat}"}}"#),
                7..=8 => format!(r#"{{"ph":"B",{head},"name":"{name}","cat":"{cat}"}}"#),
                9..=10 => format!(r#"{{"ph":"E",{head}}}"#),
                11 => format!(
                    r#"{{"ph":"i",{head},"name":"mark{}","s":"{}","args":{{"value":{}}}}}"#,
                    rng.below(4),
                    ["t", "g", "p"][rng.below(3) as usize],
                    rng.below(100)
                ),
                12 => format!(
                    r#"{{"ph":"C",{head},"name":"ctr{}","args":{{"a":{},"b{}":1.5}}}}"#,
                    rng.below(3),
                    rng.below(1000),
                    rng.below(3)
                ),
                13 => format!(
                    r#"{{"ph":"M",{head},"name":"thread_sort_index","args":{{"sort_index":{}}}}}"#,
                    rng.below(50)
                ),
                14 => format!(r#"{{"ph":"M",{head},"name":"thread_sort_index"}}"#),
                15 => format!(
                    r#"{{"ph":"M","pid":{p},"name":"process_name","args":{{"name":"p{k}"}}}}"#
                ),
                16 => format!(
                    r#"{{"ph":"M","pid":{p},"name":"process_sort_index","args":{{"sort_index":{}}}}}"#,
                    rng.below(9)
                ),
                17 => {
                    format!(r#"{{"ph":"M",{head},"name":"thread_name","args":{{"name":"t{k}"}}}}"#)
                }
                18..=19 => {
                    let id = match rng.below(3) {
                        0 => format!("{k}"),
                        1 => format!("\"x{k}\""),
                        _ => format!("{}", 1_000_000_000 + k),
                    };
                    let (bytes, tag) = match rng.below(4) {
                        0 => (5_000_000_000u64, String::new()),
                        1 => (64, r#","tag":9999999999"#.to_string()),
                        2 => (8, r#","tag":7"#.to_string()),
                        _ => (16, String::new()),
                    };
                    open_flows.push((id.clone(), ts));
                    format!(
                        r#"{{"ph":"s",{head},"name":"m","cat":"c{}","id":{id},"args":{{"bytes":{bytes}{tag}}}}}"#,
                        k % 2
                    )
                }
                20..=21 if !open_flows.is_empty() => {
                    let i = rng.below(open_flows.len() as u64) as usize;
                    let (id, _) = open_flows.swap_remove(i);
                    let ph = if rng.below(4) == 0 { "t" } else { "f" };
                    // the category is the step's: some flows end in another
                    format!(
                        r#"{{"ph":"{ph}",{head},"name":"m","cat":"c{}","id":{id},"bp":"e"}}"#,
                        rng.below(2)
                    )
                }
                // (at times shared by many, in several ranges: their order
                // is the file's)
                22 => format!(
                    r#"{{"ph":"{}","pid":{p},"ts":{},"name":"{name}","cat":"net","id":{}}}"#,
                    ["b", "e", "S", "F"][rng.below(4) as usize],
                    ts / 4000 * 4000,
                    rng.below(5)
                ),
                _ => format!(r#"{{"ph":"O","pid":{p},"ts":{ts},"name":"obj","id":"1"}}"#),
            };
            ev.push(e);
        }
        format!(
            "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n{}\n]}}",
            ev.join(",\n")
        )
    }

    /// A trace whose flows have plain decimal ids only, in two categories
    /// (and one met only in a later range), steps that end a flow in
    /// another range than its start, ids met again in several ranges and
    /// ids far below the first of a range (in its map, not its table).
    fn numeric_flows(seed: u64, events: u64) -> String {
        let mut rng = XorShift(seed);
        let mut ev = Vec::new();
        let mut open: Vec<(u64, &str)> = Vec::new();
        for k in 0..events {
            let t = rng.below(6);
            let head = format!(r#""pid":{},"tid":{t},"ts":{k}"#, t % 3);
            let cat = if k > events / 2 && rng.below(3) == 0 {
                "late"
            } else {
                ["a", "b"][rng.below(2) as usize]
            };
            ev.push(match rng.below(5) {
                0 | 1 => {
                    open.push((k, cat));
                    format!(r#"{{"ph":"s",{head},"name":"m","cat":"{cat}","id":{k}}}"#)
                }
                2 if !open.is_empty() => {
                    // the oldest now and then: an id far below the range's
                    let i = match rng.below(8) {
                        0 => 0,
                        _ => open.len() - 1 - rng.below(open.len().min(20) as u64) as usize,
                    };
                    let (id, cat) = open.remove(i);
                    let ph = ["f", "t"][rng.below(2) as usize];
                    format!(r#"{{"ph":"{ph}",{head},"name":"m","cat":"{cat}","id":{id},"bp":"e"}}"#)
                }
                _ => format!(r#"{{"ph":"X",{head},"dur":1,"name":"w"}}"#),
            });
        }
        format!("[\n{}\n]", ev.join(",\n"))
    }

    /// The ranges' parts of `path` cut `n` ways, each read on its own.
    fn parts(path: &Path, n: usize) -> Vec<Part> {
        let inp = input::open(path).unwrap();
        let src = byte_shares::source(path, &inp).unwrap().unwrap();
        let len = src.size().unwrap();
        let shares = byte_shares::cut(path, &src, n).unwrap().unwrap();
        shares
            .iter()
            .map(|s| {
                let src = src.fork().unwrap();
                read_share(path, &ReadOptions::default(), (src, len), s, 4096).unwrap()
            })
            .collect()
    }

    /// The flows of ranges numbered on all threads at once are numbered as
    /// range after range, where every id is a plain decimal number; with
    /// one id of text, or a category's ids too far apart, they are left
    /// to the numbering range after range.
    #[test]
    fn flows_numbered_at_once_as_range_after_range() {
        let d = tempfile::tempdir().unwrap();
        for (seed, events, n) in [(1u64, 3000, 2), (7, 20_000, 5), (11, 60_000, 9)] {
            let p = d.path().join(format!("flows{seed}.json"));
            std::fs::write(&p, numeric_flows(seed, events)).unwrap();
            let serial = {
                let mut ps = parts(&p, n).into_iter();
                let mut acc = ps.next().unwrap().acc;
                let rest: Vec<Part> = ps.collect();
                let last = rest.len();
                let numbers: Vec<Vec<u32>> = rest
                    .iter()
                    .enumerate()
                    .map(|(r, p)| flow_numbers(&mut acc, &p.acc, r + 1 == last))
                    .collect();
                (numbers, acc.flow_count, acc.flow_cats.len())
            };
            for threads in [1, 3] {
                let mut ps = parts(&p, n).into_iter();
                let mut acc = ps.next().unwrap().acc;
                let rest: Vec<Part> = ps.collect();
                // some flows of each range are in its map
                assert!(rest.iter().any(|p| !p.acc.flow_num_keys.is_empty()));
                let at_once = crate::test_pool::pool(threads)
                    .install(|| flow_numbers_at_once(&mut acc, &rest))
                    .expect("numbered at once");
                assert!(
                    (at_once, acc.flow_count, acc.flow_cats.len()) == serial,
                    "{} by {n} ranges on {threads} threads",
                    p.display()
                );
            }
            assert_ranges_equal_one_pipeline(&p);
        }
        // an id of text, and ids too far apart: left to the serial way
        let with_last = |id: &str| {
            let t = numeric_flows(3, 4000);
            let last = format!(
                r#",{{"ph":"s","pid":0,"tid":0,"ts":4000,"name":"m","cat":"a","id":{id}}}
]"#
            );
            format!("{}{last}", t.strip_suffix("\n]").unwrap())
        };
        let (text, far) = (with_last(r#""x5""#), with_last("99999999999"));
        for (name, text) in [("text.json", text), ("far.json", far)] {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            let mut ps = parts(&p, 3).into_iter();
            let mut acc = ps.next().unwrap().acc;
            let rest: Vec<Part> = ps.collect();
            let count = acc.flow_count;
            assert!(flow_numbers_at_once(&mut acc, &rest).is_none(), "{name}");
            assert_eq!(acc.flow_count, count);
            assert_ranges_equal_one_pipeline(&p);
        }
    }

    #[test]
    fn ranges_give_the_one_pipelines_model() {
        let d = tempfile::tempdir().unwrap();
        for (seed, events) in [(3u64, 400), (17, 3000), (29, 12_000)] {
            let p = d.path().join(format!("all{seed}.json"));
            std::fs::write(&p, everything(seed, events)).unwrap();
            assert_ranges_equal_one_pipeline(&p);
        }
        for p in messy_and_shared_chrome(d.path()) {
            assert_ranges_equal_one_pipeline(&p);
        }
    }

    /// A trace of more threads than [`super::super::deferred::MIN_THREADS`],
    /// each with `X` slices, nested `B`/`E` events and a name, events of
    /// all threads interleaved: one pipeline holds its slices back from the
    /// threads' records once it has met that many threads and gives them
    /// on all threads; the model is the ranges' (which hold none back), on
    /// 1 and 3 threads.
    #[test]
    fn slices_held_back_at_many_threads_give_the_ranges_model() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("many.json");
        let threads = super::super::deferred::MIN_THREADS as u64 + 900;
        let mut rng = XorShift(5);
        let mut ev = Vec::new();
        for round in 0..7u64 {
            for k in 0..threads {
                let t = (k * 7919 + round) % threads;
                let ts = 1000 * round + rng.below(900);
                let head = format!(r#""pid":{},"tid":{t},"ts":{ts}"#, t % 13);
                ev.push(match (round, rng.below(6)) {
                    (3, _) => format!(
                        r#"{{"ph":"M",{head},"name":"thread_name","args":{{"name":"w{t}"}}}}"#
                    ),
                    (_, 0) => format!(r#"{{"ph":"B",{head},"name":"outer","cat":"mpi"}}"#),
                    (_, 1) => format!(r#"{{"ph":"E",{head}}}"#),
                    (_, r) => format!(
                        r#"{{"ph":"X",{head},"dur":{},"name":"s{r}","cat":"compute"}}"#,
                        rng.below(80)
                    ),
                });
            }
        }
        std::fs::write(&p, format!("[\n{}\n]", ev.join(",\n"))).unwrap();
        let want = model(&p, 3);
        assert!(want.as_ref().is_ok_and(|m| m.contains("w4100")));
        for n in [1, 3] {
            let got = crate::test_pool::pool(n).install(|| model(&p, 1));
            assert!(got == want, "one pipeline on {n} threads");
        }
    }

    /// The test is about what it says: the file is cut into as many
    /// ranges as asked, each with events, and what the merge renumbers is
    /// met first in later ranges.
    #[test]
    fn the_cuts_split_the_events() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("all.json");
        std::fs::write(&p, everything(17, 3000)).unwrap();
        let inp = input::open(&p).unwrap();
        for n in 2..=9 {
            let src = byte_shares::source(&p, &inp).unwrap().unwrap();
            let shares = byte_shares::cut(&p, &src, n).unwrap().unwrap();
            assert_eq!(shares.len(), n);
            assert!(shares.iter().all(|s| !s.empty));
            // the guessed cuts fall where the walked ones do (one event a
            // line), and the read takes them
            let guessed = byte_shares::guess(&p, &src, n).unwrap().unwrap();
            let at = |s: &[Share]| s.iter().map(|s| (s.start, s.line)).collect::<Vec<_>>();
            assert_eq!(at(&guessed), at(&shares));
            let opts = ReadOptions::default();
            assert!(matches!(
                read_shares(&p, &opts, (&src, inp.file_len), &guessed).unwrap(),
                Outcome::Read(_)
            ));
            let (acc, b, _) = read(&p, &ReadOptions::default(), &inp, n).unwrap().unwrap();
            assert_eq!(acc.seq, 3000);
            assert!(acc.threads.len() == 17 && b.states.len() == 6);
            assert!(b.states.iter().any(|(_, s)| s.tags.len() > 3));
        }
        // the categories beyond ASCII are one tag whatever their case
        let t = read_in(&p, &ReadOptions::default(), Some(3)).unwrap();
        assert!(
            t.states
                .iter()
                .all(|(_, s)| { s.tags.iter().filter(|t| t.as_str() == "cat:été").count() <= 1 })
        );
    }

    /// A file that cannot be cut (gzip, a cut deep inside an event) and
    /// damaged files (a bad event in a later range, two bad events, a file
    /// cut short, an array that does not close) give the one pipeline's
    /// model or error.
    #[test]
    fn uncut_and_damaged_files_give_the_one_pipelines_answer() {
        let d = tempfile::tempdir().unwrap();
        let all = everything(41, 2000);
        let lines: Vec<&str> = all.lines().collect();
        let bad_at = |at: &[usize]| -> String {
            lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    if at.contains(&i) {
                        l.replacen("\"ts\":", "\"ts\":\"x\",\"was\":", 1)
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let n = lines.len();
        for (name, text) in [
            ("late-bad", bad_at(&[n * 3 / 4])),
            ("two-bad", bad_at(&[n / 3, n * 5 / 6])),
            ("cut-short", all[..all.len() * 2 / 3].to_string()),
            ("not-closed", format!("{}]]]", &all[..all.len() / 2])),
            ("deep", deep_chrome(300)),
        ] {
            let p = d.path().join(format!("{name}.json"));
            std::fs::write(&p, text).unwrap();
            assert_ranges_equal_one_pipeline(&p);
        }
        // guesses that fall inside an event (an argument holding objects
        // on lines of their own) or after the events array (an object's
        // member that holds such lines), and a file on one line (nothing to
        // guess at): cut again by the walk, or read by one pipeline
        let nested_args: Vec<String> = (0..400)
            .map(|k| {
                format!(
                    "{{\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":3,\"name\":\"n\",\"args\":{{\"l\":[{{\"a\":1}},\n{{\"b\":{k}}}]}}}}",
                    k % 3,
                    10 * k
                )
            })
            .collect();
        let trailer: Vec<String> = (0..2000).map(|k| format!("{{\"k\":{k}}}")).collect();
        let one_line = everything(43, 600).replace('\n', "");
        for (name, text) in [
            ("nested-args", format!("[{}]", nested_args.join(",\n"))),
            (
                "after-the-array",
                format!(
                    "{{\"traceEvents\":[\n{}\n],\n\"more\":[\n{}\n]}}",
                    lines[1..lines.len() / 4].join("\n").trim_end_matches(','),
                    trailer.join(",\n")
                ),
            ),
            ("one-line", one_line),
        ] {
            let p = d.path().join(format!("{name}.json"));
            std::fs::write(&p, text).unwrap();
            assert_ranges_equal_one_pipeline(&p);
            let inp = input::open(&p).unwrap();
            let src = byte_shares::source(&p, &inp).unwrap().unwrap();
            let guessed = byte_shares::guess(&p, &src, 4).unwrap();
            if name == "one-line" {
                assert!(guessed.is_none());
            } else {
                // the guesses are wrong, and the read says so
                let shares = guessed.unwrap();
                let opts = ReadOptions::default();
                assert!(
                    matches!(
                        read_shares(&p, &opts, (&src, inp.file_len), &shares).unwrap(),
                        Outcome::Misplaced
                    ),
                    "{name}"
                );
                assert!(byte_shares::cut(&p, &src, 4).unwrap().is_some(), "{name}");
            }
        }
        // gzip without an index (zlib-rs's level 1 writes blocks of fixed
        // codes) is read by one pipeline
        let p = d.path().join("all.json.gz");
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, all.as_bytes()).unwrap();
        std::fs::write(&p, z.finish().unwrap()).unwrap();
        let inp = input::open(&p).unwrap();
        assert!(byte_shares::source(&p, &inp).unwrap().is_none());
        assert_ranges_equal_one_pipeline(&p);
    }
}
