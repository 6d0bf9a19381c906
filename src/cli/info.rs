//! `tapestry info TRACE`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use tapestry::analysis::summary::{summarize, summarize_profile};
use tapestry::readers::Loaded;

use super::ReadArgs;

#[derive(Args)]
pub struct InfoArgs {
    /// The trace or profile: Chrome JSON, Paraver .prv, PICL, an OTF2 anchor
    /// (.otf2), a TAU profile directory, a line-profile table (gzip is fine
    /// for the text formats).
    pub trace: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// How many of the hottest rows of a profile to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// How many locations to list in the text output.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub locations: usize,
    /// Print read time, throughput and peak memory to standard error.
    #[arg(long)]
    pub stats: bool,
    /// Summarize while reading, never holding the records (Paraver, OTF2,
    /// PICL, Chrome): memory grows with locations × states, not with the
    /// trace. Automatic when the trace would take more than half the
    /// memory limit in memory.
    #[arg(long)]
    pub stream: bool,
    /// Read the trace in memory even when it would be streamed
    /// automatically.
    #[arg(long, conflicts_with = "stream")]
    pub no_stream: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let t0 = Instant::now();
    let auto = if a.stream || a.no_stream {
        None
    } else {
        super::analyze::stream::auto(&a.trace, &a.read)
    };
    if let Some(why) = &auto {
        eprintln!("note: {why}");
        return run_stream(&a, t0).context(super::analyze::stream::AUTO_CONTEXT);
    }
    if a.stream {
        return run_stream(&a, t0);
    }
    // the in-memory read's phases, which `--stats` prints
    tapestry::phases::enable(a.stats);
    // library errors name the file and the position already
    let trace = match tapestry::readers::load(&a.trace, &a.read.options())? {
        Loaded::Trace(t) => t,
        Loaded::Profile(p) => {
            let s = summarize_profile(&p, a.top);
            if a.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
                print!("{}", s.to_text());
            }
            if a.stats {
                eprintln!(
                    "read {:.3} s, peak memory {:.1} MiB",
                    t0.elapsed().as_secs_f64(),
                    super::peak_rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64
                );
            }
            return Ok(());
        }
        Loaded::Tensor(t) => {
            println!(
                "{}: element access tensor, {} intervals x {} elements x {} processors x 4 kinds (local read, remote read, local write, remote write)",
                t.path.display(),
                t.shape[0],
                t.shape[1],
                t.shape[2]
            );
            return Ok(());
        }
        Loaded::Volumes(v) => {
            if a.json {
                let q: Vec<_> = v
                    .volumes
                    .iter()
                    .map(|x| {
                        let (lo, hi) = x.range();
                        serde_json::json!({"name": x.name, "dims": x.dims, "axes": x.axes,
                            "step_axis": x.step_axis, "steps": x.steps, "min": lo, "max": hi})
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "source": v.source, "format": v.format, "quantities": q,
                        "links": v.links.as_ref().map(|l| serde_json::json!({
                            "name": l.name, "count": l.len(), "dims": l.dims, "torus": l.torus, "steps": l.steps
                        }))
                    }))?
                );
            } else {
                println!("{}: {}", v.source.display(), v.format);
                for x in &v.volumes {
                    let (lo, hi) = x.range();
                    let steps = if x.steps.len() == 1 {
                        "1 step".to_string()
                    } else {
                        format!(
                            "{} steps of {} ({} .. {})",
                            x.steps.len(),
                            x.step_axis,
                            x.steps.first().map_or("", String::as_str),
                            x.steps.last().map_or("", String::as_str),
                        )
                    };
                    println!(
                        "  {:<12} {} x {} x {} ({}, {}, {}), {steps}, values {lo} .. {hi}",
                        x.name, x.dims[0], x.dims[1], x.dims[2], x.axes[0], x.axes[1], x.axes[2],
                    );
                }
                if let Some(l) = &v.links {
                    println!(
                        "  links        {} directed links ({} {}x{}x{}), {} per link, {} steps",
                        l.len(),
                        if l.torus { "torus" } else { "mesh" },
                        l.dims[0],
                        l.dims[1],
                        l.dims[2],
                        l.name,
                        l.steps.len()
                    );
                }
            }
            return Ok(());
        }
    };
    let read_s = t0.elapsed().as_secs_f64();
    for w in &trace.meta.diagnostics.warnings {
        eprintln!("warning: {w}");
    }
    let summary = summarize(&trace);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.to_text(&trace, a.locations));
    }
    if a.stats {
        let bytes = tapestry::readers::input_size(&a.trace);
        let records = trace.intervals.len()
            + trace.events.len()
            + trace.messages.len()
            + trace.counters.len();
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let peak = mib(super::peak_rss_bytes().unwrap_or(0));
        let model = mib(trace.heap_bytes() as u64);
        // below a MiB the process itself (its code, libc: some 11 MiB) is
        // the peak, and a ratio would say nothing of the read
        let ratio = if model >= 1.0 {
            format!(" ({:.2}x)", peak / model)
        } else {
            String::new()
        };
        eprintln!(
            "read {:.3} s, {:.1} MB/s, {:.2} M records/s, peak memory {:.1} MiB \
             (the whole process), the model {:.1} MiB in memory{ratio}",
            read_s,
            bytes as f64 / 1e6 / read_s,
            records as f64 / 1e6 / read_s,
            peak,
            model,
        );
        let phases = tapestry::phases::line();
        if !phases.is_empty() {
            eprintln!(
                "phases (wall time; a phase marked one thread holds the others up): {phases}"
            );
        }
    }
    Ok(())
}

/// `info --stream`: the summary reduced while reading.
fn run_stream(a: &InfoArgs, t0: Instant) -> Result<()> {
    use super::analyze::stream;
    let Some(red) = stream::reduce(&a.trace, &a.read, None, Default::default(), false, false)?
    else {
        return Ok(());
    };
    let read_s = t0.elapsed().as_secs_f64();
    let summary = stream::summary_of(&red.r, &red.t, &red.keys);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.to_text(&red.t, a.locations));
    }
    if a.stats {
        let bytes = tapestry::readers::input_size(&a.trace);
        let (iv, msgs, other) = red.r.records();
        eprintln!(
            "read {:.3} s, {:.1} MB/s, {:.2} M records/s, peak memory {:.1} MiB",
            read_s,
            bytes as f64 / 1e6 / read_s,
            (iv + msgs + other) as f64 / 1e6 / read_s,
            super::peak_rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64
        );
    }
    Ok(())
}
