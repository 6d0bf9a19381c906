//! `tapestry convert TRACE -o trace.tapestry/`: the columnar trace cache.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use tapestry::readers::Loaded;

use super::ReadArgs;

#[derive(Args)]
pub struct ConvertArgs {
    /// The trace: Chrome JSON, Paraver .prv, PICL, an OTF2 anchor (.otf2),
    /// or another cache.
    pub trace: PathBuf,
    /// The cache directory to write (conventionally NAME.tapestry). An
    /// older cache there is replaced; any other existing path is refused.
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    let t0 = Instant::now();
    let trace = match tapestry::readers::load(&a.trace, &a.read.options())? {
        Loaded::Trace(t) => t,
        _ => bail!(
            "{} is a profile, volume or access tensor, not a trace: only traces have a cache",
            a.trace.display()
        ),
    };
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let inputs = tapestry::readers::input_files(&a.trace);
    let inputs: Vec<&std::path::Path> = inputs.iter().map(|p| p.as_path()).collect();
    tapestry::cache::write(&trace, &a.out, &inputs)
        .with_context(|| format!("writing the cache {}", a.out.display()))?;
    let bytes = tapestry::readers::input_size(&a.out);
    eprintln!(
        "wrote {} ({} locations, {} state intervals, {} events, {} messages; {:.1} MB) \
         in {:.2} s after reading {} in {:.2} s",
        a.out.display(),
        trace.locations.len(),
        trace.intervals.len(),
        trace.events.len(),
        trace.messages.len(),
        bytes as f64 / 1e6,
        t1.elapsed().as_secs_f64(),
        a.trace.display(),
        read_s
    );
    Ok(())
}
