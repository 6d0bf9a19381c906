//! Analyses of a trace or profile (SPEC §3). They run on the CPU, without a
//! GPU, and their accumulators merge (parallel, GPU, across machines).
//!
//! * [`summary`]: the trace description of `tapestry info` (paper 001 §3.3.1).
//! * [`moments`]: moments of utilization m0..m3 (paper 000).
//! * [`metric`]: the metric matrix, state vector, spatial domain and the
//!   event-domain and temporal signals (paper 002).
//! * [`image`]: performance images, layouts and image operations (paper 002).
//! * [`signal`]: spectra, moving average, correlations, thresholds,
//!   filters, histograms, Markov model (paper 002).
//! * [`fields`]: time-binned fields for the data-parallel views (paper 003).
//! * [`cursor`]: execution control: frames by events or ticks, both ways,
//!   and the statistics up to the cursor (paper 001).
//! * [`comm`]: task × task communication matrices over sliding windows,
//!   at the thread, process or node level, and their contours (paper 001).
//! * [`matrices`]: profile reductions (paper 004).

pub mod comm;
pub mod compare;
pub mod cursor;
pub mod fields;
pub mod image;
pub mod isosurface;
pub mod matrices;
pub mod metric;
pub mod moments;
pub mod network;
pub mod signal;
pub mod stream;
pub mod summary;
