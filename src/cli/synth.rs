//! `tapestry synth WORKLOAD`: simulate a message-passing workload and write
//! it as a Paraver or Chrome JSON trace.

use super::parse::{DistributionArg, KernelDistArg};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use tapestry::synth::{self, KernelParams, MachineModel, OutputFormat, SynthConfig, Workload};

#[derive(Args)]
pub struct SynthArgs {
    #[command(subcommand)]
    workload: WorkloadCmd,
}

#[derive(Subcommand)]
enum WorkloadCmd {
    /// Gaussian elimination and back substitution on an N x N matrix.
    Gauss {
        /// Matrix order.
        #[arg(long, default_value_t = 256)]
        n: u64,
        /// Distribution of the matrix: block = (BLOCK,*), cyclic = (CYCLIC,*),
        /// cyclic2d = (CYCLIC,CYCLIC).
        #[arg(long, value_enum, default_value_t = DistributionArg::Cyclic)]
        dist: DistributionArg,
        #[command(flatten)]
        common: Common,
    },
    /// Repeated broadcasts on a hypercube (P must be a power of two).
    Bcast {
        /// Bytes broadcast each time.
        #[arg(long, default_value_t = 4096)]
        bytes: u64,
        /// Number of broadcasts.
        #[arg(long, default_value_t = 16)]
        reps: u32,
        /// Operations computed by every node after each broadcast.
        #[arg(long, default_value_t = 20000.0)]
        work: f64,
        #[command(flatten)]
        common: Common,
    },
    /// Repeated global sums on a hypercube (P must be a power of two).
    Gsum {
        /// Doubles summed each time.
        #[arg(long, default_value_t = 512)]
        elems: u64,
        /// Number of global sums.
        #[arg(long, default_value_t = 16)]
        reps: u32,
        /// Operations computed by every node before each sum.
        #[arg(long, default_value_t = 20000.0)]
        work: f64,
        #[command(flatten)]
        common: Common,
    },
    /// A scalar field of W x H x D points as a .npy volume (T steps: 4D), for the isosurface view and benchmarks.
    Volume {
        /// Points per axis: WxHxD.
        #[arg(long, default_value = "128x128x128")]
        dims: String,
        /// Steps of the animation (more than 1 writes a 4D array).
        #[arg(long, default_value_t = 1)]
        steps: usize,
        /// Drift along x per step, in radians.
        #[arg(long, default_value_t = 0.2)]
        drift: f64,
        /// Output .npy file.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// A line profile (PerfVisS table: line, processor, ticks) of a real
    /// shape: procedures, comment blocks, hot loops, imbalance, a straggler.
    Profile {
        /// Source lines.
        #[arg(long, default_value_t = 2000)]
        lines: usize,
        /// Processors.
        #[arg(short, long, default_value_t = 64)]
        processors: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output .csv file.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// A data-parallel kernel on a W x H grid (or W x H x D cube), with its element access tensor.
    Kernel {
        #[arg(long, default_value_t = 64)]
        width: u32,
        #[arg(long, default_value_t = 64)]
        height: u32,
        /// Depth of a cube (1: a grid); or give all three with --dims.
        #[arg(long, default_value_t = 1)]
        depth: u32,
        /// The grid or cube as WxH or WxHxD (instead of --width/--height/--depth).
        #[arg(long, value_name = "WxHxD")]
        dims: Option<String>,
        /// How the planes of the outermost axis (rows, or z planes of a cube) are dealt to processors.
        #[arg(long, value_enum, default_value_t = KernelDistArg::Block)]
        dist: KernelDistArg,
        /// Intervals with accesses (stencil and shift steps alternate).
        #[arg(long, default_value_t = 40)]
        steps: u32,
        /// Leading intervals without accesses.
        #[arg(long, default_value_t = 3)]
        setup: u32,
        /// Operations of computation per element update.
        #[arg(long, default_value_t = 50.0)]
        ops_per_element: f64,
        /// Write the element access tensor [interval, element, processor,
        /// (local read, remote read, local write, remote write)] as .npy.
        #[arg(long, value_name = "PATH")]
        tensor: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Prv,
    Json,
    Picl,
}

#[derive(Args)]
struct Common {
    /// Number of processors.
    #[arg(short = 'p', long, default_value_t = 16)]
    procs: u32,
    /// Processors per node (for the node level of the hierarchy).
    #[arg(long, default_value_t = 16)]
    procs_per_node: u32,
    /// Seed of the computation-time jitter; the same seed gives the same file.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output trace (.prv for Paraver, .json for Chrome JSON, .trf for PICL;
    /// with .gz appended, gzip-compressed while it is written).
    #[arg(short, long)]
    out: PathBuf,
    /// Output format; by default taken from the extension of --out.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Nanoseconds per operation of computation.
    #[arg(long, default_value_t = MachineModel::default().compute_ns_per_op)]
    ns_per_op: f64,
    /// Message latency in nanoseconds.
    #[arg(long, default_value_t = MachineModel::default().latency_ns)]
    latency_ns: f64,
    /// Nanoseconds per byte sent (inverse bandwidth).
    #[arg(long, default_value_t = MachineModel::default().ns_per_byte)]
    ns_per_byte: f64,
    /// Relative jitter of computation times, in [0, 1).
    #[arg(long, default_value_t = MachineModel::default().jitter)]
    jitter: f64,
    /// Hardware counters (PAPI_TOT_INS, PAPI_TOT_CYC, the cache misses,
    /// branches, floating-point operations: the first N, up to 8) sampled
    /// at each state change, as Extrae writes them: Paraver event records
    /// of type-value pairs, Chrome `C` events. Not in PICL.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=8))]
    counters: u32,
}

fn format_of(common: &Common) -> Result<OutputFormat> {
    if let Some(f) = common.format {
        return Ok(match f {
            FormatArg::Prv => OutputFormat::Paraver,
            FormatArg::Json => OutputFormat::ChromeJson,
            FormatArg::Picl => OutputFormat::Picl,
        });
    }
    // x.prv.gz is a gzip-compressed x.prv
    let out = &common.out;
    let plain = match out.extension() {
        Some(e) if e == "gz" => out.with_extension(""),
        _ => out.clone(),
    };
    match plain.extension().and_then(|e| e.to_str()) {
        Some("prv") => Ok(OutputFormat::Paraver),
        Some("json") => Ok(OutputFormat::ChromeJson),
        Some("trf" | "picl") => Ok(OutputFormat::Picl),
        _ => bail!(
            "cannot tell the format from {}; use a .prv, .json or .trf name (.gz to compress) or --format",
            common.out.display()
        ),
    }
}

fn model(common: &Common) -> Result<MachineModel> {
    let m = MachineModel {
        compute_ns_per_op: common.ns_per_op,
        latency_ns: common.latency_ns,
        ns_per_byte: common.ns_per_byte,
        jitter: common.jitter,
        ..MachineModel::default()
    };
    for (name, v) in [
        ("--ns-per-op", m.compute_ns_per_op),
        ("--latency-ns", m.latency_ns),
        ("--ns-per-byte", m.ns_per_byte),
    ] {
        if !v.is_finite() || !(0.0..=1e12).contains(&v) {
            bail!("{name} must be a finite number in 0..=1e12, got {v}");
        }
    }
    if !(0.0..1.0).contains(&m.jitter) {
        bail!("--jitter must be in [0, 1), got {}", m.jitter);
    }
    Ok(m)
}

/// `synth volume`: the gyroid-like field of `synth::volume`.
fn volume(dims: &str, steps: usize, drift: f64, out: &Path) -> Result<()> {
    let [x, y, z] = kernel_dims(Some(dims), [0; 3])?.map(|d| d as usize);
    if x < 2 || y < 2 || z < 2 {
        bail!("--dims {dims}: a volume needs at least 2 points along each axis");
    }
    let n = (x as u64) * (y as u64) * (z as u64) * steps as u64;
    if steps == 0 || n > tapestry::readers::volume::MAX_VALUES {
        bail!(
            "--dims {dims} --steps {steps}: {n} values; a volume holds 1 to {} values",
            tapestry::readers::volume::MAX_VALUES
        );
    }
    if !drift.is_finite() {
        bail!("--drift must be a finite number, got {drift}");
    }
    if out.extension().is_none_or(|e| e != "npy") {
        bail!("--out {}: a volume is written as .npy", out.display());
    }
    let t = Instant::now();
    let v = synth::volume::gyroid([x, y, z], steps, drift);
    let mut shape = vec![z as u64, y as u64, x as u64];
    if steps > 1 {
        shape.insert(0, steps as u64);
    }
    tapestry::export::npy::write_array(out, &shape, &v)
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote {} ({x}x{y}x{z} points, {steps} step{}) in {:.2} s",
        out.display(),
        if steps == 1 { "" } else { "s" },
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `synth profile`: the line profile of `synth::profile`.
fn profile(lines: usize, processors: usize, seed: u64, out: &Path) -> Result<()> {
    let cells = lines as u64 * processors as u64;
    if lines == 0 || processors == 0 || cells > tapestry::readers::line_profile::MAX_CELLS {
        bail!(
            "--lines {lines} --processors {processors}: a profile holds 1 to {} cells",
            tapestry::readers::line_profile::MAX_CELLS
        );
    }
    let t = Instant::now();
    let p = synth::profile::line_profile(lines, processors, seed);
    let mut f = tapestry::export::AtomicFile::create(out, &[])
        .with_context(|| format!("writing {}", out.display()))?;
    synth::profile::write_table(&p, &mut f)
        .with_context(|| format!("writing {}", out.display()))?;
    f.commit()
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote {} ({lines} lines x {processors} processors, {} procedures) in {:.2} s",
        out.display(),
        p.procedures.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

pub fn run(a: SynthArgs) -> Result<()> {
    let (workload, common, tensor) = match a.workload {
        WorkloadCmd::Profile {
            lines,
            processors,
            seed,
            out,
        } => return profile(lines, processors, seed, &out),
        WorkloadCmd::Volume {
            dims,
            steps,
            drift,
            out,
        } => return volume(&dims, steps, drift, &out),
        WorkloadCmd::Gauss { n, dist, common } => {
            if n == 0 || n > 1 << 20 {
                bail!("--n must be in 1..=1048576, got {n}");
            }
            (
                Workload::Gauss {
                    n,
                    dist: dist.into(),
                },
                common,
                None,
            )
        }
        WorkloadCmd::Bcast {
            bytes,
            reps,
            work,
            common,
        } => (Workload::Broadcast { bytes, reps, work }, common, None),
        WorkloadCmd::Gsum {
            elems,
            reps,
            work,
            common,
        } => (Workload::GlobalSum { elems, reps, work }, common, None),
        WorkloadCmd::Kernel {
            width,
            height,
            depth,
            dims,
            dist,
            steps,
            setup,
            ops_per_element,
            tensor,
            common,
        } => (
            Workload::Kernel(KernelParams {
                width: kernel_dims(dims.as_deref(), [width, height, depth])?[0],
                height: kernel_dims(dims.as_deref(), [width, height, depth])?[1],
                depth: kernel_dims(dims.as_deref(), [width, height, depth])?[2],
                dist: dist.into(),
                steps,
                setup_steps: setup,
                ops_per_element,
            }),
            common,
            tensor,
        ),
    };
    let format = format_of(&common)?;
    if common.counters > 0 && format == OutputFormat::Picl {
        bail!(
            "--counters: PICL holds no hardware counters; write {} as .prv or .json",
            common.out.display()
        );
    }
    let cfg = SynthConfig {
        workload,
        procs: common.procs,
        procs_per_node: common.procs_per_node,
        model: model(&common)?,
        seed: common.seed,
        counters: common.counters,
    };
    let t0 = Instant::now();
    let report = synth::write(&cfg, format, &common.out, tensor.as_deref())
        .with_context(|| format!("cannot synthesize {}", common.out.display()))?;
    let secs = t0.elapsed().as_secs_f64();
    let size = std::fs::metadata(&common.out).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {} ({}, {} processors): {} records, {:.1} MB, simulated span {} in {:.2} s ({:.2} M records/s)",
        common.out.display(),
        cfg.workload.describe(),
        cfg.procs,
        report.records,
        size as f64 / 1e6,
        tapestry::analysis::summary::format_ns(report.end as f64),
        secs,
        report.records as f64 / 1e6 / secs.max(1e-9)
    );
    if let Some(t) = tensor {
        println!("wrote access tensor {}", display(&t));
    }
    Ok(())
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// `--dims WxH` or `WxHxD`, else the separate options.
fn kernel_dims(dims: Option<&str>, default: [u32; 3]) -> Result<[u32; 3]> {
    let Some(s) = dims else {
        return Ok(default);
    };
    let v: Vec<u32> = s
        .split('x')
        .map(|d| d.trim().parse::<u32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| anyhow::anyhow!("expected --dims WxH or WxHxD, found '{s}'"))?;
    match v[..] {
        [w, h] if w > 0 && h > 0 => Ok([w, h, 1]),
        [w, h, d] if w > 0 && h > 0 && d > 0 => Ok([w, h, d]),
        _ => anyhow::bail!("expected --dims WxH or WxHxD of positive sizes, found '{s}'"),
    }
}
