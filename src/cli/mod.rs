//! Subcommands of the `tapestry` binary. Each is a thin layer over the
//! library; errors get their context here (anyhow) and a non-zero exit.

mod analyze;
mod convert;
mod info;
mod parse;
mod render;
mod synth;
mod view;
mod viewspec;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tapestry::model::ClassOverride;
use tapestry::readers::ReadOptions;

#[derive(Parser)]
#[command(name = "tapestry", version, about = "Visualize the performance of parallel programs", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Describe a trace: locations, span, record counts, time per state, busy fractions.
    Info(info::InfoArgs),
    /// Run one analysis (moments, signals, images, fields, matrices, profile reductions).
    Analyze(Box<analyze::AnalyzeArgs>),
    /// Open the viewer window on a trace.
    View(Box<view::ViewArgs>),
    /// Render a view headless to PNG (Kiviat tube, moment display).
    Render(Box<render::RenderArgs>),
    /// Simulate a message-passing workload and write it as a trace.
    Synth(synth::SynthArgs),
    /// Write a trace as a columnar cache (Arrow IPC files in a directory)
    /// that every command reopens without parsing and pandas, polars or
    /// DuckDB read directly.
    Convert(convert::ConvertArgs),
    /// Reduce a trace across processes (`mpirun -n N tapestry reduce TRACE
    /// moments|field|comm-matrix|summary`): each reads a share of the file
    /// (Paraver: byte ranges; PICL: stripes, records sent to their
    /// processor's owner; Chrome JSON: stripes of events, slices sent to
    /// their thread's owner) or of the locations (OTF2) and streams it,
    /// rank 0 merges and writes (build with `--features mpi`).
    Reduce(Box<analyze::AnalyzeArgs>),
    /// (internal) Reads an OTF2 archive in this process and writes it as a
    /// cache: the isolated OTF2 reader's helper.
    #[command(name = "__read-otf2", hide = true)]
    ReadOtf2 {
        anchor: std::path::PathBuf,
        out: std::path::PathBuf,
        #[arg(long)]
        strict: bool,
        /// Write where the time went beside the cache (`phases.tsv`).
        #[arg(long)]
        phases: bool,
    },
}

impl Command {
    /// The trace the command reads, if it reads one.
    fn trace(&self) -> Option<&std::path::Path> {
        match self {
            Command::Info(a) => Some(&a.trace),
            Command::Analyze(a) | Command::Reduce(a) => Some(&a.trace),
            Command::View(a) => Some(&a.trace),
            Command::Render(a) => Some(&a.trace),
            Command::Convert(a) => Some(&a.trace),
            Command::ReadOtf2 { anchor, .. } => Some(anchor),
            Command::Synth(_) => None,
        }
    }
}

/// Options shared by every command that reads a trace.
#[derive(Args, Debug, Clone)]
pub struct ReadArgs {
    /// Treat recoverable damage (truncated last record, unmatched begin/end,
    /// unsorted records) as an error instead of repairing it with a warning.
    #[arg(long)]
    pub strict: bool,
    /// States that count as busy (comma-separated names, `*` wildcards,
    /// numeric state ids, or cat:NAME, paradigm:NAME, role:NAME selectors);
    /// every other formerly busy state becomes overhead.
    #[arg(long, value_delimiter = ',', value_name = "STATES")]
    pub busy: Option<Vec<String>>,
    /// States that count as overhead.
    #[arg(long, value_delimiter = ',', value_name = "STATES")]
    pub overhead: Option<Vec<String>>,
    /// States that count as idle.
    #[arg(long, value_delimiter = ',', value_name = "STATES")]
    pub idle: Option<Vec<String>>,
    /// Boxfish tables: the node-table column whose values are the animation
    /// steps [code_region]; `none` sums a node's rows into one step.
    #[arg(long, value_name = "COLUMN")]
    pub steps_by: Option<String>,
    /// Read through a columnar cache beside the trace (TRACE.tapestry/):
    /// written on first use, reopened without parsing afterwards, rewritten
    /// when the trace's files change size or modification time.
    #[arg(long)]
    pub cache: bool,
}

impl ReadArgs {
    pub fn options(&self) -> ReadOptions {
        ReadOptions {
            strict: self.strict,
            classes: ClassOverride {
                busy: self.busy.clone(),
                overhead: self.overhead.clone(),
                idle: self.idle.clone(),
            },
            steps_by: self.steps_by.clone(),
            cache: self.cache,
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // before any thread: the readers' threads share a few malloc arenas,
    // or have one each for a large trace
    tapestry::memory::share_arenas(cli.command.trace());
    // Mesa's device-selection layer probes the window systems (and prints
    // "XDG_RUNTIME_DIR is invalid" on headless machines) to pick a default
    // GPU; tapestry picks its own adapter, so headless commands skip it.
    if !matches!(cli.command, Command::View(_)) && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
    // OTF2 archives are read in a child process of this program: a damaged
    // archive that crashes the OTF2 C library ends the child, not us
    if !matches!(cli.command, Command::ReadOtf2 { .. })
        && std::env::var_os("TAPESTRY_OTF2_IN_PROCESS").is_none()
        && let Ok(exe) = std::env::current_exe()
    {
        let _ = tapestry::readers::OTF2_HELPER.set(exe);
    }
    let result = match cli.command {
        Command::Info(a) => info::run(a),
        Command::Analyze(a) => analyze::run(*a),
        Command::Render(a) => render::run(*a),
        Command::View(a) => view::run(*a),
        Command::Synth(a) => synth::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Reduce(a) => analyze::run_reduce(*a),
        Command::ReadOtf2 {
            anchor,
            out,
            strict,
            phases,
        } => read_otf2_helper(&anchor, &out, strict, phases),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<Reported>() => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `__read-otf2`: the isolated OTF2 reader's helper.
fn read_otf2_helper(
    anchor: &std::path::Path,
    out: &std::path::Path,
    strict: bool,
    phases: bool,
) -> anyhow::Result<()> {
    #[cfg(feature = "otf2")]
    {
        Ok(tapestry::readers::otf2_helper_main(
            anchor, out, strict, phases,
        )?)
    }
    #[cfg(not(feature = "otf2"))]
    {
        let _ = (out, strict, phases);
        anyhow::bail!(
            "{}: this tapestry was built without OTF2 support",
            anchor.display()
        )
    }
}

/// An error already printed (by an MPI process before the others stop).
#[derive(Debug)]
pub struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(reported above)")
    }
}

impl std::error::Error for Reported {}

/// Peak resident memory of this process in bytes (Linux), if known: the
/// kernel's high-water mark, or where `TAPESTRY_PHASE_MEMORY=1` reset that
/// after each phase, the highest it reached.
pub fn peak_rss_bytes() -> Option<u64> {
    tapestry::phases::peak_kib()
        .or_else(|| tapestry::memory::resident_kib().map(|m| m.1))
        .map(|kib| kib * 1024)
}
