//! The trace model: columnar (struct-of-arrays), integer nanoseconds from the
//! trace start, memory proportional to the data.
//!
//! * [`Locations`]: the timelines (threads, streams, ranks) with their
//!   hierarchy of groups (machine → node → process).
//! * [`StateTable`] and [`Intervals`]: per location, sorted and
//!   non-overlapping state intervals; each state has a [`StateClass`].
//! * [`Events`]: instant events and markers (type, value).
//! * [`Messages`]: point-to-point messages.
//! * [`Counters`]: sampled counter values.
//! * [`Collectives`] and [`Communicator`]s: collective operations.
//!
//! A [`Trace`] is built with a [`TraceBuilder`], which sorts, validates and
//! repairs the raw records of a reader.

pub(crate) mod builder;
mod events;
mod intervals;
mod locations;
pub mod matching;
pub mod nearly_sorted;
mod nesting;
pub mod profile;
mod states;
pub mod stream;
pub mod volume;

pub use builder::{BuildOptions, GLOBAL, RawInterval, TraceBuilder};
pub use events::{
    CollectiveOps, Collectives, Communicator, CounterDef, Counters, EventType, EventTypes, Events,
    Messages,
};
pub use intervals::{IntervalSlice, Intervals};
pub use locations::{Group, GroupKind, Location, LocationKind, Locations};
pub use nesting::{Flattener, NestedSlice, flatten_nested, sort_nested};
pub use profile::{Procedure, ProfileMatrix, ProfileMetric, RowKind};
pub use states::{ClassOverride, MAX_TAGS, State, StateClass, StateTable};
pub use volume::{LinkSet, Volume, VolumeSet};

use serde::Serialize;

use crate::diagnostics::Diagnostics;

/// A time in integer nanoseconds from the start of the trace.
pub type Time = u64;

/// Index of a location in [`Locations`].
pub type LocId = u32;

/// Index of a state in [`StateTable`].
pub type StateId = u32;

/// The file format a trace was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    ChromeJson,
    Paraver,
    Picl,
    Otf2,
    Synthetic,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::ChromeJson => "Chrome Trace Event JSON",
            Format::Paraver => "Paraver",
            Format::Picl => "PICL (new format)",
            Format::Otf2 => "OTF2",
            Format::Synthetic => "synthetic",
        }
    }
}

/// The time unit of the source file, remembered for display and export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeUnit {
    /// Name of the unit as the format states it (`ns`, `us`, `s`, ...).
    pub name: String,
    /// Nanoseconds per unit (for seconds with decimals: 1e9).
    pub ns_per_unit: u64,
}

impl TimeUnit {
    pub fn nanoseconds() -> Self {
        TimeUnit {
            name: "ns".into(),
            ns_per_unit: 1,
        }
    }
    pub fn microseconds() -> Self {
        TimeUnit {
            name: "us".into(),
            ns_per_unit: 1_000,
        }
    }
    pub fn seconds() -> Self {
        TimeUnit {
            name: "s".into(),
            ns_per_unit: 1_000_000_000,
        }
    }
}

/// What is known about a trace beyond its records.
#[derive(Debug, Clone, Serialize)]
pub struct TraceMeta {
    pub format: Format,
    /// The file the trace was read from (empty for in-memory traces).
    pub source: std::path::PathBuf,
    /// Unit of the timestamps in the source.
    pub time_unit: TimeUnit,
    /// Absolute time (ns, in the source's clock) that became time 0.
    pub origin_ns: i64,
    /// End of the trace (ns from the start): the larger of the declared end
    /// and the last record.
    pub span: Time,
    /// Records of kinds the model does not hold, counted by kind (e.g. Chrome
    /// object snapshots); they are not errors.
    pub ignored: Vec<(String, u64)>,
    /// Repairs made while reading.
    pub diagnostics: Diagnostics,
}

/// A whole trace in memory.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    pub meta: TraceMeta,
    pub locations: Locations,
    pub states: StateTable,
    pub intervals: Intervals,
    pub event_types: EventTypes,
    pub events: Events,
    pub messages: Messages,
    pub counters: Counters,
    pub collectives: Collectives,
    pub communicators: Vec<Communicator>,
}

impl Trace {
    /// Number of locations (timelines).
    pub fn num_locations(&self) -> usize {
        self.locations.len()
    }

    /// Applies a busy/overhead/idle override to the state table.
    pub fn reclassify(&mut self, over: &ClassOverride) -> crate::Result<()> {
        self.states.reclassify(over)
    }
}
