//! The analysis inputs views share: the data specification resolved
//! against a trace (window clamped, bins fitted, colour map chosen), the
//! fields behind a quantity name, the moment accumulators of a state set.

use std::path::PathBuf;

use crate::analysis::fields::{self, Field};
use crate::analysis::moments::{self, MomentAcc};
use crate::error::{Error, Result};
use crate::model::{Time, Trace};
use crate::readers::Loaded;
use crate::scene::colormap;

use super::DataSpec;

/// A [`DataSpec`] checked against an input.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub spec: DataSpec,
    /// The window in ns, inside the trace.
    pub t0: Time,
    pub t1: Time,
    /// Bins, at most one per ns of the window.
    pub bins: usize,
    /// The colour map to use.
    pub colormap: String,
    /// How the state set reads in a title ("busy", "Waiting a message").
    pub states_label: String,
    /// What was adjusted (printed as warnings).
    pub warnings: Vec<String>,
    /// The trace resident on the GPU, where the views that can compute
    /// there should (`render --gpu`); `None`: the CPU.
    pub gpu: Option<GpuInput>,
}

/// A trace uploaded to the GPU for the views to compute on.
#[derive(Clone)]
pub struct GpuInput(pub std::sync::Arc<crate::gpu::GpuTrace>);

impl std::fmt::Debug for GpuInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuInput({} intervals)", self.0.num_intervals())
    }
}

impl PartialEq for GpuInput {
    fn eq(&self, o: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &o.0)
    }
}

/// Checks `spec` against `input`: the window is clamped to the trace
/// (with a warning), bins to the window's length, the colour map must
/// exist, the state set must select something known.
pub fn resolve(spec: &DataSpec, input: &Loaded, default_colormap: &str) -> Result<Resolved> {
    let mut warnings = Vec::new();
    let span = match input {
        Loaded::Trace(t) => t.meta.span.max(1),
        Loaded::Profile(_) | Loaded::Volumes(_) | Loaded::Tensor(_) => 1,
    };
    let (t0, t1) = match spec.window {
        None => (0, span),
        Some([a, b]) => {
            if b <= a {
                return Err(Error::Invalid(format!(
                    "the window ends ({b} ns) before it starts ({a} ns)"
                )));
            }
            if a >= span {
                return Err(Error::Invalid(format!(
                    "the window starts at {a} ns, after the end of the trace ({span} ns)"
                )));
            }
            if b > span {
                warnings.push(format!(
                    "the window ends at {b} ns, after the end of the trace; clamped to {span} ns"
                ));
            }
            (a, b.min(span))
        }
    };
    let len = (t1 - t0) as usize;
    let bins = spec.bins.clamp(1, len.max(1));
    if spec.bins == 0 {
        return Err(Error::Invalid("--bins must be at least 1".into()));
    }
    if bins < spec.bins && matches!(input, Loaded::Trace(_)) {
        warnings.push(format!(
            "{} bins are more than the {len} ns of the window; using {bins}",
            spec.bins
        ));
    }
    let colormap = spec
        .colormap
        .clone()
        .unwrap_or_else(|| default_colormap.to_string());
    colormap::Colormap::named(&colormap)?;
    if let Loaded::Trace(t) = input {
        t.states.select(&spec.states)?;
    }
    let states_label = spec.states.join(", ");
    Ok(Resolved {
        spec: spec.clone(),
        t0,
        t1,
        bins,
        colormap,
        states_label,
        warnings,
        gpu: None,
    })
}

/// The trace of an input, or an error naming what the view needs.
pub fn trace<'a>(input: &'a Loaded, view: &str) -> Result<&'a Trace> {
    match input {
        Loaded::Trace(t) => Ok(t),
        Loaded::Profile(_) => Err(Error::Invalid(format!(
            "the {view} view needs a trace, and this input is a profile"
        ))),
        Loaded::Volumes(_) => Err(Error::Invalid(format!(
            "the {view} view needs a trace, and this input is a volume"
        ))),
        Loaded::Tensor(_) => Err(Error::Invalid(format!(
            "the {view} view needs a trace, and this input is an access tensor"
        ))),
    }
}

/// The field `F[t][e]` of a quantity: `busy` (the fraction of time in the
/// state set), `messages`, `bytes`, `counter:NAME` or `tensor:PATH`
/// (accesses of `spec.kinds`).
pub fn field(t: &Trace, quantity: &str, r: &Resolved) -> Result<Field> {
    let (t0, t1, bins) = (r.t0, r.t1, r.bins);
    if let Some(p) = quantity.strip_prefix("tensor:") {
        let kinds = fields::access_kinds(&r.spec.kinds)?;
        let c =
            crate::readers::tensor::read_access_counts(&PathBuf::from(p), kinds, r.spec.processor)?;
        return fields::from_access_counts(c.intervals, c.elements, c.values, &r.spec.kinds);
    }
    Ok(match quantity {
        "busy" => {
            let mut f = fields::busy_fraction(t, &t.states.select(&r.spec.states)?, t0, t1, bins)?;
            if r.states_label != "busy" {
                f.quantity = format!("fraction of time in {}", r.states_label);
            }
            f
        }
        "messages" => fields::messages(t, false, t0, t1, bins)?,
        "bytes" => fields::messages(t, true, t0, t1, bins)?,
        other => match other.strip_prefix("counter:") {
            Some(name) => fields::counter(t, counter_index(t, name)?, t0, t1, bins)?,
            None => {
                return Err(Error::Invalid(format!(
                    "expected a quantity busy, messages, bytes, counter:NAME or tensor:PATH, found '{other}'"
                )));
            }
        },
    })
}

/// The field of `quantity` for any input that has fields: a trace (see
/// [`field`]) or an access tensor opened on its own (its accesses of the
/// specification's kinds per interval and element).
pub fn field_of(input: &Loaded, quantity: &str, r: &Resolved, view: &str) -> Result<Field> {
    match input {
        Loaded::Tensor(tf) => {
            let kinds = fields::access_kinds(&r.spec.kinds)?;
            let c = crate::readers::tensor::read_access_counts(&tf.path, kinds, r.spec.processor)?;
            fields::from_access_counts(c.intervals, c.elements, c.values, &r.spec.kinds)
        }
        _ => field(trace(input, view)?, quantity, r),
    }
}

/// The number of elements `quantity` gives without computing it (for a
/// view's check of what it can show).
pub fn elements(t: &Trace, quantity: &str) -> Result<usize> {
    if let Some(p) = quantity.strip_prefix("tensor:") {
        return Ok(crate::readers::tensor::shape_of(&PathBuf::from(p))?[1] as usize);
    }
    Ok(t.num_locations())
}

/// The index of the counter called `name`, or an error listing the counters.
pub fn counter_index(t: &Trace, name: &str) -> Result<u32> {
    t.counters
        .defs
        .iter()
        .position(|d| d.name == name)
        .map(|c| c as u32)
        .ok_or_else(|| {
            let names: Vec<&str> = t.counters.defs.iter().map(|d| d.name.as_str()).collect();
            Error::Invalid(format!(
                "no counter '{name}' in this trace (counters: {})",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })
}

/// The moment accumulators of every location for the state set.
pub fn moment_accs(t: &Trace, r: &Resolved) -> Result<Vec<MomentAcc>> {
    use rayon::prelude::*;
    let mask = t.states.select(&r.spec.states)?;
    Ok((0..t.num_locations() as u32)
        .into_par_iter()
        .map(|l| moments::accumulate(t.intervals.of(l), &mask, r.t0, r.t1))
        .collect())
}

/// Whether each location has any interval in the window (rows without are
/// drawn as "no data").
pub fn has_data(t: &Trace, r: &Resolved) -> Vec<bool> {
    (0..t.num_locations() as u32)
        .map(|l| !t.intervals.of(l).window(r.t0, r.t1).is_empty())
        .collect()
}

/// The access tensor a view reads: the input itself, or the one named by
/// `--quantity tensor:PATH` beside a trace.
pub fn tensor_path(input: &Loaded, quantity: &str) -> Option<PathBuf> {
    match input {
        Loaded::Tensor(t) => Some(t.path.clone()),
        Loaded::Trace(_) => quantity.strip_prefix("tensor:").map(PathBuf::from),
        _ => None,
    }
}

/// Whether a view that reads an access tensor can show `input`.
pub fn accepts_tensor(input: &Loaded, quantity: &str, view: &str) -> Result<()> {
    tensor_path(input, quantity).map(|_| ()).ok_or_else(|| {
        Error::Invalid(format!(
            "the {view} view needs an element access tensor (.npy, or --quantity tensor:PATH.npy beside a trace)"
        ))
    })
}
