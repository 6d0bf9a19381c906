//! PICL traces reduced while they are read (`--stream`): each processor's
//! records are cut into states as they come (`super::cut`), exactly as
//! the in-memory reader cuts them, and the intervals and matched messages
//! handed to the reductions block by block.
//!
//! A PICL file declares neither its processors nor its end, which the
//! reductions need first: a first pass reads both (a parse without
//! keeping the records), the second streams. A stream needs each
//! processor's records in time order and its trace start, when it has one,
//! first (the in-memory reader then reads holding every record: it sorts,
//! and leaves records before the start outside busy); it says so and stops
//! otherwise.

use std::collections::BTreeSet;
use std::path::Path;

use super::cut::{Ctx, Key, Matcher, Proc, Refusal};
use super::{Chunk, parse_block, survey_block};
use crate::diagnostics::Position;
use crate::error::{Error, Result};
use crate::model::stream::{Counted, IntervalSink};
use crate::model::{Format, LocationKind, StateId, Time, TimeUnit, Trace, TraceBuilder};
use crate::readers::ReadOptions;
use crate::readers::input::{self, LineBlocks};

/// What a stream cannot cut, as an error at its line.
pub(super) fn refused(path: &Path, r: Refusal) -> Error {
    Error::parse(
        path,
        Position::line(r.seq),
        format!("{} (read without --stream)", r.why),
    )
}

/// Hands the matched messages over to `sink`.
fn hand_over(
    matched: &mut Vec<(Key, u64, u64, u64)>,
    procs: &[u32],
    state: &[Proc],
    sink: &mut dyn IntervalSink,
    path: &Path,
) -> Result<()> {
    for &((s, d, _), st, rt, bytes) in matched.iter() {
        if let (Ok(s), Ok(d)) = (procs.binary_search(&s), procs.binary_search(&d)) {
            sink.message(state[s].loc, state[d].loc, st, rt, bytes)
                .map_err(|e| Error::parse(path, Position::none(), e))?;
        }
    }
    matched.clear();
    Ok(())
}

/// Streams the PICL trace at `path` into `sink`: the trace without records
/// (locations, states, span, repairs) and the state of each key the sink
/// saw (the keys are the states).
pub fn stream(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn IntervalSink,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    // first pass: the processors and the last time
    let mut procs: Vec<u32> = Vec::new();
    let mut max_time: i64 = 0;
    {
        let mut blocks = LineBlocks::new(input::open(path)?);
        blocks.for_each_parallel(survey_block, |_, s| {
            if let Some((pos, msg)) = s.error {
                return Err(Error::parse(path, pos, msg));
            }
            procs.extend(s.procs);
            max_time = max_time.max(s.max_time);
            Ok(())
        })?;
    }
    procs.sort_unstable();
    procs.dedup();
    if procs.is_empty() {
        return Err(Error::parse(
            path,
            Position::line(1),
            "expected PICL records, found none",
        ));
    }
    let mut b = TraceBuilder::new(Format::Picl, path, TimeUnit::seconds(), opts.strict);
    let mut state: Vec<Proc> = Vec::with_capacity(procs.len());
    for &p in &procs {
        let id = b
            .locations
            .add(format!("proc {p}"), LocationKind::Thread, None, p as i64);
        state.push(Proc::new(id, p));
    }
    let st = super::add_states(&mut b);
    sink.begin(procs.len(), max_time.max(0) as Time)?;
    let mut c = Ctx::new([st.busy, st.send, st.recv], false);
    let mut m = Matcher::default();
    // second pass: every record, in file order per processor
    let mut blocks = LineBlocks::new(input::open(path)?);
    let damage = blocks.damage_handle();
    {
        let b = &mut b;
        let c = &mut c;
        let m = &mut m;
        let state = &mut state;
        let procs = &procs;
        blocks.for_each_parallel(parse_block, |_blk, chunk: Chunk| {
            if let Some((pos, msg)) = chunk.error {
                super::repair_truncated(b, &damage, path, chunk.truncated, pos, msg)?;
            }
            for run in chunk.recs.chunk_by(|a, b| a.proc_ == b.proc_) {
                let Ok(i) = procs.binary_search(&run[0].proc_) else {
                    return Err(Error::Invalid(format!(
                        "{}: the file changed while it was read (processor {} is new)",
                        path.display(),
                        run[0].proc_
                    )));
                };
                for r in run {
                    state[i].take(r, c).map_err(|e| refused(path, e))?;
                }
            }
            sink.intervals(&c.out)
                .map_err(|e| Error::parse(path, Position::none(), e))?;
            c.out.clear();
            m.apply(&mut c.ops);
            hand_over(&mut m.matched, procs, state, sink, path)
        })?;
    }
    damage.report(&mut b.diagnostics, path, "records")?;
    for p in &mut state {
        p.finish(&mut c).map_err(|e| refused(path, e))?;
    }
    sink.intervals(&c.out)
        .map_err(|e| Error::parse(path, Position::none(), e))?;
    c.out.clear();

    super::report_cut(&mut b, path, state.iter().map(|p| p.faults()))?;
    m.apply(&mut c.ops);
    hand_over(&mut m.matched, &procs, &state, sink, path)?;
    super::report_unmatched_messages(&mut b, path, m.unmatched())?;
    sink.counted(Counted::Events, c.events, c.last_event);
    finish_streamed(b, &c.kinds, sink, opts)
}

/// The trace without records of a stream (or of `reduce`'s merged
/// shares) whose other records were of `kinds` and whose reductions are
/// in `sink`; with the state of each key (the keys are the states).
pub(super) fn finish_streamed(
    mut b: TraceBuilder,
    kinds: &BTreeSet<(i32, i32)>,
    sink: &dyn IntervalSink,
    opts: &ReadOptions,
) -> Result<(Trace, Vec<(u32, StateId)>)> {
    for &(rt, e) in kinds {
        b.event_types.intern(&super::kind_name(rt, e));
    }
    b.set_declared_end(sink.end_time());
    crate::readers::finish_stream_skeleton(b, opts)
}
