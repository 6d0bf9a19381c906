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
mod event_block;
mod events;
mod heap;
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
pub use nesting::{
    Flattener, NestedOrder, NestedSlice, flatten_nested, in_nested_order, nested_order_span,
    sort_nested,
};
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

    /// Bytes the model holds on the heap: every column, table and name
    /// (allocated, not only used), the metadata's warnings included.
    pub fn heap_bytes(&self) -> usize {
        let meta = &self.meta;
        let ignored = heap::vec(&meta.ignored)
            + meta
                .ignored
                .iter()
                .map(|(s, _)| s.capacity())
                .sum::<usize>();
        let warnings = heap::vec(&meta.diagnostics.warnings)
            + meta
                .diagnostics
                .warnings
                .iter()
                .map(|w| w.message.capacity() + w.file.capacity())
                .sum::<usize>();
        let communicators = heap::vec(&self.communicators)
            + self
                .communicators
                .iter()
                .map(|c| c.name.capacity() + heap::vec(&c.members))
                .sum::<usize>();
        meta.source.capacity()
            + ignored
            + warnings
            + self.locations.heap_bytes()
            + self.states.heap_bytes()
            + self.intervals.heap_bytes()
            + self.event_types.heap_bytes()
            + self.events.heap_bytes()
            + self.messages.heap_bytes()
            + self.counters.heap_bytes()
            + self.collectives.heap_bytes()
            + communicators
    }

    /// Applies a busy/overhead/idle override to the state table.
    pub fn reclassify(&mut self, over: &ClassOverride) -> crate::Result<()> {
        self.states.reclassify(over)
    }
}

/// `v` cut at `at` (`at[i]..at[i + 1]` is part `i`; `at` rises from 0 to
/// the length of `v`): parts to fill or sort side by side.
pub(crate) fn split_at_bounds<'a, T>(v: &'a mut [T], at: &[usize]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(at.len().saturating_sub(1));
    let mut rest = v;
    for w in at.windows(2) {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        out.push(part);
        rest = tail;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of `n` threads named at length `name_len`, each with 10
    /// intervals and a message.
    fn model(n: u32, name_len: usize) -> Trace {
        let mut b = TraceBuilder::new(Format::Synthetic, "", TimeUnit::nanoseconds(), false);
        let run = b.states.add("run", StateClass::Busy, None, 0);
        let locs: Vec<LocId> = (0..n)
            .map(|i| {
                let name = format!("{i:0name_len$}");
                b.locations
                    .add(name, LocationKind::Thread, None, i64::from(i))
            })
            .collect();
        for (i, &l) in locs.iter().enumerate() {
            for k in 0..10 {
                b.interval(l, 10 * k, 10 * k + 5, run);
            }
            b.message(l, locs[(i + 1) % locs.len()], 1, 2, 8, 0);
        }
        b.finish(BuildOptions::default()).unwrap()
    }

    /// The model's heap bytes hold its records' columns (20 bytes an
    /// interval, 40 a message at least) and grow with what its locations'
    /// names take.
    #[test]
    fn heap_bytes_count_records_and_names() {
        let short = model(1000, 4);
        let records = 1000 * 10 * 20 + 1000 * 40;
        assert!(short.heap_bytes() >= records, "{}", short.heap_bytes());
        // intervals' offsets, locations and their names, the state table:
        // beyond the records, but not by much more than a few hundred bytes
        // a location
        assert!(
            short.heap_bytes() < records + 1000 * 200,
            "{}",
            short.heap_bytes()
        );
        let long = model(1000, 200);
        assert!(
            long.heap_bytes() >= short.heap_bytes() + 1000 * 196,
            "{} {}",
            long.heap_bytes(),
            short.heap_bytes()
        );
    }
}
