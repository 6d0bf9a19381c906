//! Analyses of a trace. They run on the CPU, without a GPU.
//!
//! * [`summary`]: the trace description of `tapestry info` (HyperView's
//!   "trace description", paper 001 §3.3.1): sizes, time per state, busy
//!   fraction per location.

pub mod summary;
