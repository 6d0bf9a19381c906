//! `analyze TRACE moments|field --stream`: reductions made while reading.

use anyhow::{Result, bail};
use tapestry::analysis::stream::{StreamReducer, StreamSpec};
use tapestry::model::Format;

use super::{Analysis, AnalyzeArgs, Output, field_layout, field_output, moments_output};
use crate::cli::parse::parse_window;

pub(super) fn run(a: &AnalyzeArgs) -> Result<Output> {
    let field = match a.analysis {
        Analysis::Moments => false,
        Analysis::Field if a.quantity == "busy" => true,
        Analysis::Field => bail!(
            "--stream reduces the busy field only, not '{}' (read without --stream)",
            a.quantity
        ),
        _ => bail!(
            "--stream reduces moments and the busy field; this analysis needs the trace in \
             memory (read without --stream)"
        ),
    };
    if a.window.as_deref().is_some_and(|w| w.starts_with("phase")) {
        bail!("--stream cannot find phases (they need the events in memory); give --window T0:T1");
    }
    let format = tapestry::readers::detect(&a.trace)?;
    if format != Format::Paraver {
        bail!(
            "--stream reads Paraver traces; {} is {} (read it without --stream, or convert it \
             once with `tapestry convert` and reopen the cache)",
            a.trace.display(),
            format.name()
        );
    }
    let spec = StreamSpec {
        bins: field.then_some(a.bins),
    };
    let window = a.window.clone();
    let mut r = StreamReducer::new(
        spec,
        Box::new(move |span| {
            parse_window(window.as_deref(), span)
                .map_err(|e| tapestry::Error::Invalid(format!("{e:#}")))
        }),
    );
    let (t, keys) = tapestry::readers::paraver::stream(&a.trace, &a.read.options(), &mut r)?;
    for w in &t.meta.diagnostics.warnings {
        eprintln!("warning: {w}");
    }
    let (t0, t1) = r.window();
    if a.window.is_none() && t1 != t.meta.span.max(1) {
        bail!(
            "records end at {} ns, after the end the header declares ({t1} ns): the default \
             window cannot be known before reading; give --window 0:{} or read without --stream",
            t.meta.span,
            t.meta.span
        );
    }
    let mask = t.states.select(&a.states)?;
    let (iv, msgs, other) = r.records();
    eprintln!(
        "streamed {iv} state intervals, {msgs} messages and {other} other records; kept {} locations × {} states; peak memory {:.1} MiB",
        t.num_locations(),
        keys.len(),
        crate::cli::peak_rss_bytes().unwrap_or(0) as f64 / (1 << 20) as f64
    );
    if field {
        let mut f = r.busy_field(&mask, &keys)?;
        let label = a.states.join(", ");
        if label != "busy" {
            f.quantity = format!("fraction of time in {label}");
        }
        field_output(field_layout(&a.field_layout)?, f, "cpu (stream)")
    } else {
        let m = r.moments(&mask, &keys);
        Ok(moments_output(a, &t, &m, (t0, t1), "cpu (stream)"))
    }
}
