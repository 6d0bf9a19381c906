//! Where simulated records go: trace writers, or a model in memory.

use crate::error::Result;
use crate::model::{LocId, Time};

/// The states a simulation produces (Paraver state values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimState {
    /// Computation: busy.
    Running,
    /// Waiting for a message to arrive, and receiving it: overhead.
    Waiting,
    /// Sending a message: overhead.
    Sending,
}

impl SimState {
    pub const ALL: [SimState; 3] = [SimState::Running, SimState::Waiting, SimState::Sending];

    /// The Paraver state value.
    pub fn paraver_id(self) -> u32 {
        match self {
            SimState::Running => 1,
            SimState::Waiting => 3,
            SimState::Sending => 4,
        }
    }
    /// The state's name (Paraver's standard names).
    pub fn name(self) -> &'static str {
        match self {
            SimState::Running => "Running",
            SimState::Waiting => "Waiting a message",
            SimState::Sending => "Blocking Send",
        }
    }
    /// The class category written to Chrome JSON.
    pub fn category(self) -> &'static str {
        match self {
            SimState::Running => "busy",
            _ => "overhead",
        }
    }
    pub fn color(self) -> [u8; 3] {
        match self {
            SimState::Running => [0, 0, 255],
            SimState::Waiting => [255, 0, 0],
            SimState::Sending => [255, 0, 174],
        }
    }
}

/// The marker events a simulation produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimEvent {
    /// Start of a phase of the algorithm (value: the phase number).
    Phase,
    /// Start of an iteration (value: the iteration number), at its root.
    Iteration,
}

impl SimEvent {
    pub const ALL: [SimEvent; 2] = [SimEvent::Phase, SimEvent::Iteration];
    pub fn paraver_type(self) -> u32 {
        match self {
            SimEvent::Phase => 9_000_001,
            SimEvent::Iteration => 9_000_002,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            SimEvent::Phase => "Workload phase",
            SimEvent::Iteration => "Iteration",
        }
    }
}

/// Phases named by [`SimEvent::Phase`] values.
pub const PHASES: [(i64, &str); 6] = [
    (1, "Forward elimination"),
    (2, "Back substitution"),
    (3, "Broadcast"),
    (4, "Global sum"),
    (5, "Kernel setup"),
    (6, "Kernel step"),
];

/// One simulated record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    State {
        loc: LocId,
        start: Time,
        end: Time,
        state: SimState,
    },
    Message {
        src: LocId,
        dst: LocId,
        send: Time,
        recv: Time,
        bytes: u64,
        tag: i64,
    },
    Event {
        loc: LocId,
        time: Time,
        kind: SimEvent,
        value: i64,
    },
}

impl Record {
    /// The time by which the record is ordered in a file.
    pub fn time(&self) -> Time {
        match *self {
            Record::State { start, .. } => start,
            Record::Message { send, .. } => send,
            Record::Event { time, .. } => time,
        }
    }
}

/// The shape of the simulated machine, given to a sink before any record.
#[derive(Debug, Clone)]
pub struct Layout {
    pub procs: u32,
    pub procs_per_node: u32,
    /// Free text naming the workload, kept in the file where the format allows.
    pub description: String,
    /// The hardware counters sampled ([`RecordSink::counters`]): none
    /// unless `synth --counters N`.
    pub counters: Vec<super::counters::HardwareCounter>,
}

/// Receives records in non-decreasing time order.
pub trait RecordSink {
    fn begin(&mut self, layout: &Layout) -> Result<()>;
    fn record(&mut self, r: &Record) -> Result<()>;
    /// A sample of the layout's hardware counters on `loc` at `time` (in
    /// time order with the records): one value per counter, in order. A
    /// format that holds none refuses it.
    fn counters(&mut self, loc: LocId, time: Time, values: &[i64]) -> Result<()> {
        let _ = (loc, time, values);
        Err(crate::error::Error::Invalid(
            "this trace format holds no hardware counters".into(),
        ))
    }
    /// Called once after the last record, with the end time of the run.
    fn finish(&mut self, end: Time) -> Result<()>;
}

/// Buffers records and releases them in time order once no earlier record
/// can come (the watermark: the smallest clock of all processors).
pub struct SortedSink<'a> {
    inner: &'a mut dyn RecordSink,
    buf: Vec<(Time, u64, Record)>,
    seq: u64,
    pub written: u64,
}

impl<'a> SortedSink<'a> {
    pub fn new(inner: &'a mut dyn RecordSink) -> Self {
        SortedSink {
            inner,
            buf: Vec::new(),
            seq: 0,
            written: 0,
        }
    }

    pub fn begin(&mut self, layout: &Layout) -> Result<()> {
        self.inner.begin(layout)
    }

    pub fn push(&mut self, r: Record) {
        self.seq += 1;
        self.buf.push((r.time(), self.seq, r));
    }

    /// Writes every buffered record earlier than `watermark`.
    pub fn release(&mut self, watermark: Time) -> Result<()> {
        if self.buf.len() < 4096 {
            return Ok(());
        }
        self.buf.sort_unstable_by_key(|(t, s, _)| (*t, *s));
        let cut = self.buf.partition_point(|(t, _, _)| *t < watermark);
        for (_, _, r) in self.buf.drain(..cut) {
            self.inner.record(&r)?;
            self.written += 1;
        }
        Ok(())
    }

    pub fn finish(&mut self, end: Time) -> Result<()> {
        self.buf.sort_unstable_by_key(|(t, s, _)| (*t, *s));
        for (_, _, r) in self.buf.drain(..) {
            self.inner.record(&r)?;
            self.written += 1;
        }
        self.inner.finish(end)
    }
}
