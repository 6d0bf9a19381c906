//! Records handed over while a trace is read, for reductions that never
//! hold the records (`--stream`): the contract between a streaming reader
//! and what reduces.

use super::builder::RawInterval;
use super::matching::Tally;
use super::{LocId, Time};

/// Receives the records of a trace as they are read, in file order.
pub trait IntervalSink {
    /// Before any record: the number of locations and the end of the trace
    /// the file declares (ns; 0 when it declares none).
    fn begin(&mut self, locations: usize, declared_end: Time) -> crate::Result<()>;
    /// One state record `[start, end)` of location `loc` in state `key`
    /// (the format's own state value). An error stops the read; the reader
    /// gives it the file.
    fn interval(&mut self, loc: LocId, start: Time, end: Time, key: u32) -> Result<(), String>;
    /// A block of state records in file order (`state` is the format's
    /// state value): by default [`IntervalSink::interval`] for each.
    fn intervals(&mut self, batch: &[RawInterval]) -> Result<(), String> {
        for r in batch {
            self.interval(r.loc, r.start, r.end, r.state)?;
        }
        Ok(())
    }
    /// One point-to-point message. An error stops the read.
    fn message(
        &mut self,
        src: LocId,
        dst: LocId,
        send: Time,
        recv: Time,
        bytes: u64,
    ) -> Result<(), String>;
    /// The messages of one sender–receiver pair counted by a stream that
    /// matches sends with receives itself (OTF2): as many calls to
    /// [`IntervalSink::message`] would add.
    fn messages(&mut self, src: LocId, dst: LocId, tally: &Tally) -> Result<(), String>;
    /// The window reduced over (after [`IntervalSink::begin`]).
    fn window(&self) -> (Time, Time);
    /// `n` records of a kind that is only counted, the latest of them at
    /// `last` (ns; communicators have no time: 0).
    fn counted(&mut self, what: Counted, n: u64, last: Time);
    /// The last time met in any record.
    fn end_time(&self) -> Time;
    /// State intervals clipped where they overlapped an earlier interval of
    /// their location: how many, and the lowest location with one and the
    /// time of its first (as the in-memory builder reports them).
    fn overlaps(&self) -> (u64, Option<(LocId, Time)>);
}

/// Records a stream counts without reducing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Events (one per type:value pair).
    Events,
    /// Participations in collective operations.
    Collectives,
    /// Communicator definitions.
    Communicators,
    /// Samples of counters (metrics).
    CounterSamples,
}
