//! The views, and the one registry the command line, the window, view-state
//! files, snapshot tests and glTF export learn them from.
//!
//! A view is one module implementing [`View`]: its typed parameters (a
//! serde struct with defaults), the analysis inputs it computes from a
//! trace or profile ([`View::compute`]), its pure scene builder
//! ([`View::build`]: title, legend, axes, key and level of detail
//! included), and its egui panel. [`REGISTRY`] holds one line per view.
//!
//! Adding a view: write `src/views/NAME.rs` implementing [`View`] and add
//! `&Registered::<NAME::Type>::NEW` to [`REGISTRY`]. Nothing in the CLI
//! or the window names a view.

pub mod comm;
pub mod comm_contour;
pub mod comm_density;
pub mod comm_perspective;
pub mod displacement;
pub mod hypercube;
pub mod inputs;
pub mod isosurface;
pub mod kiviat;
pub mod mesh;
pub mod moments;
pub mod moments_3d;
pub mod network;
pub mod perf_image;
pub mod profile;
pub mod profile_heatmap;
pub mod profile_terrain;
pub mod scatter;
pub mod signals;
pub mod state;
pub mod topology;

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use inputs::Resolved;
pub use state::{DataSpec, ViewState};

use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::Scene;
use crate::scene::chart::Chart;

/// One documented parameter of a view (`--param key=value`).
#[derive(Debug, Clone, Copy)]
pub struct ParamDoc {
    pub key: &'static str,
    pub help: &'static str,
}

/// What a view's scene is built for: the animation step and the image
/// size in pixels (level of detail never draws rows thinner than a pixel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildCtx {
    /// The animation position (first time bin shown); 0 for static views.
    pub step: usize,
    pub width: u32,
    pub height: u32,
    /// While an animation plays: the most triangles a frame should draw
    /// (views that can lower their detail do, and say so in the title);
    /// `None`: full detail (paused, exports, `render`).
    pub triangle_budget: Option<usize>,
    /// The time cursor shared by all views (ns), when one is set: views
    /// over time show it (the step that holds it, statistics up to it);
    /// `step` is already the step [`View::step_at`] gives for it.
    pub cursor: Option<Time>,
    /// The selected processor (location index), highlighted by the views
    /// that draw processors.
    pub selected: Option<usize>,
}

impl BuildCtx {
    /// Full detail at `width × height`, step 0, no cursor, no selection.
    pub fn still(width: u32, height: u32) -> BuildCtx {
        BuildCtx {
            step: 0,
            width,
            height,
            triangle_budget: None,
            cursor: None,
            selected: None,
        }
    }
}

/// The step of an animation over time bins with `edges` (ns) that shows
/// time `t`: the bin holding `t` (the first or last outside the edges),
/// less `lead` (the position of the cursor's bin in a slide of bins),
/// within `0..steps`.
pub fn step_in_bins(edges: &[Time], t: Time, lead: usize, steps: usize) -> usize {
    let bins = edges.len().saturating_sub(1).max(1);
    let b = edges
        .get(1..)
        .map_or(0, |e| e.partition_point(|&x| x <= t))
        .min(bins - 1);
    b.saturating_sub(lead).min(steps.saturating_sub(1))
}

/// Triangles per frame during playback: what a software rasterizer draws
/// at 10 frames/s (lavapipe's geometry stage: about 3 M triangles/s on one
/// thread) and what a hardware GPU draws without effort.
pub fn playback_budget(software: bool) -> usize {
    if software { 250_000 } else { 20_000_000 }
}

/// The animation of a view: `steps` positions, of which successive frames
/// may skip at most `stride` (its width, so no bin is ever skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Animation {
    pub steps: usize,
    pub stride: usize,
}

impl Animation {
    /// A view without animation.
    pub const STILL: Animation = Animation {
        steps: 1,
        stride: 1,
    };

    /// The positions of `frames` frames from `start` to the last step,
    /// evenly spaced, with more frames than asked when the spacing would
    /// exceed the stride (returned with a note).
    pub fn positions(&self, frames: usize, start: usize) -> (Vec<usize>, Option<String>) {
        let last = self.steps.saturating_sub(1);
        let start = start.min(last);
        let span = last - start;
        let need = span.div_ceil(self.stride.max(1)) + 1;
        let n = frames.max(1);
        let (n, note) = if n > 1 && n < need {
            (
                need,
                Some(format!(
                    "{frames} frames would skip bins (width {}); rendering {need}",
                    self.stride
                )),
            )
        } else {
            (n, None)
        };
        let pos = (0..n)
            .map(|i| {
                if n == 1 {
                    start
                } else {
                    start + (i * span + (n - 1) / 2) / (n - 1)
                }
            })
            .collect();
        (pos, note)
    }
}

/// A view: one module, one registry line.
pub trait View: Send + Sync + 'static {
    /// The name on the command line, in view-state files and the window.
    const NAME: &'static str;
    /// One line for `render --help` and the window.
    const ABOUT: &'static str;
    /// The colour map unless the user names one.
    const COLORMAP: &'static str;
    /// The documented keys of [`View::Params`].
    const PARAMS: &'static [ParamDoc];
    /// The view's own parameters, with defaults (`#[serde(default)]`).
    type Params: Serialize + DeserializeOwned + Default + Clone + Send + Sync + 'static;
    /// What [`View::compute`] derives from the input (analysis results).
    type Data: Send + Sync + 'static;

    /// Whether this view can show `input` with `spec`; the reason if not.
    fn accepts(input: &Loaded, spec: &Resolved, p: &Self::Params) -> Result<()>;
    /// The analyses behind the view (the heavy part, run once per input,
    /// data specification and [`View::data_key`]).
    fn compute(input: &Loaded, spec: &Resolved, p: &Self::Params) -> Result<Self::Data>;
    /// The parameters [`View::compute`] depends on (others only rebuild).
    fn data_key(_p: &Self::Params) -> Value {
        Value::Null
    }
    /// The view's animation over `data`.
    fn animation(_data: &Self::Data, _p: &Self::Params) -> Animation {
        Animation::STILL
    }
    /// Views animated over time: the step that shows time `t` (ns), so
    /// that they follow the shared time cursor; `None`: the steps are not
    /// times (regions, tensor intervals) or the view is still.
    fn step_at(_data: &Self::Data, _p: &Self::Params, _t: Time) -> Option<usize> {
        None
    }
    /// The scene (pure).
    fn build(data: &Self::Data, spec: &Resolved, p: &Self::Params, ctx: BuildCtx) -> Result<Scene>;
    /// The view's controls in the window.
    fn panel(ui: &mut egui::Ui, p: &mut Self::Params);
    /// 2D plot views: the chart behind the scene (written as SVG).
    fn chart(_data: &Self::Data, _spec: &Resolved, _p: &Self::Params) -> Option<Result<Chart>> {
        None
    }
    /// Whether [`View::compute`] left its results on the GPU (given a
    /// trace resident there, [`Resolved::gpu`]) for the renderer to draw
    /// without a read-back.
    fn on_gpu(_data: &Self::Data) -> bool {
        false
    }
}

/// Analysis results of a view, type-erased for the registry.
pub type ViewData = Arc<dyn Any + Send + Sync>;

/// A registered view, as the CLI, the window and the exports see it.
pub trait ViewClass: Send + Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn colormap(&self) -> &'static str;
    fn params_doc(&self) -> &'static [ParamDoc];
    /// The default parameters as JSON.
    fn default_params(&self) -> Value;
    /// Checks parameters (unknown keys, wrong types) and fills defaults.
    fn normalize(&self, p: &Value) -> Result<Value>;
    fn accepts(&self, input: &Loaded, spec: &Resolved, p: &Value) -> Result<()>;
    fn compute(&self, input: &Loaded, spec: &Resolved, p: &Value) -> Result<ViewData>;
    fn data_key(&self, p: &Value) -> Value;
    fn animation(&self, data: &ViewData, p: &Value) -> Result<Animation>;
    /// The step showing time `t` (views animated over time).
    fn step_at(&self, data: &ViewData, p: &Value, t: Time) -> Result<Option<usize>>;
    fn build(&self, data: &ViewData, spec: &Resolved, p: &Value, ctx: BuildCtx) -> Result<Scene>;
    /// Shows the view's controls; true when a parameter changed.
    fn panel(&self, ui: &mut egui::Ui, p: &mut Value) -> bool;
    /// The chart of a 2D plot view (`None`: the view is not a chart).
    fn chart(&self, data: &ViewData, spec: &Resolved, p: &Value) -> Option<Result<Chart>>;
    /// Whether the results stayed on the GPU ([`View::on_gpu`]).
    fn on_gpu(&self, data: &ViewData) -> bool;
}

/// The [`ViewClass`] of a [`View`].
pub struct Registered<V: View>(PhantomData<fn() -> V>);

impl<V: View> Registered<V> {
    pub const NEW: Registered<V> = Registered(PhantomData);

    fn typed(p: &Value) -> Result<V::Params> {
        let p = if p.is_null() {
            Value::Object(Default::default())
        } else {
            p.clone()
        };
        serde_json::from_value(p).map_err(|e| {
            Error::Invalid(format!(
                "view {}: {e} (parameters: {})",
                V::NAME,
                V::PARAMS
                    .iter()
                    .map(|d| d.key)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    fn data(d: &ViewData) -> Result<&V::Data> {
        d.downcast_ref::<V::Data>().ok_or_else(|| {
            Error::Invalid(format!(
                "view {}: analysis results of another view",
                V::NAME
            ))
        })
    }
}

fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

impl<V: View> ViewClass for Registered<V> {
    fn name(&self) -> &'static str {
        V::NAME
    }
    fn about(&self) -> &'static str {
        V::ABOUT
    }
    fn colormap(&self) -> &'static str {
        V::COLORMAP
    }
    fn params_doc(&self) -> &'static [ParamDoc] {
        V::PARAMS
    }
    fn default_params(&self) -> Value {
        to_json(&V::Params::default())
    }
    fn normalize(&self, p: &Value) -> Result<Value> {
        Ok(to_json(&Self::typed(p)?))
    }
    fn accepts(&self, input: &Loaded, spec: &Resolved, p: &Value) -> Result<()> {
        V::accepts(input, spec, &Self::typed(p)?)
    }
    fn compute(&self, input: &Loaded, spec: &Resolved, p: &Value) -> Result<ViewData> {
        Ok(Arc::new(V::compute(input, spec, &Self::typed(p)?)?))
    }
    fn data_key(&self, p: &Value) -> Value {
        Self::typed(p).map_or(Value::Null, |p| V::data_key(&p))
    }
    fn animation(&self, data: &ViewData, p: &Value) -> Result<Animation> {
        Ok(V::animation(Self::data(data)?, &Self::typed(p)?))
    }
    fn step_at(&self, data: &ViewData, p: &Value, t: Time) -> Result<Option<usize>> {
        Ok(V::step_at(Self::data(data)?, &Self::typed(p)?, t))
    }
    fn build(&self, data: &ViewData, spec: &Resolved, p: &Value, ctx: BuildCtx) -> Result<Scene> {
        V::build(Self::data(data)?, spec, &Self::typed(p)?, ctx)
    }
    fn chart(&self, data: &ViewData, spec: &Resolved, p: &Value) -> Option<Result<Chart>> {
        let d = match Self::data(data) {
            Ok(d) => d,
            Err(e) => return Some(Err(e)),
        };
        match Self::typed(p) {
            Ok(p) => V::chart(d, spec, &p),
            Err(e) => Some(Err(e)),
        }
    }
    fn on_gpu(&self, data: &ViewData) -> bool {
        Self::data(data).is_ok_and(V::on_gpu)
    }
    fn panel(&self, ui: &mut egui::Ui, p: &mut Value) -> bool {
        let Ok(mut typed) = Self::typed(p) else {
            return false;
        };
        V::panel(ui, &mut typed);
        let new = to_json(&typed);
        let changed = new != *p;
        *p = new;
        changed
    }
}

/// Every view, in the order the CLI and the window list them; the first
/// that accepts an input is the default.
pub static REGISTRY: &[&dyn ViewClass] = &[
    &Registered::<kiviat::Kiviat>::NEW,
    &Registered::<moments::Moments>::NEW,
    &Registered::<moments_3d::Moments3d>::NEW,
    &Registered::<isosurface::Isosurface>::NEW,
    &Registered::<displacement::Displacement>::NEW,
    &Registered::<scatter::Scatter>::NEW,
    &Registered::<comm::CommView<comm_density::CommDensity>>::NEW,
    &Registered::<comm::CommView<comm_perspective::CommPerspective>>::NEW,
    &Registered::<comm::CommView<comm_contour::CommContour>>::NEW,
    &Registered::<profile::ProfileView<profile_terrain::ProfileTerrain>>::NEW,
    &Registered::<profile::ProfileView<profile_heatmap::ProfileHeatmap>>::NEW,
    &Registered::<perf_image::PerfImage>::NEW,
    &Registered::<signals::SignalView<signals::SignalPlot>>::NEW,
    &Registered::<signals::SignalView<signals::SpectrumPlot>>::NEW,
    &Registered::<signals::SignalView<signals::CorrelationPlot>>::NEW,
    &Registered::<signals::SignalView<signals::HistogramPlot>>::NEW,
    &Registered::<signals::SignalView<signals::MarkovPlot>>::NEW,
    &Registered::<topology::Topology>::NEW,
    &Registered::<hypercube::Hypercube>::NEW,
    &Registered::<mesh::MeshView>::NEW,
];

/// The view called `name`, or an error listing the views.
pub fn find(name: &str) -> Result<&'static dyn ViewClass> {
    REGISTRY
        .iter()
        .copied()
        .find(|v| v.name() == name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "unknown view '{name}' (views: {})",
                names().join(", ")
            ))
        })
}

/// The names of all views.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|v| v.name()).collect()
}

/// Sets `key` of a view's parameters from text: JSON when it parses as
/// JSON (numbers, true/false, arrays), else a string. Unknown keys are
/// refused with the list of keys.
pub fn set_param(view: &dyn ViewClass, params: &mut Value, key: &str, raw: &str) -> Result<()> {
    let known: Vec<&str> = view.params_doc().iter().map(|d| d.key).collect();
    if !known.contains(&key) {
        return Err(Error::Invalid(format!(
            "view {} has no parameter '{key}' (parameters: {})",
            view.name(),
            known.join(", ")
        )));
    }
    let v = serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.into()));
    if !params.is_object() {
        *params = view.default_params();
    }
    if let Some(o) = params.as_object_mut() {
        o.insert(key.to_string(), v);
    }
    *params = view.normalize(params)?;
    Ok(())
}

/// The view to show: `requested` if it accepts the input, else (with a
/// note) the first view of the registry that does. An explicitly
/// requested view that cannot show the input is an error.
pub fn choose(
    requested: Option<&str>,
    input: &Loaded,
    spec: &DataSpec,
    params: &Value,
) -> Result<(&'static dyn ViewClass, Value, Option<String>)> {
    if let Some(name) = requested {
        let v = find(name)?;
        let p = v.normalize(params)?;
        v.accepts(input, &inputs::resolve(spec, input, v.colormap())?, &p)?;
        return Ok((v, p, None));
    }
    let mut reasons = Vec::new();
    for v in REGISTRY.iter().copied() {
        let p = v.default_params();
        let ok = inputs::resolve(spec, input, v.colormap()).and_then(|r| v.accepts(input, &r, &p));
        match ok {
            Ok(()) => {
                // the first choice's reason is the one a user wants to know
                let note = reasons
                    .first()
                    .map(|r| format!("showing the {} view ({r})", v.name()));
                return Ok((v, p, note));
            }
            Err(e) => reasons.push(e.to_string()),
        }
    }
    Err(Error::Invalid(format!(
        "no view can show this input ({})",
        reasons.join("; ")
    )))
}

/// Everything needed to draw one view of one input: the resolved data
/// specification, the analysis results and the parameters.
pub struct Prepared {
    pub view: &'static dyn ViewClass,
    pub spec: Resolved,
    pub params: Value,
    pub data: ViewData,
}

impl Prepared {
    /// Resolves `state` against `input` and runs the view's analyses.
    pub fn new(input: &Loaded, state: &ViewState) -> Result<Prepared> {
        Prepared::with_gpu(input, state, None)
    }

    /// [`Prepared::new`], with `input`'s trace resident on the GPU for the
    /// views that compute there ([`Prepared::on_gpu`] says whether this
    /// one did).
    pub fn with_gpu(
        input: &Loaded,
        state: &ViewState,
        gpu: Option<inputs::GpuInput>,
    ) -> Result<Prepared> {
        let view = find(&state.view)?;
        let params = view.normalize(&state.params)?;
        let mut spec = inputs::resolve(&state.data, input, view.colormap())?;
        spec.gpu = gpu;
        view.accepts(input, &spec, &params)?;
        let data = view.compute(input, &spec, &params)?;
        Ok(Prepared {
            view,
            spec,
            params,
            data,
        })
    }

    pub fn animation(&self) -> Result<Animation> {
        self.view.animation(&self.data, &self.params)
    }

    pub fn build(&self, ctx: BuildCtx) -> Result<Scene> {
        self.view.build(&self.data, &self.spec, &self.params, ctx)
    }

    /// The context of a frame: at the time cursor when one is set (the
    /// view's step that shows it, clamped into the view's window), else
    /// at `step`.
    pub fn ctx(
        &self,
        step: usize,
        cursor: Option<Time>,
        (width, height): (u32, u32),
        selected: Option<usize>,
    ) -> Result<BuildCtx> {
        let anim = self.animation()?;
        let cursor = cursor.map(|t| t.clamp(self.spec.t0, self.spec.t1));
        let step = match cursor {
            Some(t) => self.view.step_at(&self.data, &self.params, t)?,
            None => None,
        }
        .unwrap_or(step)
        .min(anim.steps.saturating_sub(1));
        Ok(BuildCtx {
            step,
            width,
            height,
            triangle_budget: None,
            cursor,
            selected,
        })
    }

    /// Whether the view's results stayed on the GPU.
    pub fn on_gpu(&self) -> bool {
        self.view.on_gpu(&self.data)
    }

    /// When the trace was resident on the GPU but this view computed on
    /// the CPU: a note saying so, for the user.
    pub fn gpu_note(&self) -> Option<String> {
        (self.spec.gpu.is_some() && !self.on_gpu()).then(|| {
            format!(
                "the {} view was computed on the CPU (on the GPU: the moments view where the adapter has f64, and the kiviat view of the busy field without --color-by, each with a busy field of processors × bins that fits one GPU storage binding)",
                self.view.name()
            )
        })
    }

    /// The chart of a 2D plot view.
    pub fn chart(&self) -> Option<Result<Chart>> {
        self.view.chart(&self.data, &self.spec, &self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_params_documented() {
        let n = names();
        let mut sorted = n.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), n.len());
        for v in REGISTRY {
            let d = v.default_params();
            let keys: Vec<&String> = d
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            for k in &keys {
                assert!(
                    v.params_doc().iter().any(|p| p.key == k.as_str()),
                    "{}: parameter {k} is not documented",
                    v.name()
                );
            }
            assert_eq!(keys.len(), v.params_doc().len(), "{}", v.name());
            assert_eq!(v.normalize(&Value::Null).unwrap(), d);
        }
        assert!(find("nope").is_err());
    }

    #[test]
    fn animation_positions_never_skip_bins() {
        let a = Animation {
            steps: 101,
            stride: 15,
        };
        let (p, note) = a.positions(3, 0);
        assert!(note.is_some());
        assert!(p.windows(2).all(|w| w[1] - w[0] <= 15), "{p:?}");
        assert_eq!((p[0], *p.last().unwrap()), (0, 100));
        let (p, note) = a.positions(20, 0);
        assert!(note.is_none() && p.len() == 20);
        assert_eq!(a.positions(1, 7).0, vec![7]);
    }
}
