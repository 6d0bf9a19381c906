//! tapestry: a visualizer for the performance of parallel programs.
//!
//! The crate follows the data flow of the product (see `README.md`):
//!
//! ```text
//! trace files ──readers──▶ model::Trace ──analysis──▶ results
//! ```
//!
//! * [`readers`] turn trace files (Chrome JSON, Paraver, PICL) into the
//!   columnar [`model::Trace`], detecting the format from the content.
//! * [`model`] is the trace model: locations, state intervals, events,
//!   messages, counters, all with integer nanosecond timestamps.
//! * [`analysis`] computes results from a trace without a GPU.
//! * [`synth`] simulates message-passing workloads and writes them as
//!   traces, for the demo, the tests and the benchmarks.
//! * [`export`] writes files atomically.

pub mod analysis;
pub mod app;
pub mod cache;
pub mod diagnostics;
pub mod error;
pub mod export;
pub mod gpu;
pub mod memory;
pub mod model;
pub mod phases;
pub mod readers;
pub mod render;
pub mod scene;
mod static_names;
pub mod synth;
#[cfg(test)]
mod test_pool;
#[cfg(test)]
mod test_rng;
pub mod views;

pub use diagnostics::{Diagnostics, Position};
pub use error::{Error, Result};
pub use model::Trace;
