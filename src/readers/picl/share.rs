//! PICL traces reduced by the processes of a job together (`mpirun …
//! tapestry reduce`), each reading a share of the file's bytes.
//!
//! A processor's records must be cut in file order (`super::cut`), and
//! its begin and end records can lie in any two shares. So the file is cut
//! into stripes of whole lines, dealt to the processes in turn (stripe `j`
//! to process `j mod N`), and read in rounds: in round `i` every process
//! parses its stripe `i·N + rank` with all its threads and sends each
//! record, as bytes, to the process that owns the record's processor (the
//! processors are dealt in N runs of about equal count). An owner cuts what
//! it received in rank order, which is file order: stripe after stripe,
//! each processor's records come in the order of the file, and the cut is
//! the stream's, record for record. The sends and receives it cuts go, in
//! the next exchange, to the owner of the receiving processor, which
//! matches them (the n-th send of a (source, destination, tag) with its
//! n-th receive). A process holds one round's records and the messages in
//! flight: memory is flat in the file's size, as for `--stream`.
//!
//! A gzip file's stripes are read through its index
//! ([`gzip_index`]) and start at its checkpoints (`Stripes::at_checkpoints`),
//! so that each process decodes about its stripes only.
//!
//! A first pass, in the same stripes, finds the processors, the last time
//! and how many lines each stripe has (so that every process names the
//! file's own line in what it reports). Every exchange carries whether its
//! sender failed ([`crate::readers::exchange`]), so every process stops
//! together, the one that met the error saying it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::cut::{Ctx, Key, Matcher, P2p, Proc};
use super::stream::refused;
use super::{Chunk, Rec, parse_block, survey_block};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{Format, LocId, LocationKind, StateId, Time, TimeUnit, Trace, TraceBuilder};
use crate::readers::ReadOptions;
use crate::readers::exchange::{
    Exchange, Outbox, Words, all_gather, exchange_checked, put_bytes, put_position,
};
use crate::readers::gzip_index::{self, at::Source};
use crate::readers::input::{self, DamageHandle};

/// The largest stripe per thread of a process: 1 MiB of the file, about
/// 23,000 records (1.1 MB as sent), per round. Larger stripes only hold
/// more: on 2 processes of one thread, stripes of 8, 4, 2 and 1 MiB took
/// 1.39, 1.31, 1.18 and 1.17 s at a peak of 113, 70, 50 and 37 MiB.
pub const MAX_STRIPE_PER_THREAD: u64 = 1 << 20;

/// The stripe for a file of `len` bytes read by `n` processes of
/// `threads` threads: about eight rounds, at least 4 KiB and at most
/// [`MAX_STRIPE_PER_THREAD`] for each thread (each thread parses a block
/// of it).
pub fn stripe_for(len: u64, n: usize, threads: usize) -> u64 {
    len.div_ceil((n as u64).max(1) * 8)
        .clamp(4 << 10, MAX_STRIPE_PER_THREAD * threads.max(1) as u64)
}

/// The least stripe of a gzip file's bytes, and the span its index's
/// checkpoints are asked for. Each stripe starts at a checkpoint, which
/// costs its window (32 KiB kept, and 64 KiB in the exchange that builds
/// the index) where a larger stripe holds more records. On dev's 2 cores
/// (`mpirun … reduce summary` of a 320 MB trace of 65,536 processors as
/// 47.6 MB of `gzip -6`, paired medians of 3 against stripes of even
/// size, each decoded from the checkpoint before it, so that every process
/// decoded about the whole file in each pass): the CPU of all processes
/// 0.88–0.95× at `-n 2` (4.86–5.00 s), 0.82–0.83× at 4, 0.65× at 8, the
/// peak 101–104, 96–97 and 106 MiB against 81–82, 86 and 77. With 2 MiB (153 checkpoints instead of
/// 76) finding the blocks cost what the decoding saved at `-n 2` (1.02×,
/// 89 MiB).
const GZIP_STRIPE: u64 = 4 << 20;

/// What one process's share of a PICL trace leaves besides its reductions
/// (which its sink holds): what it cut's repairs, the sends and receives
/// it could not match, the kinds of other records it saw, and the last
/// record when it was incomplete. Rank 0 merges every process's in rank
/// order and [`PiclShare::finish`]es.
pub struct PiclShare {
    path: PathBuf,
    /// The trace's processors (every process has them all).
    procs: Vec<u32>,
    /// The first processor (index in `procs`) this share cut.
    first: usize,
    /// Each processor cut: (ends without a begin, begins never ended,
    /// first such line).
    cut: Vec<(u64, u64, Option<u64>)>,
    unmatched: u64,
    kinds: BTreeSet<(i32, i32)>,
    truncated: Option<(Position, String)>,
    /// The builder with the locations and states (rank 0's is finished).
    builder: Option<TraceBuilder>,
}

/// Fails on rank 0 alone when every process fails alike (they read the
/// same file), else on the processes that failed; the others stop with
/// [`Error::OtherProcess`].
fn agree<T>(ex: &mut dyn Exchange, r: Result<T>) -> Result<T> {
    let failed = r.is_err();
    let (got, _) = ex.all_to_all(&vec![u64::from(failed); ex.size()], &vec![1; ex.size()])?;
    let all = got.iter().all(|&m| m == 1);
    match r {
        Ok(_) if got.iter().any(|&m| m != 0) => Err(Error::OtherProcess),
        Err(_) if all && ex.rank() != 0 => Err(Error::OtherProcess),
        r => r,
    }
}

/// The stripes of process `k` of `n`: `k`, `k + n`, …
fn stripes_of(k: usize, n: usize, stripes: u64) -> impl Iterator<Item = u64> {
    (k as u64..stripes).step_by(n.max(1))
}

/// Where a file's stripes lie: `bounds[j]..bounds[j + 1]`, the last
/// ending at the file's length.
struct Stripes {
    bounds: Vec<u64>,
}

impl Stripes {
    /// Stripes of `stripe` bytes of a file of `len` (one at least).
    fn even(len: u64, stripe: u64) -> Stripes {
        let stripe = stripe.max(1);
        let count = len.div_ceil(stripe).max(1);
        let bounds = (0..count)
            .map(|j| j * stripe)
            .chain([len.max(stripe * (count - 1))])
            .collect();
        Stripes { bounds }
    }

    /// Stripes of a gzip file's bytes read through its index: the spans
    /// between its checkpoints, each stripe ending at the last checkpoint
    /// at most `stripe` bytes after its start (or at the next, where the
    /// span there is longer: a span is never cut). A stripe then starts at
    /// a checkpoint, so the process that reads it decodes only it (the
    /// byte before it is the checkpoint's window), where stripes of even
    /// size would each be decoded from the checkpoint before them and a
    /// process would decode most of the file (its stripes and the gaps
    /// between them).
    fn at_checkpoints(index: &gzip_index::Index, stripe: u64) -> Stripes {
        let stripe = stripe.max(1);
        let mut bounds = vec![0u64];
        let mut last = 0;
        // the last checkpoint seen within a stripe of `last`
        let mut within = None;
        for out in index.checkpoints.iter().map(|c| c.out) {
            if out <= last || out >= index.len {
                continue;
            }
            if out - last > stripe {
                let end = within.take().unwrap_or(out);
                bounds.push(end);
                last = end;
            }
            if out > last {
                within = Some(out);
            }
        }
        bounds.push(index.len.max(last));
        Stripes { bounds }
    }

    /// How many there are.
    fn count(&self) -> u64 {
        self.bounds.len().saturating_sub(1) as u64
    }

    /// Stripe `j`'s bytes.
    fn range(&self, j: u64) -> (u64, u64) {
        let j = j as usize;
        (self.bounds[j], self.bounds[j + 1])
    }
}

/// What the first pass of one process found.
#[derive(Default)]
struct Survey {
    procs: Vec<u32>,
    max_time: i64,
    /// Lines in each of its stripes, in order.
    lines: Vec<u64>,
    /// Its first malformed record: (stripe, position in the stripe's own
    /// numbering, what is wrong).
    error: Option<(u64, Position, String)>,
}

impl Survey {
    fn to_words(&self) -> Vec<u64> {
        let mut w = Vec::with_capacity(4 + self.procs.len() + self.lines.len());
        w.push(self.procs.len() as u64);
        w.extend(self.procs.iter().map(|&p| u64::from(p)));
        w.push(self.max_time as u64);
        w.push(self.lines.len() as u64);
        w.extend_from_slice(&self.lines);
        w.push(self.error.as_ref().map_or(u64::MAX, |e| e.0));
        w
    }

    fn from_words(w: &[u64]) -> Result<Survey> {
        let mut r = Words::new(w);
        let n = r.count(1)?;
        let procs = r
            .take(n)?
            .iter()
            .map(|&p| u32::try_from(p).map_err(|_| bad()))
            .collect::<Result<_>>()?;
        let max_time = r.one()? as i64;
        let n = r.count(1)?;
        let lines = r.take(n)?.to_vec();
        let e = r.one()?;
        Ok(Survey {
            procs,
            max_time,
            lines,
            error: (e != u64::MAX).then(|| (e, Position::none(), String::new())),
        })
    }
}

/// The first pass over this process's stripes.
fn survey(path: &Path, src: &Source, ex: &dyn Exchange, stripes: &Stripes) -> Result<Survey> {
    let mut s = Survey::default();
    for j in stripes_of(ex.rank(), ex.size(), stripes.count()) {
        let (from, to) = stripes.range(j);
        let mut blocks = input::open_share_at(path, src.clone(), from, to)?;
        blocks.for_each_parallel(survey_block, |_, b| {
            if let Some((pos, msg)) = b.error
                && s.error.is_none()
            {
                s.error = Some((j, pos, msg));
            }
            s.procs.extend(b.procs);
            s.max_time = s.max_time.max(b.max_time);
            Ok(())
        })?;
        s.lines.push(blocks.next_line_number() - 1);
        s.procs.sort_unstable();
        s.procs.dedup();
    }
    Ok(s)
}

fn bad() -> Error {
    Error::Invalid("damaged PICL share received from another process".into())
}

/// Words of one record as sent.
const REC_WORDS: usize = std::mem::size_of::<Rec>() / 8;
const _: () =
    assert!(std::mem::size_of::<Rec>().is_multiple_of(8) && std::mem::align_of::<Rec>() <= 8);

/// A send or receive as sent to its matcher: 5 words.
fn put_op(w: &mut Vec<u64>, (send, (s, d, tag), time, bytes): &P2p) {
    w.extend_from_slice(&[
        u64::from(*s) | (u64::from(*d) << 32),
        *tag as u64,
        *time,
        *bytes as u64,
        u64::from(*send),
    ]);
}

fn get_ops(w: &[u64], ops: &mut Vec<P2p>) -> Result<()> {
    if !w.len().is_multiple_of(5) {
        return Err(bad());
    }
    for c in w.chunks_exact(5) {
        let (s, d) = (c[0] as u32, (c[0] >> 32) as u32);
        ops.push((c[4] != 0, (s, d, c[1] as i64), c[2], c[3] as i64));
    }
    Ok(())
}

/// The processors' owners: process `r` cuts processors `bounds[r]..bounds[r + 1]`.
struct Owners {
    bounds: Vec<usize>,
}

impl Owners {
    fn new(procs: usize, n: usize) -> Owners {
        Owners {
            bounds: (0..=n).map(|r| procs * r / n.max(1)).collect(),
        }
    }

    fn of(&self, i: usize) -> usize {
        self.bounds.partition_point(|&b| b <= i).saturating_sub(1)
    }
}

/// Reads process `ex.rank()`'s share of the PICL trace at `path` into
/// `sink`, taking part in every exchange of the job (every process of `ex`
/// calls it at once). `stripe`: the bytes of each stripe
/// ([`stripe_for`]). The share to merge on rank 0, or the error: this
/// process's, or [`Error::OtherProcess`] when another failed.
pub fn read_share(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn IntervalSink,
    ex: &mut dyn Exchange,
    stripe: u64,
) -> Result<PiclShare> {
    let (k, n) = (ex.rank(), ex.size());
    let compressed = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))
        .and_then(|m| {
            if !m.is_file() {
                return Err(Error::Invalid(format!(
                    "{} is not a regular file, which cannot be split among processes",
                    path.display()
                )));
            }
            input::is_gzip(path)
        });
    let compressed = agree(ex, compressed)?;
    // the file, or a gzip file's bytes through the index the processes
    // build together (a gzip file without one is refused)
    // (every process agrees on it, whatever failed where)
    // (a gzip file's stripes start at its checkpoints: one about every
    // stripe of [`GZIP_STRIPE`] or more)
    let gz_stripe = stripe.max(GZIP_STRIPE);
    let src = gzip_index::shared_source(path, compressed, ex, Some(gz_stripe))
        .and_then(|s| s.ok_or_else(|| input::unsplittable_gzip(path)));
    let src = agree(ex, src)?;
    let len = agree(ex, src.size().map_err(|e| Error::io(path, e)))?;
    let stripe = stripe.max(1);
    let stripes = match src.gzip() {
        Some(g) => Stripes::at_checkpoints(g.index(), gz_stripe),
        None => Stripes::even(len, stripe),
    };

    // first pass: processors, last time, lines per stripe
    let surveyed = survey(path, &src, &*ex, &stripes);
    let (mine, failed) = match surveyed {
        Ok(s) => (s, None),
        Err(e) => (Survey::default(), Some(e)),
    };
    let all = all_gather(ex, &mine.to_words(), failed)?;
    // a gzip file's bytes, each span decoded whole by one process or
    // another, against its trailer's CRC-32
    gzip_index::check_read_shared(path, src.as_ref(), ex)?;
    let mut procs: Vec<u32> = Vec::new();
    let mut max_time = 0i64;
    let mut lines = vec![0u64; stripes.count() as usize];
    let mut first_error: Option<(u64, usize)> = None;
    for s in 0..all.len() {
        let sv = Survey::from_words(all.from(s))?;
        procs.extend(&sv.procs);
        max_time = max_time.max(sv.max_time);
        for (j, l) in stripes_of(s, n, stripes.count()).zip(&sv.lines) {
            lines[j as usize] = *l;
        }
        if let Some((j, ..)) = sv.error
            && first_error.is_none_or(|(f, _)| j < f)
        {
            first_error = Some((j, s));
        }
    }
    // each stripe's first line in the file
    let mut first_line = Vec::with_capacity(lines.len());
    let mut at = 1u64;
    for l in &lines {
        first_line.push(at);
        at += l;
    }
    if let Some((j, s)) = first_error {
        if s != k {
            return Err(Error::OtherProcess);
        }
        let (_, mut pos, msg) = mine.error.ok_or_else(bad)?;
        pos.line = pos.line.map(|l| l + first_line[j as usize] - 1);
        return Err(Error::parse(path, pos, msg));
    }
    procs.sort_unstable();
    procs.dedup();
    if procs.is_empty() {
        return Err(if k == 0 {
            Error::parse(path, Position::line(1), "expected PICL records, found none")
        } else {
            Error::OtherProcess
        });
    }

    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    let locs: Vec<LocId> = procs
        .iter()
        .map(|&p| {
            b.locations
                .add(format!("proc {p}"), LocationKind::Thread, None, p as i64)
        })
        .collect();
    let st = super::add_states(&mut b);
    let owners = Owners::new(procs.len(), n);
    let (lo, hi) = (owners.bounds[k], owners.bounds[k + 1]);
    let mut state: Vec<Proc> = (lo..hi).map(|i| Proc::new(locs[i], procs[i])).collect();
    // (a window that does not fit the trace fails every process alike)
    let begun = sink.begin(procs.len(), max_time.max(0) as Time);
    agree(ex, begun)?;

    let mut c = Ctx::new([st.busy, st.send, st.recv], false);
    let mut m = Matcher::default();
    let mut failed: Option<Error> = None;
    let mut truncated: Option<(Position, String)> = None;
    // the sends and receives cut, by the process that matches them
    let mut ops_out: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut ops_in: Vec<P2p> = Vec::new();
    let sink_err = |e: String| Error::parse(path, Position::none(), e);
    let rounds = stripes.count().div_ceil(n as u64);
    // a block of the stripe for each thread
    let threads = rayon::current_num_threads().max(1) as u64;
    let block = (stripe.div_ceil(threads) as usize).clamp(64 << 10, input::BLOCK_SIZE);
    // the last exchange carries the sends and receives of the processors' ends
    for round in 0..=rounds {
        // this round's records, by chunk, and their runs by owner:
        // (owner, chunk, first record, records)
        let mut chunks: Vec<Vec<Rec>> = Vec::new();
        let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
        let j = round * n as u64 + k as u64;
        if failed.is_none() && round < rounds && j < stripes.count() {
            let (from, to) = stripes.range(j);
            let read = input::open_share_at(path, src.clone(), from, to).and_then(|mut bl| {
                bl.set_next_line_number(first_line[j as usize]);
                bl.set_block_size(block);
                bl.for_each_parallel(parse_block, |_, chunk: Chunk| {
                    if let Some((pos, msg)) = chunk.error {
                        if chunk.truncated && !opts.strict {
                            truncated = Some((pos, msg));
                        } else {
                            let damage = DamageHandle::default();
                            super::repair_truncated(
                                &mut b,
                                &damage,
                                path,
                                chunk.truncated,
                                pos,
                                msg,
                            )?;
                        }
                    }
                    let mut at = 0;
                    for run in chunk.recs.chunk_by(|a, b| a.proc_ == b.proc_) {
                        let i = procs.binary_search(&run[0].proc_).map_err(|_| {
                            Error::Invalid(format!(
                                "{}: the file changed while it was read (processor {} is new)",
                                path.display(),
                                run[0].proc_
                            ))
                        })?;
                        runs.push((owners.of(i), chunks.len(), at, run.len()));
                        at += run.len();
                    }
                    chunks.push(chunk.recs);
                    Ok(())
                })
            });
            if let Err(e) = read {
                failed = Some(e);
            }
        }
        if round == rounds && failed.is_none() {
            let ended = state.iter_mut().try_for_each(|p| {
                p.finish(&mut c).map_err(|e| refused(path, e))?;
                sink.intervals(&c.out).map_err(sink_err)?;
                c.out.clear();
                Ok(())
            });
            if let Err(e) = ended {
                failed = Some(e);
            }
            route(&mut c.ops, &procs, &owners, k, &mut ops_out);
        }
        // one message per process: its records, then the sends and
        // receives it matches
        runs.sort_by_key(|r| r.0);
        let words = runs.iter().map(|r| r.3).sum::<usize>() * REC_WORDS
            + ops_out.iter().map(Vec::len).sum::<usize>()
            + 2 * n;
        let mut out = Outbox::with_capacity(words);
        let mut runs = runs.iter().peekable();
        for (d, ops) in ops_out.iter_mut().enumerate() {
            out.begin();
            let count_at = out.words.len();
            out.words.push(0);
            let mut count = 0;
            while let Some(&(_, c, a, l)) = runs.next_if(|r| r.0 == d) {
                out.words
                    .extend_from_slice(bytemuck::cast_slice(&chunks[c][a..a + l]));
                count += l;
            }
            out.words[count_at] = count as u64;
            out.words.append(ops);
            out.end();
        }
        drop(chunks);
        let got = exchange_checked(ex, out, failed.take())?;
        // the records in rank order, which is file order; then the sends
        // and receives to match, each sender's in its order
        let cut = (|| -> Result<()> {
            for src in 0..got.len() {
                let mut r = Words::new(got.from(src));
                let nr = r.count(1)?;
                let recs: &[Rec] =
                    bytemuck::try_cast_slice(r.take(nr * REC_WORDS)?).map_err(|_| bad())?;
                for run in recs.chunk_by(|a, b| a.proc_ == b.proc_) {
                    let i = procs.binary_search(&run[0].proc_).map_err(|_| bad())?;
                    let p = i
                        .checked_sub(lo)
                        .and_then(|x| state.get_mut(x))
                        .ok_or_else(bad)?;
                    for rec in run {
                        p.take(rec, &mut c).map_err(|e| refused(path, e))?;
                    }
                }
                sink.intervals(&c.out).map_err(sink_err)?;
                c.out.clear();
                get_ops(r.rest(), &mut ops_in)?;
            }
            m.apply(&mut ops_in);
            for &((s, d, _), st, rt, bytes) in &m.matched {
                if let (Ok(s), Ok(d)) = (procs.binary_search(&s), procs.binary_search(&d)) {
                    sink.message(locs[s], locs[d], st, rt, bytes)
                        .map_err(sink_err)?;
                }
            }
            m.matched.clear();
            route(&mut c.ops, &procs, &owners, k, &mut ops_out);
            Ok(())
        })();
        if let Err(e) = cut {
            failed = Some(e);
        }
    }
    // a failure after the last exchange stops every process too
    exchange_checked(ex, Outbox::to_all(n, &[]), failed)?;
    sink.counted(Counted::Events, c.events, c.last_event);
    Ok(PiclShare {
        path: path.to_path_buf(),
        procs,
        first: lo,
        cut: state.iter().map(|p| p.faults()).collect(),
        unmatched: m.unmatched(),
        kinds: std::mem::take(&mut c.kinds),
        truncated,
        builder: (k == 0).then_some(b),
    })
}

/// Sends `ops` (emptied) to the processes that match them: the owner of
/// the receiving processor (this one when there is none).
fn route(ops: &mut Vec<P2p>, procs: &[u32], owners: &Owners, me: usize, out: &mut [Vec<u64>]) {
    for op in ops.drain(..) {
        let key: Key = op.1;
        let to = procs.binary_search(&key.1).map_or(me, |i| owners.of(i));
        put_op(&mut out[to], &op);
    }
}

impl PiclShare {
    /// This share as bytes, for sending to rank 0 ([`PiclShare::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w: Vec<u64> = vec![self.first as u64, self.cut.len() as u64];
        for &(u, c, f) in &self.cut {
            w.extend_from_slice(&[u, c, f.unwrap_or(u64::MAX)]);
        }
        w.push(self.unmatched);
        w.push(self.kinds.len() as u64);
        w.extend(
            self.kinds
                .iter()
                .map(|&(rt, e)| u64::from(rt as u32) | (u64::from(e as u32) << 32)),
        );
        match &self.truncated {
            Some((pos, msg)) => {
                w.push(1);
                put_position(&mut w, *pos);
                put_bytes(&mut w, msg.as_bytes());
            }
            None => w.push(0),
        }
        bytemuck::cast_slice(&w).to_vec()
    }

    /// Another process's share received as bytes, and how many bytes it
    /// took: to [`PiclShare::merge`] into rank 0's.
    pub fn from_bytes(b: &[u8]) -> Result<(PiclShareBytes, usize)> {
        let words: Vec<u64> = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let mut r = Words::new(&words);
        let first = r.one()? as usize;
        let n = r.count(1)?;
        let cut = r
            .take(n.checked_mul(3).ok_or_else(bad)?)?
            .chunks_exact(3)
            .map(|x| (x[0], x[1], (x[2] != u64::MAX).then_some(x[2])))
            .collect();
        let unmatched = r.one()?;
        let n = r.count(1)?;
        let kinds = r
            .take(n)?
            .iter()
            .map(|&x| (x as u32 as i32, (x >> 32) as u32 as i32))
            .collect();
        let truncated = match r.one()? {
            0 => None,
            _ => {
                let pos = r.position()?;
                Some((pos, String::from_utf8_lossy(&r.bytes()?).into_owned()))
            }
        };
        Ok((
            PiclShareBytes {
                first,
                cut,
                unmatched,
                kinds,
                truncated,
            },
            r.at * 8,
        ))
    }

    /// Adds the share of the next process (merged in rank order).
    pub fn merge(&mut self, o: PiclShareBytes) -> Result<()> {
        if o.first != self.first + self.cut.len() {
            return Err(Error::Invalid(
                "PICL shares must be merged in the order of the processes".into(),
            ));
        }
        self.cut.extend(o.cut);
        self.unmatched += o.unmatched;
        self.kinds.extend(o.kinds);
        // only the file's last stripe can end in an incomplete record
        self.truncated = self.truncated.take().or(o.truncated);
        Ok(())
    }

    /// The trace without records (locations, states, span, repairs) on
    /// rank 0, once every share is merged here and their reductions into
    /// `sink`; with the state of each key (the keys are the states).
    pub fn finish(
        self,
        sink: &dyn IntervalSink,
        opts: &ReadOptions,
    ) -> Result<(Trace, Vec<(u32, StateId)>)> {
        let path = &self.path;
        let mut b = self.builder.ok_or_else(|| {
            Error::Invalid("only the first process's PICL share can be finished".into())
        })?;
        if self.first != 0 || self.cut.len() != self.procs.len() {
            return Err(Error::Invalid(
                "a PICL share is finished before every process's is merged".into(),
            ));
        }
        if let Some((pos, msg)) = self.truncated {
            super::repair_truncated(&mut b, &DamageHandle::default(), path, true, pos, msg)?;
        }
        super::report_cut(&mut b, path, self.cut)?;
        super::report_unmatched_messages(&mut b, path, self.unmatched)?;
        super::stream::finish_streamed(b, &self.kinds, sink, opts)
    }
}

/// Another process's [`PiclShare`], as received.
pub struct PiclShareBytes {
    first: usize,
    cut: Vec<(u64, u64, Option<u64>)>,
    unmatched: u64,
    kinds: BTreeSet<(i32, i32)>,
    truncated: Option<(Position, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::gzip_index::{Checkpoint, Index, Member};

    fn index(outs: &[u64], len: u64) -> Index {
        let window: std::sync::Arc<[u8]> = vec![0u8; 1].into();
        Index {
            len,
            checkpoints: outs
                .iter()
                .map(|&out| Checkpoint {
                    bit: out * 8,
                    out,
                    window: window.clone(),
                })
                .collect(),
            members: vec![Member {
                spans: 0..outs.len(),
                crc: 0,
            }],
        }
    }

    #[test]
    fn even_stripes_are_those_of_before() {
        for (len, stripe) in [(0, 10), (1, 10), (10, 10), (11, 10), (100, 7), (5, 1)] {
            let s = Stripes::even(len, stripe);
            let count = len.div_ceil(stripe).max(1);
            assert_eq!(s.count(), count);
            for j in 0..count {
                assert_eq!(s.range(j), (j * stripe, ((j + 1) * stripe).min(len)));
            }
        }
    }

    /// A gzip file's stripes start at checkpoints, cover the file once,
    /// and hold at most a stripe unless one span alone is longer.
    #[test]
    fn a_gzip_files_stripes_start_at_its_checkpoints() {
        let outs = [0, 3, 5, 9, 20, 21, 22, 40, 41, 41, 60];
        for len in [60, 61, 100] {
            let ix = index(&outs, len);
            for stripe in [1, 2, 4, 10, 25, 1000] {
                let s = Stripes::at_checkpoints(&ix, stripe);
                let mut at = 0;
                for j in 0..s.count() {
                    let (a, b) = s.range(j);
                    assert_eq!(a, at, "{stripe}: contiguous");
                    assert!(b > a, "{stripe}: {a}..{b} empty");
                    assert!(outs.contains(&a), "{stripe}: {a} is a checkpoint");
                    // longer only where no checkpoint lies within
                    let within = outs.iter().any(|&o| o > a && o - a <= stripe);
                    assert!(b - a <= stripe || !within || b == len, "{stripe}: {a}..{b}");
                    at = b;
                }
                assert_eq!(at, len, "{stripe}: to the end");
            }
        }
        let one = Stripes::at_checkpoints(&index(&[0], 0), 4);
        assert_eq!((one.count(), one.range(0)), (1, (0, 0)));
    }
}
