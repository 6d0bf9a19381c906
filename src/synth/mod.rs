//! Synthetic SPMD workloads: a message-passing timing model ([`sim`])
//! simulated on P processors, written as Paraver, Chrome JSON or PICL traces
//! (streamed: P = 65,536 and 10^8 records never sit in memory) or built
//! directly into the model.
//!
//! Workloads:
//! * [`gauss`]: Gaussian elimination and back substitution with
//!   `(BLOCK,*)`, `(CYCLIC,*)` and `(CYCLIC,CYCLIC)` distributions;
//! * [`hypercube`]: broadcast and global sum on a hypercube;
//! * [`kernel`]: a data-parallel kernel with its element access tensor;
//! * [`profile`]: a line profile (lines × processors) of a real shape;
//! * [`volume`]: a drifting scalar field for the isosurfaces.
//!
//! The output is deterministic for a given seed.

pub mod counters;
pub mod gauss;
pub mod hypercube;
pub mod kernel;
pub mod profile;
pub mod sim;
pub mod sink;
pub mod volume;
pub mod writers;

use std::path::Path;

use crate::error::{Error, Result};
use crate::export::npy::NpyWriter;
use crate::model::{Time, Trace};

pub use gauss::Distribution;
pub use kernel::{KernelDist, KernelParams};
pub use sim::{MachineModel, Sim};
pub use sink::{Layout, Record, RecordSink};
pub use writers::{ChromeWriter, ModelSink, ParaverWriter, PiclWriter};

/// A workload to simulate.
#[derive(Debug, Clone)]
pub enum Workload {
    Gauss { n: u64, dist: Distribution },
    Broadcast { bytes: u64, reps: u32, work: f64 },
    GlobalSum { elems: u64, reps: u32, work: f64 },
    Kernel(KernelParams),
}

impl Workload {
    pub fn describe(&self) -> String {
        match self {
            Workload::Gauss { n, dist } => {
                format!("gaussian elimination n={n} distribution={dist:?}")
            }
            Workload::Broadcast { bytes, reps, work } => {
                format!("hypercube broadcast bytes={bytes} reps={reps} work={work}")
            }
            Workload::GlobalSum { elems, reps, work } => {
                format!("hypercube global sum elems={elems} reps={reps} work={work}")
            }
            Workload::Kernel(k) => format!(
                "data-parallel kernel {}x{}x{} {:?} steps={} setup={}",
                k.width,
                k.height,
                k.depth.max(1),
                k.dist,
                k.steps,
                k.setup_steps
            ),
        }
    }
}

/// Everything a simulation needs.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    pub workload: Workload,
    pub procs: u32,
    pub procs_per_node: u32,
    pub model: MachineModel,
    pub seed: u64,
    /// Hardware counters sampled at each state change (0: none; at most
    /// [`counters::HARDWARE_COUNTERS`]' length).
    pub counters: u32,
}

/// What a simulation produced.
#[derive(Debug, Clone, Copy)]
pub struct SynthReport {
    pub records: u64,
    pub end: Time,
}

/// The most processors a simulation accepts.
pub const MAX_PROCS: u32 = 1 << 24;

/// Runs the simulation into `sink`; writes the kernel's access tensor to
/// `tensor` when given.
pub fn simulate(
    cfg: &SynthConfig,
    sink: &mut dyn RecordSink,
    tensor: Option<&Path>,
) -> Result<SynthReport> {
    if cfg.procs == 0 || cfg.procs > MAX_PROCS {
        return Err(Error::Invalid(format!(
            "the number of processors must be in 1..={MAX_PROCS}, got {}",
            cfg.procs
        )));
    }
    let layout = Layout {
        procs: cfg.procs,
        procs_per_node: cfg.procs_per_node.max(1),
        description: cfg.workload.describe(),
        counters: Vec::new(),
    };
    let mut writer = match (&cfg.workload, tensor) {
        (Workload::Kernel(k), Some(path)) => {
            let shape = kernel::tensor_shape(k, cfg.procs);
            let n: u64 = shape.iter().product();
            if n > kernel::MAX_TENSOR_ELEMENTS {
                return Err(Error::Invalid(format!(
                    "the access tensor {shape:?} would hold {n} values (limit {}); use fewer steps, elements or processors",
                    kernel::MAX_TENSOR_ELEMENTS
                )));
            }
            Some(NpyWriter::<u32>::create(path, &shape)?)
        }
        (_, Some(_)) => {
            return Err(Error::Invalid(
                "an access tensor is only produced by the kernel workload".into(),
            ));
        }
        _ => None,
    };
    // the counters' samples join the records in time order, after the sort
    let (end, records) = if cfg.counters > 0 {
        let mut with_counters = counters::CounterSink::new(sink, cfg.counters)?;
        let (end, records) = run(cfg, &layout, &mut with_counters, writer.as_mut())?;
        (end, records + with_counters.samples)
    } else {
        run(cfg, &layout, sink, writer.as_mut())?
    };
    if let Some(w) = writer {
        w.finish()?;
    }
    Ok(SynthReport { records, end })
}

/// The workload of `cfg` simulated into `sink`: the end time and the
/// records written.
fn run(
    cfg: &SynthConfig,
    layout: &Layout,
    sink: &mut dyn RecordSink,
    tensor: Option<&mut NpyWriter<u32>>,
) -> Result<(Time, u64)> {
    let mut sim = Sim::new(layout, cfg.model, cfg.seed, sink)?;
    match &cfg.workload {
        Workload::Gauss { n, dist } => gauss::run(&mut sim, *n, *dist)?,
        Workload::Broadcast { bytes, reps, work } => {
            hypercube::broadcast(&mut sim, *bytes, *reps, *work)?
        }
        Workload::GlobalSum { elems, reps, work } => {
            hypercube::global_sum(&mut sim, *elems, *reps, *work)?
        }
        Workload::Kernel(k) => kernel::run(&mut sim, *k, tensor)?,
    }
    sim.finish()
}

/// Simulates straight into a trace in memory.
pub fn to_trace(cfg: &SynthConfig) -> Result<Trace> {
    let mut sink = ModelSink::new();
    simulate(cfg, &mut sink, None)?;
    sink.into_trace()
}

/// Output formats of [`write()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Paraver,
    ChromeJson,
    /// PICL "new" format (ParaGraph).
    Picl,
}

/// Simulates and writes the trace to `path`.
pub fn write(
    cfg: &SynthConfig,
    format: OutputFormat,
    path: &Path,
    tensor: Option<&Path>,
) -> Result<SynthReport> {
    match format {
        OutputFormat::Paraver => {
            let mut w = ParaverWriter::create(path)?;
            simulate(cfg, &mut w, tensor)
        }
        OutputFormat::ChromeJson => {
            let mut w = ChromeWriter::create(path)?;
            simulate(cfg, &mut w, tensor)
        }
        OutputFormat::Picl => {
            if cfg.counters > 0 {
                return Err(Error::Invalid(
                    "PICL holds no hardware counters: write --counters to a .prv or .json trace"
                        .into(),
                ));
            }
            let mut w = PiclWriter::create(path)?;
            simulate(cfg, &mut w, tensor)
        }
    }
}

/// An empty synthetic trace of `locations` threads (`rank L`) and the
/// states `Running` (busy, id 0) and `Idle` (idle, id 1), for the interval
/// columns to be filled in directly.
fn running_idle_skeleton(name: &str, locations: u32) -> Trace {
    use crate::model::{BuildOptions, Format, LocationKind, StateClass, TimeUnit, TraceBuilder};
    let mut b = TraceBuilder::new(Format::Synthetic, name, TimeUnit::nanoseconds(), false);
    for l in 0..locations {
        b.locations
            .add(format!("rank {l}"), LocationKind::Thread, None, l as i64);
    }
    b.states.add("Running", StateClass::Busy, None, 1);
    b.states.add("Idle", StateClass::Idle, None, 0);
    b.finish(BuildOptions::default())
        .expect("an empty trace builds")
}

/// A trace with exactly the given intervals: `per_location[l]` lists
/// location `l`'s sorted, disjoint `(start, end, busy)` intervals in
/// nanoseconds (state "Running" when busy, else "Idle"). For tests that
/// need adversarial layouts (short intervals far apart, huge offsets).
pub fn explicit_intervals(per_location: &[Vec<(u64, u64, bool)>]) -> Trace {
    let mut trace = running_idle_skeleton("explicit-intervals", per_location.len() as u32);
    let mut offsets = vec![0u64];
    let (mut start, mut end, mut state) = (Vec::new(), Vec::new(), Vec::new());
    for list in per_location {
        for &(a, e, busy) in list {
            start.push(a);
            end.push(e);
            state.push(if busy { 0 } else { 1 });
        }
        offsets.push(start.len() as u64);
    }
    trace.meta.span = end.iter().copied().max().unwrap_or(0);
    trace.intervals = crate::model::Intervals::from_columns(offsets, start, end, state);
    trace
}

/// A trace of `locations × per_location` state intervals alternating between
/// a busy state (`Running`) and an idle one, with random lengths and gaps,
/// built directly in memory (for benchmarks and tests of the analyses at
/// scale: 10^8 intervals take 2 GB). Deterministic for a seed; generated in
/// parallel over locations.
pub fn random_intervals(locations: u32, per_location: u32, seed: u64) -> Trace {
    use rayon::prelude::*;

    let mut trace = running_idle_skeleton("random-intervals", locations);
    let n = locations as usize * per_location as usize;
    let mut start = vec![0u64; n];
    let mut end = vec![0u64; n];
    let mut state = vec![0u32; n];
    let k = per_location.max(1) as usize;
    start
        .par_chunks_mut(k)
        .zip(end.par_chunks_mut(k))
        .zip(state.par_chunks_mut(k))
        .enumerate()
        .for_each(|(l, ((s, e), st))| {
            let mut rng = sim::Rng::new(seed ^ (l as u64).wrapping_mul(0x9E37_79B9));
            let mut t = rng.next_u64() % 1000;
            for i in 0..s.len() {
                let len = 1 + rng.next_u64() % 2000;
                s[i] = t;
                e[i] = t + len;
                st[i] = (i % 2) as u32;
                t += len + rng.next_u64() % 200;
            }
        });
    let offsets = (0..=locations as u64)
        .map(|l| l * per_location as u64)
        .collect();
    let span = end.iter().copied().max().unwrap_or(0);
    trace.intervals = crate::model::Intervals::from_columns(offsets, start, end, state);
    trace.meta.span = span;
    trace
}
