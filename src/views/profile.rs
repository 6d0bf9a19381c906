//! What the two profile views share (paper 004, PerfVisS; ParaProf's 3D
//! view): parameters, the metrics by name, the colour scale (normalised:
//! the hottest cell is the top of the map; raw: values in their unit over
//! a fixed range so that runs compare), the level-of-detail blocks (max of
//! each block, so peaks survive) and the linked cursor.
//!
//! The views: [`ProfileView`] in the styles of [`super::profile_terrain`]
//! (3D) and [`super::profile_heatmap`] (2D overview with min/max bars and
//! ranked procedures).

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::matrices::{TRACE_PROFILE_METRICS, trace_profile};
use crate::error::{Error, Result};
use crate::model::{ProfileMatrix, RowKind};
use crate::readers::Loaded;
use crate::scene::Scene;
use crate::scene::axes::Unit;

/// How one of the profile views draws the profile.
pub trait ProfileStyle: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    /// Whether the panel offers the overview reduction.
    const OVERVIEW: bool = false;
    fn build(d: &ProfileData, colormap: &str, q: &ProfileParams, ctx: BuildCtx) -> Result<Scene>;
}

/// The profile and its metrics A (height) and B (colour).
pub struct ProfileData {
    pub p: Arc<ProfileMatrix>,
    pub a: usize,
    pub b: usize,
}

/// A profile view drawn in style `K`: parameters, inputs and panel shared.
pub struct ProfileView<K: ProfileStyle>(PhantomData<fn() -> K>);

impl<K: ProfileStyle> View for ProfileView<K> {
    const NAME: &'static str = K::NAME;
    const ABOUT: &'static str = K::ABOUT;
    const COLORMAP: &'static str = "heat";
    const PARAMS: &'static [ParamDoc] = PARAMS;
    type Params = ProfileParams;
    type Data = ProfileData;

    fn accepts(input: &Loaded, _spec: &Resolved, q: &ProfileParams) -> Result<()> {
        accepts(input, K::NAME, q)
    }
    fn compute(input: &Loaded, _spec: &Resolved, q: &ProfileParams) -> Result<ProfileData> {
        let p = profile(input, K::NAME)?;
        let (a, b) = check(&p, q)?;
        Ok(ProfileData {
            p: Arc::new(p.into_owned()),
            a,
            b,
        })
    }
    fn data_key(q: &ProfileParams) -> serde_json::Value {
        serde_json::json!({ "metric": q.metric, "color_metric": q.color_metric })
    }
    fn build(d: &ProfileData, spec: &Resolved, q: &ProfileParams, ctx: BuildCtx) -> Result<Scene> {
        K::build(d, &spec.colormap, q, ctx)
    }
    fn panel(ui: &mut egui::Ui, q: &mut ProfileParams) {
        panel(ui, q, K::OVERVIEW)
    }
}

/// Parameters of the profile views.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileParams {
    /// Metric A (terrain height, heat-map colour); empty: the primary one.
    pub metric: String,
    /// Metric B (terrain colour); empty: metric A.
    pub color_metric: String,
    /// Normalised (the hottest cell is 1) or raw values in their unit.
    pub normalize: bool,
    /// Raw colour range [lo, hi] (empty: 0 to the largest value).
    pub range: Vec<f64>,
    /// Overview: runs of more than `skip` zero rows are left out.
    pub skip: usize,
    /// Overview: rows per bin.
    pub bin: usize,
    /// Overview: binned rows combine by max or sum.
    pub by: String,
    /// Overview: strips side by side.
    pub strips: usize,
    /// Ranked procedures listed.
    pub top: usize,
    /// The linked cursor [row, column] (profile indices), empty: none.
    pub cursor: Vec<usize>,
    /// Terrain level of detail: at most this many grid points.
    pub max_cells: usize,
}

impl Default for ProfileParams {
    fn default() -> Self {
        ProfileParams {
            metric: String::new(),
            color_metric: String::new(),
            normalize: true,
            range: Vec::new(),
            skip: 4,
            bin: 1,
            by: "max".into(),
            strips: 1,
            top: 10,
            cursor: Vec::new(),
            max_cells: 262_144,
        }
    }
}

const PARAMS: &[ParamDoc] = &[
    ParamDoc {
        key: "metric",
        help: "metric A: terrain height and heat-map colour [the primary metric]",
    },
    ParamDoc {
        key: "color_metric",
        help: "metric B: terrain colour [metric A]",
    },
    ParamDoc {
        key: "normalize",
        help: "true: the hottest cell is the top of the colour map; false: raw values in their unit [true]",
    },
    ParamDoc {
        key: "range",
        help: "raw colour range [lo,hi] (with normalize=false) [0 to the largest value]",
    },
    ParamDoc {
        key: "skip",
        help: "heat map overview: runs of more than this many zero rows are left out [4]",
    },
    ParamDoc {
        key: "bin",
        help: "heat map overview: rows per bin (more when rows outnumber pixels) [1]",
    },
    ParamDoc {
        key: "by",
        help: "heat map overview: binned rows combine by max or sum [max]",
    },
    ParamDoc {
        key: "strips",
        help: "heat map overview: strips side by side [1]",
    },
    ParamDoc {
        key: "top",
        help: "ranked procedures (functions) listed beside the heat map [10]",
    },
    ParamDoc {
        key: "cursor",
        help: "linked cursor [row,column] highlighted in both views (profile indices) [none]",
    },
    ParamDoc {
        key: "max_cells",
        help: "terrain level of detail: at most this many grid points, blocks keep their max [262144]",
    },
];

/// The profile of an input: the profile itself, or a trace's function ×
/// location exclusive time and visits ([`trace_profile`]); an error names
/// what the view needs.
pub fn profile<'a>(input: &'a Loaded, view: &str) -> Result<Cow<'a, ProfileMatrix>> {
    match input {
        Loaded::Profile(p) => Ok(Cow::Borrowed(p)),
        Loaded::Trace(t) if !t.intervals.is_empty() => Ok(Cow::Owned(trace_profile(t))),
        _ => Err(Error::Invalid(format!(
            "the {view} view needs a profile (TAU profile.* files, a line-profile table) or a trace with state intervals"
        ))),
    }
}

/// Metric `name` (empty: `default`), or an error listing the metrics.
pub fn metric_index(p: &ProfileMatrix, name: &str, default: usize) -> Result<usize> {
    if name.is_empty() {
        return Ok(default);
    }
    p.metrics
        .iter()
        .position(|m| m.name == name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "no metric '{name}' in this profile (metrics: {})",
                p.metrics
                    .iter()
                    .map(|m| m.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// The checked metrics A and B.
/// The checks of the parameters that need no profile.
fn check_params(q: &ProfileParams) -> Result<()> {
    match q.range.as_slice() {
        [] => {}
        [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => {}
        other => {
            return Err(Error::Invalid(format!(
                "range must be [lo, hi] with lo < hi, not {other:?}"
            )));
        }
    }
    if !matches!(q.by.as_str(), "max" | "sum") {
        return Err(Error::Invalid(format!(
            "by must be max or sum, not '{}'",
            q.by
        )));
    }
    if q.bin == 0 || q.strips == 0 || q.strips > 64 {
        return Err(Error::Invalid(
            "bin must be at least 1 and strips 1 to 64".into(),
        ));
    }
    if q.max_cells < 4 {
        return Err(Error::Invalid("max_cells must be at least 4".into()));
    }
    if cursor(q).is_none() && !q.cursor.is_empty() {
        return Err(Error::Invalid(format!(
            "cursor must be [row, column], not {:?}",
            q.cursor
        )));
    }
    Ok(())
}

/// The checked metrics A and B.
pub fn check(p: &ProfileMatrix, q: &ProfileParams) -> Result<(usize, usize)> {
    check_params(q)?;
    if p.num_rows() == 0 || p.num_columns() == 0 {
        return Err(Error::Invalid(format!(
            "the profile is empty ({} rows × {} columns)",
            p.num_rows(),
            p.num_columns()
        )));
    }
    let a = metric_index(p, &q.metric, p.primary_metric())?;
    let b = metric_index(p, &q.color_metric, a)?;
    if let Some((r, c)) = cursor(q)
        && (r >= p.num_rows() || c >= p.num_columns())
    {
        return Err(Error::Invalid(format!(
            "cursor [{r}, {c}] is outside the {} × {} profile",
            p.num_rows(),
            p.num_columns()
        )));
    }
    Ok((a, b))
}

/// Whether a view can show `input`: a profile is checked in full; a trace
/// by its parameters only (its profile is built once, by the analyses).
fn accepts(input: &Loaded, view: &str, q: &ProfileParams) -> Result<()> {
    match input {
        Loaded::Trace(t) if !t.intervals.is_empty() => {
            check_params(q)?;
            for m in [&q.metric, &q.color_metric] {
                if !m.is_empty() && !TRACE_PROFILE_METRICS.contains(&m.as_str()) {
                    return Err(Error::Invalid(format!(
                        "no metric '{m}' in a trace's profile (metrics: {})",
                        TRACE_PROFILE_METRICS.join(", ")
                    )));
                }
            }
            Ok(())
        }
        _ => check(&*profile(input, view)?, q).map(|_| ()),
    }
}

pub fn cursor(q: &ProfileParams) -> Option<(usize, usize)> {
    match q.cursor.as_slice() {
        [r, c] => Some((*r, *c)),
        _ => None,
    }
}

/// A colour scale: the colour-map position of a value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub normalized: bool,
}

impl Scale {
    /// The scale of `values` (finite ones) under the parameters.
    pub fn of(values: &[f64], q: &ProfileParams) -> Scale {
        let max = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        match (q.normalize, q.range.as_slice()) {
            (false, [lo, hi]) => Scale {
                lo: *lo,
                hi: *hi,
                normalized: false,
            },
            (normalized, _) => Scale {
                lo: 0.0,
                hi: if max > 0.0 { max } else { 1.0 },
                normalized,
            },
        }
    }
    pub fn at(&self, v: f64) -> f32 {
        (((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)) as f32
    }
    /// The legend range and unit: 0..1 of the hottest cell, or the values.
    pub fn legend(&self, unit: &str) -> (f64, f64, Unit) {
        if self.normalized {
            (0.0, 1.0, Unit::Fraction)
        } else {
            (self.lo, self.hi, Unit::from_name(unit))
        }
    }
}

/// What a row is called on an axis.
pub fn row_noun(p: &ProfileMatrix) -> &'static str {
    match p.row_kind {
        RowKind::Line => "source line",
        RowKind::Function => "function",
    }
}

/// What a column is called on an axis.
pub fn column_noun(p: &ProfileMatrix) -> &'static str {
    match p.row_kind {
        RowKind::Line => "processor",
        RowKind::Function => "thread",
    }
}

/// A row label for ticks: the line number, or the function name cut to
/// `max` characters.
pub fn row_label(p: &ProfileMatrix, r: usize, max: usize) -> String {
    match p.row_kind {
        RowKind::Line => p.row_ids.get(r).map(|i| i.to_string()).unwrap_or_default(),
        RowKind::Function => {
            let n = p.rows.get(r).map(String::as_str).unwrap_or("");
            if n.chars().count() > max {
                let cut: String = n.chars().take(max.saturating_sub(1)).collect();
                format!("{cut}…")
            } else {
                n.to_string()
            }
        }
    }
}

/// `values` (rows × cols) in blocks of `br × bc` keeping each block's
/// maximum: `(rows', cols', values')`.
pub fn block_max(
    values: &[f64],
    rows: usize,
    cols: usize,
    br: usize,
    bc: usize,
) -> (usize, usize, Vec<f64>) {
    let (br, bc) = (br.max(1), bc.max(1));
    let (r2, c2) = (rows.div_ceil(br), cols.div_ceil(bc));
    let mut out = vec![f64::NEG_INFINITY; r2 * c2];
    for r in 0..rows {
        for c in 0..cols {
            let o = &mut out[(r / br) * c2 + c / bc];
            *o = o.max(values[r * cols + c]);
        }
    }
    (r2, c2, out)
}

/// The panel shared by both views.
fn panel(ui: &mut egui::Ui, q: &mut ProfileParams, heatmap: bool) {
    ui.checkbox(&mut q.normalize, "normalised (hottest cell = top colour)");
    if heatmap {
        ui.add(egui::Slider::new(&mut q.skip, 0..=100).text("skip zero runs longer than"));
        ui.add(egui::Slider::new(&mut q.bin, 1..=64).text("rows per bin"));
        ui.add(egui::Slider::new(&mut q.strips, 1..=32).text("strips"));
        ui.add(egui::Slider::new(&mut q.top, 0..=30).text("ranked procedures"));
    }
    let mut on = cursor(q).is_some();
    let (mut r, mut c) = cursor(q).unwrap_or((0, 0));
    ui.checkbox(&mut on, "cursor");
    if on {
        ui.add(egui::DragValue::new(&mut r).prefix("row "));
        ui.add(egui::DragValue::new(&mut c).prefix("column "));
        q.cursor = vec![r, c];
    } else {
        q.cursor.clear();
    }
}
