//! `analyze TRACE moments|field|comm-matrix|summary --stream` and `info
//! --stream`: reductions made while reading; `mpirun -n N tapestry reduce
//! TRACE moments|field|comm-matrix|summary`: the same, each process reading
//! a share of the file, merged by rank 0.

use anyhow::{Result, anyhow, bail};
use tapestry::analysis::stream::{StreamReducer, StreamSpec};
use tapestry::model::Format;

use super::{Analysis, AnalyzeArgs, Output, field_layout, field_output, moments_output};
use crate::cli::parse::parse_window;

/// The processes reading one trace together (one without MPI).
struct World {
    rank: u64,
    size: u64,
    #[cfg(feature = "mpi")]
    universe: Option<mpi::environment::Universe>,
}

impl World {
    fn single() -> World {
        World {
            rank: 0,
            size: 1,
            #[cfg(feature = "mpi")]
            universe: None,
        }
    }

    /// The MPI world this process was started in (`mpirun`), or this
    /// process alone.
    fn join() -> Result<World> {
        #[cfg(feature = "mpi")]
        {
            use mpi::traits::Communicator;
            let u = mpi::initialize().ok_or_else(|| anyhow!("MPI could not be initialised"))?;
            let w = u.world();
            Ok(World {
                rank: w.rank() as u64,
                size: w.size() as u64,
                universe: Some(u),
            })
        }
        #[cfg(not(feature = "mpi"))]
        {
            let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"]
                .iter()
                .filter_map(|v| std::env::var(v).ok()?.parse::<u64>().ok())
                .any(|n| n > 1);
            if launched {
                return Err(anyhow!(
                    "this tapestry was built without MPI: build it with `cargo build --release \
                     --features mpi` (Debian: libopenmpi-dev) to reduce across processes"
                ));
            }
            Ok(World::single())
        }
    }

    /// Whether any process failed (every process must call it).
    fn any_failed(&self, failed: bool) -> bool {
        #[cfg(feature = "mpi")]
        if let Some(u) = &self.universe {
            use mpi::collective::SystemOperation;
            use mpi::traits::CommunicatorCollectives;
            let mut any = 0i32;
            u.world()
                .all_reduce_into(&i32::from(failed), &mut any, SystemOperation::max());
            return any != 0;
        }
        failed
    }

    /// Sends `bytes` to rank `to`.
    fn send_to(&self, to: u64, bytes: &[u8]) -> Result<()> {
        #[cfg(feature = "mpi")]
        if let Some(u) = &self.universe {
            use mpi::traits::{Communicator, Destination};
            if bytes.len() > i32::MAX as usize {
                bail!("a share's reductions exceed 2 GiB; use fewer --bins or more processes");
            }
            u.world().process_at_rank(to as i32).send(bytes);
            return Ok(());
        }
        let _ = (to, bytes);
        Err(anyhow!("no other process to send to"))
    }

    /// What rank `r` sent.
    fn receive_from(&self, r: u64) -> Result<Vec<u8>> {
        #[cfg(feature = "mpi")]
        if let Some(u) = &self.universe {
            use mpi::traits::{Communicator, Source};
            let (v, _) = u.world().process_at_rank(r as i32).receive_vec::<u8>();
            return Ok(v);
        }
        Err(anyhow!("no process {r} to receive from"))
    }

    /// Merges every process's `state` into rank 0's along a binomial tree,
    /// in rank order. In round k = 1, 2, 4, … a rank r with r mod 2k = k
    /// sends what it holds (its share and those it merged) to r − k and is
    /// done; a rank with r mod 2k = 0 receives from r + k, when there is
    /// one, and merges that after its own: shares [r, r + k) then
    /// [r + k, r + 2k), the order of a merge one by one. Rank 0 merges
    /// log2 N times instead of N − 1, and the merges of a round run at the
    /// same time. True on rank 0, which then holds everything.
    fn merge_tree<S>(
        &self,
        state: &mut S,
        to_bytes: impl Fn(&S) -> Vec<u8>,
        merge: impl Fn(&mut S, &[u8]) -> Result<()>,
    ) -> Result<bool> {
        let mut k = 1u64;
        while k < self.size {
            if self.rank % (2 * k) == k {
                self.send_to(self.rank - k, &to_bytes(state))?;
                return Ok(false);
            }
            if self.rank + k < self.size {
                merge(state, &self.receive_from(self.rank + k)?)?;
            }
            k *= 2;
        }
        Ok(self.rank == 0)
    }
}

impl tapestry::readers::exchange::Exchange for World {
    fn rank(&self) -> usize {
        self.rank as usize
    }

    fn size(&self) -> usize {
        self.size as usize
    }

    fn all_to_all(
        &mut self,
        words: &[u64],
        counts: &[usize],
    ) -> tapestry::Result<(Vec<u64>, Vec<usize>)> {
        #[cfg(feature = "mpi")]
        if let Some(u) = &self.universe {
            use mpi::datatype::{Partition, PartitionMut};
            use mpi::traits::CommunicatorCollectives;
            let w = u.world();
            let too_big = || {
                tapestry::Error::Invalid(
                    "a process's exchange exceeds 16 GiB; use more processes".into(),
                )
            };
            // MPI's counts and offsets are 32-bit: every process learns
            // together that what one sends or receives would not fit
            let max = i32::MAX as usize;
            let counts: Vec<i32> = counts.iter().map(|&c| c.min(max) as i32).collect();
            if self.any_failed(words.len() > max) {
                return Err(too_big());
            }
            let mut got = vec![0i32; counts.len()];
            w.all_to_all_into(&counts[..], &mut got[..]);
            let received: usize = got.iter().map(|&c| c.max(0) as usize).sum();
            if self.any_failed(received > max) {
                return Err(too_big());
            }
            let offsets = |c: &[i32]| -> Vec<i32> {
                c.iter()
                    .scan(0i32, |at, &x| {
                        let o = *at;
                        *at += x.max(0);
                        Some(o)
                    })
                    .collect()
            };
            let (sd, rd) = (offsets(&counts), offsets(&got));
            let mut recv = vec![0u64; received];
            {
                let p = Partition::new(words, &counts[..], &sd[..]);
                let mut q = PartitionMut::new(&mut recv[..], &got[..], &rd[..]);
                w.all_to_all_varcount_into(&p, &mut q);
            }
            return Ok((recv, got.iter().map(|&c| c.max(0) as usize).collect()));
        }
        // this process alone
        Ok((words.to_vec(), counts.to_vec()))
    }
}

/// Stops every process when one failed: the error of this one, or that
/// another one failed (every process must call it).
fn all_succeed<T>(world: &World, share: tapestry::Result<T>) -> Result<T> {
    if world.size > 1
        && let Err(e) = &share
    {
        // said now: once one process exits, mpirun stops the others
        eprintln!("error: {e}");
    }
    if world.any_failed(share.is_err()) {
        if world.size > 1 && share.is_err() {
            return Err(anyhow::Error::new(crate::cli::Reported));
        }
        share?;
        bail!(
            "process {} stops: another process failed reading its share (its error is above)",
            world.rank
        );
    }
    Ok(share?)
}

type Merged = Option<(tapestry::model::Trace, Vec<(u32, tapestry::model::StateId)>)>;

/// A Paraver trace: process k reads the k-th of N byte ranges of the
/// records; rank 0 merges and gets the trace without records.
fn reduce_paraver(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
    r: &mut StreamReducer,
    world: &mut World,
) -> Result<Merged> {
    // what the shares are read from: the file, or a gzip file's bytes
    // through the index the processes build together (none: the file is
    // refused as before)
    let src = match world.size > 1 {
        true => {
            let compressed = tapestry::readers::input::is_gzip(path);
            let compressed = all_succeed(world, compressed)?;
            let src = tapestry::readers::gzip_index::shared_source(path, compressed, world, None);
            all_succeed(world, src)?
        }
        false => None,
    };
    let share = tapestry::readers::paraver::stream_share(
        path,
        opts,
        r,
        (world.rank, world.size),
        src.clone(),
    );
    let (seen, skeleton) = all_succeed(world, share)?;
    // a gzip file's bytes, each span decoded whole by one process or
    // another, against its trailer's CRC-32
    if let Some(src) = &src {
        said_once(tapestry::readers::gzip_index::check_read_shared(
            path,
            src.as_ref(),
            world,
        ))?;
    }
    if world.rank != 0 {
        for w in &seen.diagnostics.warnings {
            eprintln!("warning (process {}): {w}", world.rank);
        }
    }
    let Some((seen, r)) = merge_shares(world, seen, r)? else {
        return Ok(None);
    };
    Ok(Some(tapestry::readers::paraver::stream_skeleton(
        skeleton, opts, &seen, r,
    )?))
}

/// A share read with the other processes, whose exchanges carry their
/// failures: the error said by the process that met it (now: once one
/// process exits, mpirun stops the others), the others stop quietly.
fn said_once<T>(share: tapestry::Result<T>) -> Result<T> {
    match share {
        Ok(s) => Ok(s),
        Err(tapestry::Error::OtherProcess) => Err(anyhow::Error::new(crate::cli::Reported)),
        Err(e) => {
            eprintln!("error: {e}");
            Err(anyhow::Error::new(crate::cli::Reported))
        }
    }
}

/// A PICL trace: the file in stripes dealt to the processes in turn, each
/// record sent to the process that cuts its processor
/// ([`tapestry::readers::picl::share`]); rank 0 merges and gets the trace
/// without records.
fn reduce_picl(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
    r: &mut StreamReducer,
    world: &mut World,
) -> Result<Merged> {
    use tapestry::readers::picl::share::{read_share, stripe_for};
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let stripe = stripe_for(len, world.size as usize, rayon::current_num_threads());
    let share = said_once(read_share(path, opts, r, world, stripe))?;
    let Some((share, r)) = merge_shares(world, share, r)? else {
        return Ok(None);
    };
    Ok(Some(share.finish(r, opts)?))
}

/// A Chrome trace: every process splits its share of the file (a gzip
/// file's through the index they build together) into its events and
/// parses the stripes of events dealt to it in turn, each slice sent to
/// the process that owns its thread and each flow step to the one that
/// owns its id ([`tapestry::readers::chrome::share`]); rank 0 merges and
/// gets the trace without records.
fn reduce_chrome(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
    r: &mut StreamReducer,
    world: &mut World,
) -> Result<Merged> {
    use tapestry::readers::chrome::share::{read_share, stripe_for};
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let stripe = stripe_for(len, world.size as usize);
    let share = said_once(read_share(path, opts, r, world, stripe))?;
    let Some(((), r)) = merge_shares(world, (), r)? else {
        return Ok(None);
    };
    Ok(Some(share.finish(r, opts)?))
}

/// An OTF2 archive: process k reads the k-th of N runs of locations (about
/// equal event bytes); rank 0 merges, matches the messages and gets the
/// trace without records.
fn reduce_otf2(
    path: &std::path::Path,
    opts: &tapestry::readers::ReadOptions,
    r: &mut StreamReducer,
    world: &World,
) -> Result<Merged> {
    use tapestry::readers::otf2::stream::Otf2Stream;
    let opened = Otf2Stream::open(path, opts);
    let stream = all_succeed(world, opened)?;
    let share = stream.read_share(r, world.rank, world.size);
    let share = all_succeed(world, share)?;
    let Some((share, r)) = merge_shares(world, share, r)? else {
        return Ok(None);
    };
    Ok(Some(stream.finish(share, r, opts)?))
}

/// What a process's share holds besides its reductions (what the reader
/// needs to finish the trace on rank 0), sent ahead of them along the
/// merge tree.
trait Share {
    /// As bytes.
    fn put(&self) -> Vec<u8>;
    /// Merges the share at the front of `b` (the next in rank order) into
    /// this one; the bytes it took.
    fn take(&mut self, b: &[u8]) -> Result<usize>;
}

/// Chrome: every process already holds what rank 0 needs.
impl Share for () {
    fn put(&self) -> Vec<u8> {
        Vec::new()
    }
    fn take(&mut self, _: &[u8]) -> Result<usize> {
        Ok(0)
    }
}

impl Share for tapestry::readers::paraver::ShareSeen {
    fn put(&self) -> Vec<u8> {
        seen_bytes(self)
    }
    fn take(&mut self, b: &[u8]) -> Result<usize> {
        let (s, used) = seen_from(b)?;
        self.merge(s);
        Ok(used)
    }
}

/// [`Share`] for a reader's share that says itself as bytes (`to_bytes`,
/// `from_bytes`) and merges another (`merge`).
macro_rules! share_through_bytes {
    ($($(#[$m:meta])* $t:ty),* $(,)?) => {$(
        $(#[$m])*
        impl Share for $t {
            fn put(&self) -> Vec<u8> {
                self.to_bytes()
            }
            fn take(&mut self, b: &[u8]) -> Result<usize> {
                let (s, used) = Self::from_bytes(b)?;
                self.merge(s)?;
                Ok(used)
            }
        }
    )*};
}

share_through_bytes!(
    tapestry::readers::picl::share::PiclShare,
    tapestry::readers::otf2::stream::Otf2Share,
);

/// Every process's share and reductions merged into rank 0's along the
/// tree ([`World::merge_tree`]): rank 0 gets them back, the others `None`.
fn merge_shares<'r, 'a, S: Share>(
    world: &World,
    share: S,
    r: &'r mut StreamReducer<'a>,
) -> Result<Option<(S, &'r mut StreamReducer<'a>)>> {
    let mut state = (share, r);
    let root = world.merge_tree(
        &mut state,
        |(share, r)| {
            let mut bytes = share.put();
            r.write_bytes(&mut bytes);
            bytes
        },
        |(share, r), bytes| {
            let used = share.take(bytes)?;
            let rest = bytes
                .get(used..)
                .ok_or_else(|| anyhow!("damaged share received"))?;
            r.merge_bytes(rest)?;
            Ok(())
        },
    )?;
    Ok(root.then_some(state))
}

/// The state values and event types a share saw, as bytes.
fn seen_bytes(seen: &tapestry::readers::paraver::ShareSeen) -> Vec<u8> {
    let mut w = Vec::new();
    for list in [&seen.state_values, &seen.event_types] {
        w.extend_from_slice(&(list.len() as u64).to_le_bytes());
        for v in list {
            w.extend_from_slice(&v.to_le_bytes());
        }
    }
    w
}

fn seen_from(b: &[u8]) -> Result<(tapestry::readers::paraver::ShareSeen, usize)> {
    let bad = || anyhow!("damaged share description received");
    let mut at = 0usize;
    let mut lists = Vec::new();
    for _ in 0..2 {
        let n = u64::from_le_bytes(b.get(at..at + 8).ok_or_else(bad)?.try_into()?) as usize;
        at += 8;
        let bytes = n.checked_mul(4).ok_or_else(bad)?;
        let raw = b.get(at..at + bytes).ok_or_else(bad)?;
        at += bytes;
        lists.push(
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<u32>>(),
        );
    }
    let event_types = lists.pop().unwrap_or_default();
    let state_values = lists.pop().unwrap_or_default();
    Ok((
        tapestry::readers::paraver::ShareSeen {
            state_values,
            event_types,
            diagnostics: Default::default(),
        },
        at,
    ))
}

/// What the processes of a stream reduced, merged on rank 0: the reducer,
/// the trace without records (locations, states, span, warnings) and the
/// state id of each Paraver state value.
pub(crate) struct Reduced<'a> {
    pub r: StreamReducer<'a>,
    pub t: tapestry::model::Trace,
    pub keys: Vec<(u32, tapestry::model::StateId)>,
    pub processes: u64,
}

/// Streams `trace` (Paraver) through a reducer of `spec` over `window`:
/// in this process, or with `distributed` in every process of the MPI
/// world, each reading a share. The merged reductions on rank 0, `None` on
/// the others. With `needs_window`, records past the declared end are
/// refused when no window is given (the default window is that end).
pub(crate) fn reduce<'a>(
    path: &std::path::Path,
    read: &crate::cli::ReadArgs,
    window: Option<String>,
    spec: StreamSpec,
    distributed: bool,
    needs_window: bool,
) -> Result<Option<Reduced<'a>>> {
    if window.as_deref().is_some_and(|w| w.starts_with("phase")) {
        bail!("--stream cannot find phases (they need the events in memory); give --window T0:T1");
    }
    if let Some(what) = tapestry::readers::non_trace_kind(path) {
        bail!(
            "--stream reduces traces (Paraver, OTF2, PICL, Chrome JSON); {} is {what}, which \
             has no records in time: read it without --stream",
            path.display()
        );
    }
    let format = tapestry::readers::detect(path)?;
    if !matches!(
        format,
        Format::Paraver | Format::Otf2 | Format::Picl | Format::ChromeJson
    ) {
        bail!(
            "--stream reads Paraver traces, OTF2 archives, PICL traces and Chrome JSON; {} is {} \
             (read it without --stream, or convert it once with `tapestry convert` and reopen \
             the cache)",
            path.display(),
            format.name()
        );
    }
    let given = window.is_some();
    let mut r = StreamReducer::new(
        spec,
        Box::new(move |span| {
            parse_window(window.as_deref(), span)
                .map_err(|e| tapestry::Error::Invalid(format!("{e:#}")))
        }),
    );
    let mut world = if distributed {
        World::join()?
    } else {
        World::single()
    };
    let opts = read.options();
    let merged = match format {
        Format::ChromeJson if world.size > 1 => reduce_chrome(path, &opts, &mut r, &mut world)?,
        Format::ChromeJson => Some(tapestry::readers::chrome::stream::stream(
            path, &opts, &mut r,
        )?),
        Format::Otf2 => reduce_otf2(path, &opts, &mut r, &world)?,
        Format::Picl if world.size > 1 => reduce_picl(path, &opts, &mut r, &mut world)?,
        Format::Picl => Some(tapestry::readers::picl::stream::stream(
            path, &opts, &mut r,
        )?),
        _ => reduce_paraver(path, &opts, &mut r, &mut world)?,
    };
    let Some((t, keys)) = merged else {
        return Ok(None);
    };
    for w in &t.meta.diagnostics.warnings {
        eprintln!("warning: {w}");
    }
    let (_, t1) = r.window();
    if needs_window && !given && t1 != t.meta.span.max(1) {
        bail!(
            "records end at {} ns, after the end the trace declares ({t1} ns): the default \
             window cannot be known before reading; give --window 0:{} or read without --stream",
            t.meta.span,
            t.meta.span
        );
    }
    let (iv, msgs, other) = r.records();
    eprintln!(
        "streamed {iv} state intervals, {msgs} messages and {other} other records{}; kept {} locations × {} states; peak memory {:.1} MiB{}",
        if world.size > 1 {
            format!(" in {} processes", world.size)
        } else {
            String::new()
        },
        t.num_locations(),
        keys.len(),
        crate::cli::peak_rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64,
        if world.size > 1 { " (rank 0)" } else { "" }
    );
    Ok(Some(Reduced {
        r,
        t,
        keys,
        processes: world.size,
    }))
}

/// `analyze --stream` (one process) or `reduce` (every process of the MPI
/// world reads a share); the result on rank 0, `None` on the others.
pub(super) fn run(a: &AnalyzeArgs, distributed: bool) -> Result<Option<Output>> {
    let spec = match a.analysis {
        Analysis::Moments | Analysis::Summary => StreamSpec::default(),
        Analysis::Field if a.quantity == "busy" => StreamSpec {
            bins: Some(a.bins),
            comm: false,
        },
        Analysis::Field => bail!(
            "--stream reduces the busy field only, not '{}' (read without --stream)",
            a.quantity
        ),
        Analysis::CommMatrix => {
            // the level and quantity checked before reading
            super::comm_args(a)?;
            StreamSpec {
                bins: None,
                comm: true,
            }
        }
        _ => bail!(
            "--stream reduces moments, the busy field, the communication matrix and the \
             summary; this analysis needs the trace in memory (read without --stream)"
        ),
    };
    let summary = a.analysis == Analysis::Summary;
    let Some(Reduced {
        r,
        t,
        keys,
        processes,
    }) = reduce(
        &a.trace,
        &a.read,
        a.window.clone(),
        spec,
        distributed,
        !summary,
    )?
    else {
        return Ok(None);
    };
    let compute = compute_label(processes);
    Ok(Some(match a.analysis {
        Analysis::Summary => super::summary_output(&summary_of(&r, &t, &keys), &t),
        Analysis::CommMatrix => {
            let (level, q) = super::comm_args(a)?;
            super::comm_output(&r.comm_matrix(&t, level)?, q)?
        }
        Analysis::Field => {
            let mask = t.states.select(&a.states)?;
            let mut f = r.busy_field(&mask, &keys)?;
            // the accumulators (locations × states × bins) go before the
            // output is made: the peak holds them or the field, not both
            // beside the output
            drop(r);
            super::name_busy_field(&mut f, &a.states);
            field_output(field_layout(&a.field_layout)?, f, &compute)?
        }
        _ => {
            let mask = t.states.select(&a.states)?;
            let m = r.moments(&mask, &keys);
            moments_output(a, &t, &m, r.window(), &compute)
        }
    }))
}

/// Why the trace at `path` is streamed without `--stream`: when reading it
/// in memory would take more than half of what this process may use
/// ([`tapestry::memory::limit`]); `None` to read it in memory.
pub(crate) fn auto(path: &std::path::Path, read: &crate::cli::ReadArgs) -> Option<String> {
    if read.cache {
        return None;
    }
    let need = tapestry::readers::in_memory_estimate(path)?;
    let limit = tapestry::memory::limit();
    (need > limit / 2).then(|| {
        format!(
            "{} would take about {} in memory, more than half of the {} this process may use \
             (TAPESTRY_MEMORY_LIMIT, or the machine's memory): reduced while reading, as with \
             --stream (--no-stream reads it in memory)",
            path.display(),
            tapestry::memory::human(need),
            tapestry::memory::human(limit)
        )
    })
}

/// What an error of a stream chosen by [`auto`] says first.
pub(crate) const AUTO_CONTEXT: &str =
    "reading the trace as a stream (chosen automatically; --no-stream reads it in memory)";

/// The `info` summary of a streamed trace.
pub(crate) fn summary_of(
    r: &StreamReducer,
    t: &tapestry::model::Trace,
    keys: &[(u32, tapestry::model::StateId)],
) -> tapestry::analysis::summary::Summary {
    let per_loc = r.state_time_per_location(keys, t.states.len());
    tapestry::analysis::summary::summarize_from(t, &per_loc, r.totals())
}

fn compute_label(processes: u64) -> String {
    if processes > 1 {
        format!("cpu (stream, {processes} MPI processes)")
    } else {
        "cpu (stream)".into()
    }
}
