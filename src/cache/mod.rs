//! The columnar trace cache: a trace model written as Arrow IPC files in a
//! directory (`tapestry convert TRACE -o trace.tapestry/`), reopened
//! memory-mapped with no parsing, and readable by pandas, polars, DuckDB or
//! anything else that reads Arrow.
//!
//! | file | rows | columns |
//! |---|---|---|
//! | `tapestry.json` | — | format, source (with its size and mtime), time unit, origin, span, repairs, row counts |
//! | `groups.arrow` | hierarchy nodes | `name`, `kind`, `parent` (nullable) |
//! | `locations.arrow` | timelines | `name`, `kind`, `group` (nullable), `external_id` |
//! | `states.arrow` | states | `name`, `class`, `red`, `green`, `blue`, `external_id`, `tags` (list) |
//! | `intervals.arrow` | state intervals | `location`, `start_ns`, `end_ns`, `state` |
//! | `event_types.arrow` | event types | `external_id`, `name` |
//! | `event_values.arrow` | named values | `type`, `value`, `name` |
//! | `events.arrow` | instant events | `location` (null: global), `time_ns`, `type`, `value` |
//! | `messages.arrow` | messages | `sender`, `receiver`, `send_ns`, `recv_ns`, `bytes`, `tag` |
//! | `counter_defs.arrow` | counters | `name`, `unit` |
//! | `counters.arrow` | samples | `location`, `counter`, `time_ns`, `value` |
//! | `collective_ops.arrow` | operation names | `name` |
//! | `collectives.arrow` | collective calls | `location`, `begin_ns`, `end_ns`, `communicator`, `op`, `sent`, `received`, `root` |
//! | `communicators.arrow` | communicators | `id`, `name`, `members` (list) |
//!
//! Row order is the model's: intervals, events and counters by location
//! then time, messages by send time. Times are integer nanoseconds from the
//! trace's start. Everything read back is checked against the model's
//! invariants (ids in range, intervals sorted and disjoint), so a damaged
//! or hand-edited cache is refused with the file and the row, never
//! trusted.

mod read;
mod write;

pub use read::{is_cache, read};
pub use write::{write, write_transient};

use std::path::{Path, PathBuf};

use crate::diagnostics::{Position, Warning};
use crate::error::Result;
use crate::model::ClassOverride;
use crate::readers::{Loaded, ReadOptions};

use serde::{Deserialize, Serialize};

/// The file that marks a directory as a tapestry cache.
pub const META_FILE: &str = "tapestry.json";

/// Version of the layout; a cache of another version is refused.
pub const VERSION: u32 = 1;

/// Rows per record batch of the large tables.
pub(crate) const BATCH_ROWS: usize = 1 << 22;

/// `tapestry.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CacheMeta {
    pub tapestry_cache: u32,
    pub format: String,
    pub source: String,
    /// Size and modification time of the source when converted (for
    /// `--cache` invalidation); the OTF2 archive's or directory's total.
    pub source_bytes: u64,
    pub source_mtime_ns: Option<i128>,
    pub time_unit: String,
    pub ns_per_unit: u64,
    pub origin_ns: i64,
    pub span_ns: u64,
    pub ignored: Vec<(String, u64)>,
    pub warnings: Vec<WarningRec>,
    pub rows: Rows,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WarningRec {
    pub kind: String,
    pub count: u64,
    pub file: String,
    pub line: Option<u64>,
    pub byte: Option<u64>,
    pub message: String,
}

/// Row counts of every table, checked on reading.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Rows {
    pub groups: u64,
    pub locations: u64,
    pub states: u64,
    pub intervals: u64,
    pub event_types: u64,
    pub event_values: u64,
    pub events: u64,
    pub messages: u64,
    pub counter_defs: u64,
    pub counters: u64,
    pub collective_ops: u64,
    pub collectives: u64,
    pub communicators: u64,
}

/// The size and modification time (ns since the epoch) of a trace's input
/// files together: what `--cache` compares to decide that a cache is stale.
pub fn source_stamp(trace: &Path) -> (u64, Option<i128>) {
    let files = crate::readers::input_files(trace);
    let mut bytes = 0u64;
    let mut newest: Option<i128> = None;
    for f in &files {
        let Ok(m) = std::fs::metadata(f) else {
            continue;
        };
        if m.is_file() {
            bytes += m.len();
        }
        if let Ok(t) = m.modified() {
            let ns = match t.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            };
            newest = Some(newest.map_or(ns, |n| n.max(ns)));
        }
    }
    (bytes, newest)
}

/// Where `--cache` keeps the cache of `trace`: `TRACE.tapestry` beside it
/// (`run.prv` → `run.prv.tapestry/`; a trace directory `traces/` →
/// `traces.tapestry/`).
pub fn cache_path_of(trace: &Path) -> PathBuf {
    let trimmed: PathBuf = trace.components().collect();
    let name = trimmed
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    trimmed.with_file_name(format!("{name}.tapestry"))
}

/// Whether the cache at `dir` was made from `trace` as it is now (same
/// total size and newest modification time of its files).
pub fn is_fresh(dir: &Path, trace: &Path) -> bool {
    let Ok(meta) = read::read_meta(dir) else {
        return false;
    };
    let (bytes, mtime) = source_stamp(trace);
    meta.source_bytes == bytes && meta.source_mtime_ns == mtime && mtime.is_some()
}

/// Loads `path` through its cache ([`cache_path_of`]): the cache when it is
/// fresh and reads; otherwise the trace, whose cache is then (re)written.
/// The cache holds the trace as read, before class overrides, which are
/// applied to whichever was loaded. A cache that cannot be written (a
/// read-only directory) leaves a `cache-not-written` warning, not an error.
pub fn load_cached(path: &Path, opts: &ReadOptions) -> Result<Loaded> {
    let dir = cache_path_of(path);
    if is_cache(&dir)
        && is_fresh(&dir, path)
        && let Ok(t) = read(&dir, opts)
    {
        return Ok(Loaded::Trace(Box::new(t)));
    }
    let plain = ReadOptions {
        cache: false,
        classes: ClassOverride::default(),
        ..opts.clone()
    };
    let mut trace = match crate::readers::load(path, &plain)? {
        Loaded::Trace(t) => t,
        other => return Ok(other),
    };
    let inputs = crate::readers::input_files(path);
    let inputs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    if let Err(e) = write(&trace, &dir, &inputs) {
        trace.meta.diagnostics.warnings.push(Warning {
            kind: "cache-not-written",
            count: 1,
            file: dir.clone(),
            first: Position::none(),
            message: format!("the cache could not be written ({e}); the trace was read directly"),
        });
    }
    trace.reclassify(&opts.classes)?;
    Ok(Loaded::Trace(trace))
}
