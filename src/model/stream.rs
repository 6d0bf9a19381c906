//! Records handed over while a trace is read, for reductions that never
//! hold the records (`--stream`): the contract between a streaming reader
//! and what reduces.

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
    /// One point-to-point message.
    fn message(&mut self, src: LocId, dst: LocId, send: Time, recv: Time, bytes: u64);
    /// Records that are only counted (events, collectives).
    fn other_records(&mut self, n: u64);
    /// The last time met in any record.
    fn end_time(&self) -> Time;
    /// Repairs made on the way: (kind, records affected, message).
    fn repairs(&self) -> Vec<(&'static str, u64, String)>;
}
