//! Parsing of the option values several subcommands share: times,
//! windows, ranges, image sizes, field quantities and metrics, view-state
//! files.

use anyhow::{Result, anyhow, bail};
use tapestry::analysis::{fields, metric};
use tapestry::model::{Time, Trace};
use tapestry::views::{DataSpec, Resolved};

/// Parses `1500`, `1.5ms`, `20us`, `3s`, `100ns` into ns.
pub fn parse_time(s: &str) -> Result<Time> {
    Ok(tapestry::analysis::cursor::parse_time(s)?)
}

/// A range `LO:HI` of finite numbers, `LO <= HI`; `what` names the option.
pub fn parse_pair(s: &str, what: &str) -> Result<(f64, f64)> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| anyhow!("expected {what} as LO:HI, found '{s}'"))?;
    let p = |t: &str| {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| anyhow!("expected a number in {what}, found '{t}'"))
    };
    let (a, b) = (p(a)?, p(b)?);
    if b < a {
        bail!("{what}: {b} is below {a}");
    }
    Ok((a, b))
}

/// An optional range option: [`parse_pair`] when given.
pub fn parse_range(s: Option<&str>, what: &str) -> Result<Option<(f64, f64)>> {
    s.map(|r| parse_pair(r, what)).transpose()
}

/// `--window T0:T1` (times as [`parse_time`]) as given.
pub fn parse_window_spec(w: &str) -> Result<(Time, Time)> {
    let (x, y) = w
        .split_once(':')
        .ok_or_else(|| anyhow!("expected --window T0:T1, found '{w}'"))?;
    let (x, y) = (parse_time(x)?, parse_time(y)?);
    if y <= x {
        bail!("--window: the end {y} ns is not after the start {x} ns");
    }
    Ok((x, y))
}

/// `--window T0:T1`, or the whole span when absent; a window past the
/// end of the trace is clamped with a warning, one that starts after it
/// is an error.
pub fn parse_window(spec: Option<&str>, span: Time) -> Result<(Time, Time)> {
    let span = span.max(1);
    match spec {
        None => Ok((0, span)),
        Some(w) => {
            let (x, y) = parse_window_spec(w)?;
            if x >= span {
                bail!("--window starts at {x} ns, after the end of the trace ({span} ns)");
            }
            if y > span {
                eprintln!(
                    "warning: --window ends at {y} ns, after the end of the trace; clamped to {span} ns"
                );
            }
            Ok((x, y.min(span)))
        }
    }
}

/// `--window`: `T0:T1`, or a phase of the trace (`phase:MARKER[=V|#K]`,
/// `region:NAME`; see `analysis::compare::phase_window`).
pub fn resolve_window(spec: Option<&str>, t: &tapestry::model::Trace) -> Result<(Time, Time)> {
    if let Some(w) = spec
        && let Some(r) = tapestry::analysis::compare::phase_window(t, w)
    {
        return Ok(r?);
    }
    parse_window(spec, t.meta.span)
}

/// `--size WxH` in pixels.
pub fn parse_size(s: &str) -> Result<(u32, u32)> {
    s.split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .ok_or_else(|| anyhow!("expected --size WxH, found '{s}'"))
}

/// `--metric`: busy, busy-fraction, messages, bytes or counter:NAME.
pub fn parse_metric(s: &str, t: &Trace) -> Result<metric::Metric> {
    Ok(metric::Metric::parse(s, t)?)
}

/// What a field quantity is computed over.
pub struct FieldQuery<'a> {
    /// The state set behind `busy`.
    pub states: &'a [String],
    /// The access kinds kept from a tensor.
    pub kinds: &'a str,
    /// One processor of a tensor (all when absent).
    pub processor: Option<usize>,
    pub t0: Time,
    pub t1: Time,
    pub bins: usize,
}

/// The field F[t][e] of `quantity`: busy, messages, bytes, counter:NAME
/// or tensor:PATH.npy (the views compute theirs the same way).
pub fn field(t: &Trace, quantity: &str, q: &FieldQuery) -> Result<fields::Field> {
    let spec = DataSpec {
        states: q.states.to_vec(),
        kinds: q.kinds.to_string(),
        processor: q.processor,
        bins: q.bins,
        quantity: quantity.to_string(),
        ..Default::default()
    };
    let r = Resolved {
        states_label: q.states.join(", "),
        spec,
        t0: q.t0,
        t1: q.t1,
        bins: q.bins,
        colormap: "viridis".into(),
        warnings: Vec::new(),
        gpu: None,
    };
    Ok(tapestry::views::inputs::field(t, quantity, &r)?)
}

/// A clap enum in the CLI mirroring a library enum (the library has no
/// clap derives), with the conversion.
macro_rules! cli_enum {
    ($(#[$m:meta])* $name:ident => $lib:path { $($(#[$vm:meta])* $v:ident),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
        pub enum $name { $($(#[$vm])* $v),* }
        impl From<$name> for $lib {
            fn from(x: $name) -> Self {
                match x { $($name::$v => <$lib>::$v),* }
            }
        }
    };
}

cli_enum!(
    /// How the temporal signal samples the event signal.
    SampleModeArg => metric::SampleMode { Hold, Mean }
);
cli_enum!(
    /// How binned profile rows combine.
    BinByArg => tapestry::analysis::matrices::BinBy { Max, Sum }
);
cli_enum!(
    /// How the kernel's planes are dealt to processors.
    KernelDistArg => tapestry::synth::KernelDist {
        /// contiguous planes
        Block,
        /// plane i on processor i mod P
        Cyclic,
        /// blocks of N/4P planes dealt round-robin
        BlockCyclic,
    }
);
cli_enum!(
    /// How matrix elements are dealt to processors.
    DistributionArg => tapestry::synth::Distribution {
        /// (BLOCK,*)
        Block,
        /// (CYCLIC,*)
        Cyclic,
        /// (CYCLIC,CYCLIC)
        Cyclic2d,
    }
);
