//! What the three communication-matrix views share (paper 001 Figs.
//! 12–16): parameters, the matrices of the sliding windows, the block
//! aggregation that keeps cells at least a pixel (and at most
//! `max_side` per side), the colour range over the whole animation and
//! the clipping, and the task axes.
//!
//! The views: [`CommView`] in the styles of [`super::comm_density`] (heat
//! map), [`super::comm_perspective`] (3D bars) and
//! [`super::comm_contour`] (isolines).

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::comm::{self, CommMatrices, Level, Quantity};
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::pick::Pick;
use crate::scene::{Label, LabelAlign, Scene, Segment};

/// How one of the communication views draws the matrix.
pub trait CommStyle: Send + Sync + 'static {
    const NAME: &'static str;
    const ABOUT: &'static str;
    /// Whether the panel offers contour levels.
    const CONTOUR: bool = false;
    fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene>;
}

/// A communication view drawn in style `K`: the parameters, analyses,
/// animation and panel all share.
pub struct CommView<K: CommStyle>(PhantomData<fn() -> K>);

impl<K: CommStyle> View for CommView<K> {
    const NAME: &'static str = K::NAME;
    const ABOUT: &'static str = K::ABOUT;
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = PARAMS;
    type Params = CommParams;
    type Data = CommData;

    fn accepts(input: &Loaded, _spec: &Resolved, p: &CommParams) -> Result<()> {
        accepts(input, K::NAME, p)
    }
    fn compute(input: &Loaded, spec: &Resolved, p: &CommParams) -> Result<CommData> {
        compute(input, spec, K::NAME, p)
    }
    fn data_key(p: &CommParams) -> serde_json::Value {
        serde_json::json!({ "level": p.level, "windows": p.windows })
    }
    fn animation(d: &CommData, _p: &CommParams) -> Animation {
        Animation {
            steps: d.m.windows.len().max(1),
            stride: 1,
        }
    }
    fn step_at(d: &CommData, _p: &CommParams, t: Time) -> Option<usize> {
        Some(super::step_in_bins(
            &d.m.edges,
            t,
            0,
            d.m.windows.len().max(1),
        ))
    }
    fn build(d: &CommData, spec: &Resolved, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
        K::build(d, &spec.colormap, p, ctx)
    }
    fn panel(ui: &mut egui::Ui, p: &mut CommParams) {
        panel(ui, p, K::CONTOUR)
    }
}

/// Parameters of the communication views.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommParams {
    /// messages or bytes.
    pub quantity: String,
    /// Tasks: thread, process or node.
    pub level: String,
    /// Sliding windows over the time window (1: the whole window).
    pub windows: usize,
    /// Only cells with values in [lo, hi] are drawn, the colours span it
    /// (empty: the data's range over all windows).
    pub clip: Vec<f64>,
    /// Contour levels.
    pub levels: usize,
    /// Level of detail: at most this many cells per side (blocks of tasks
    /// add up beyond).
    pub max_side: usize,
}

impl Default for CommParams {
    fn default() -> Self {
        CommParams {
            quantity: "messages".into(),
            level: "thread".into(),
            windows: 1,
            clip: Vec::new(),
            levels: 5,
            max_side: 1024,
        }
    }
}

const PARAMS: &[ParamDoc] = &[
    ParamDoc {
        key: "quantity",
        help: "messages or bytes [messages]",
    },
    ParamDoc {
        key: "level",
        help: "tasks are threads, processes or nodes of the location hierarchy [thread]",
    },
    ParamDoc {
        key: "windows",
        help: "sliding windows over the time window; the animation steps through them [1]",
    },
    ParamDoc {
        key: "clip",
        help: "value range [lo,hi]: only cells inside are drawn, colours span it [the data's]",
    },
    ParamDoc {
        key: "levels",
        help: "contour levels (contour view) [5]",
    },
    ParamDoc {
        key: "max_side",
        help: "level of detail: at most this many cells per side, blocks of tasks add up beyond [1024]",
    },
];

/// The matrices of a trace.
pub struct CommData {
    pub m: CommMatrices,
    pub quantity: Quantity,
}

/// Checks the parameters that do not need the trace.
pub fn check(p: &CommParams) -> Result<(Level, Quantity)> {
    let level = Level::parse(&p.level)?;
    let q = Quantity::parse(&p.quantity)?;
    if p.windows == 0 {
        return Err(Error::Invalid("windows must be at least 1".into()));
    }
    if p.max_side < 2 {
        return Err(Error::Invalid("max_side must be at least 2".into()));
    }
    match p.clip.as_slice() {
        [] => {}
        [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi => {}
        other => {
            return Err(Error::Invalid(format!(
                "clip must be [lo, hi] with lo < hi, not {other:?}"
            )));
        }
    }
    Ok((level, q))
}

fn accepts(input: &Loaded, view: &str, p: &CommParams) -> Result<()> {
    let t = super::inputs::trace(input, view)?;
    check(p)?;
    if t.messages.is_empty() {
        return Err(Error::Invalid(format!(
            "the {view} view needs messages, and this trace has none"
        )));
    }
    comm::tasks(t, Level::parse(&p.level)?).map(|_| ())
}

fn compute(input: &Loaded, spec: &Resolved, view: &str, p: &CommParams) -> Result<CommData> {
    let t = super::inputs::trace(input, view)?;
    let (level, quantity) = check(p)?;
    Ok(CommData {
        m: comm::comm_matrices(t, spec.t0, spec.t1, level, p.windows)?,
        quantity,
    })
}

/// One window's matrix, aggregated for display.
pub struct Grid {
    /// Tasks per cell side.
    pub block: usize,
    /// Cells per side.
    pub side: usize,
    /// Row-major values (row: sender).
    pub values: Vec<f64>,
    /// The colour range (clip, or 0 to the largest cell of any window).
    pub lo: f64,
    pub hi: f64,
    pub clipped: bool,
    /// The window shown, and its bounds.
    pub window: usize,
    pub t0: u64,
    pub t1: u64,
}

/// The matrix of window `step` in blocks so that at most `max_side`
/// cells lie on a side; the colour range covers every window.
pub fn grid(d: &CommData, p: &CommParams, step: usize, max_side: usize) -> Result<Grid> {
    let m = &d.m;
    let n = m.size();
    if n == 0 {
        return Err(Error::Invalid(
            "the communication matrix has no tasks".into(),
        ));
    }
    let block = comm::block_for(n, max_side.min(p.max_side).max(2));
    let w = step.min(m.windows.len().saturating_sub(1));
    let cells = m.windows.get(w).map(Vec::as_slice).unwrap_or(&[]);
    let (side, values) = m.blocks(cells, d.quantity, block);
    let (lo, hi, clipped) = match p.clip.as_slice() {
        [lo, hi] => (*lo, *hi, true),
        _ => {
            // one scale for the whole animation
            let hi = m
                .windows
                .iter()
                .map(|c| {
                    m.blocks(c, d.quantity, block)
                        .1
                        .into_iter()
                        .fold(0.0, f64::max)
                })
                .fold(0.0, f64::max);
            (0.0, hi.max(1.0), false)
        }
    };
    Ok(Grid {
        block,
        side,
        values,
        lo,
        hi,
        clipped,
        window: w,
        t0: m.edges.get(w).copied().unwrap_or(m.t0),
        t1: m.edges.get(w + 1).copied().unwrap_or(m.t1),
    })
}

impl Grid {
    /// Whether a cell's value is drawn (non-zero and inside the clip range).
    pub fn shown(&self, v: f64) -> bool {
        v > 0.0 && (!self.clipped || (v >= self.lo && v <= self.hi))
    }

    /// `v` on the colour range, 0..1.
    pub fn unit(&self, v: f64) -> f32 {
        (((v - self.lo) / (self.hi - self.lo).max(1e-300)).clamp(0.0, 1.0)) as f32
    }
}

pub fn unit(q: Quantity) -> Unit {
    match q {
        Quantity::Messages => Unit::Count("messages".into()),
        Quantity::Bytes => Unit::Bytes,
    }
}

/// "thread 3 (rank 3)" or "threads 64–127" for a cell's side.
pub fn tasks_of(d: &CommData, g: &Grid, cell: usize) -> String {
    let n = d.m.size();
    let (a, b) = (cell * g.block, ((cell + 1) * g.block).min(n));
    let what = d.m.level.name();
    if b <= a + 1 {
        match d.m.names.get(a) {
            Some(name) if !name.is_empty() => format!("{what} {a} ({name})"),
            _ => format!("{what} {a}"),
        }
    } else {
        let plural = if what == "process" {
            "processes"
        } else {
            "threads"
        };
        let plural = if what == "node" { "nodes" } else { plural };
        format!("{plural} {a}–{}", b - 1)
    }
}

/// A cell's hover text: sender and receiver tasks, value, window.
pub fn cell_text(d: &CommData, g: &Grid, r: usize, c: usize, v: f64) -> String {
    format!(
        "from {}\nto {}\n{}\n{}",
        tasks_of(d, g, r),
        tasks_of(d, g, c),
        axes::format_value(v, &unit(d.quantity), g.hi, 0.0),
        window_text(d, g)
    )
}

/// Hover picks for the shown cells of a matrix drawn over x ∈ [0, side],
/// y ∈ [−side, 0] (at most 250,000: beyond, none), and the selected
/// thread's row and column framed.
pub fn cell_picks(scene: &mut Scene, d: &CommData, g: &Grid, selected: Option<usize>) {
    let shown = g.values.iter().filter(|&&v| g.shown(v)).count();
    let thread = d.m.level == Level::Thread;
    if shown <= 250_000 {
        for r in 0..g.side {
            for c in 0..g.side {
                let v = g.values[r * g.side + c];
                if !g.shown(v) {
                    continue;
                }
                let (x, y) = (c as f32, -(r as f32));
                scene.picks.push(Pick::rect(
                    [x, y - 1.0],
                    [x + 1.0, y],
                    cell_text(d, g, r, c, v),
                    (thread && g.block == 1).then_some(r),
                ));
            }
        }
    }
    if let Some(sel) = selected.filter(|&s| thread && s < d.m.size()) {
        let (cell, s) = ((sel / g.block) as f32, g.side as f32);
        scene.frame_rect(
            [0.0, -cell - 1.0],
            [s, -cell],
            0.5,
            super::moments::SELECTED,
        );
        scene.frame_rect([cell, -s], [cell + 1.0, 0.0], 0.5, super::moments::SELECTED);
        scene.key.push(crate::scene::KeyEntry {
            mark: crate::scene::KeyMark::Line,
            color: super::moments::SELECTED,
            text: format!("selected: thread {sel} (its row and column)"),
        });
    }
}

/// "16 processes", "4,096 threads (8 × 8 per cell)", for titles.
pub fn tasks_text(d: &CommData, g: &Grid) -> String {
    let n = d.m.size();
    let what = match d.m.level {
        Level::Thread => "threads",
        Level::Process => "processes",
        Level::Node => "nodes",
    };
    if g.block > 1 {
        format!("{n} {what}, blocks of {b} × {b} per cell", b = g.block)
    } else {
        format!("{n} {what}")
    }
}

/// "window 3 of 20: 1.2 ms – 1.8 ms", or the whole window.
pub fn window_text(d: &CommData, g: &Grid) -> String {
    let range = super::moments::window_text(g.t0, g.t1);
    if d.m.windows.len() > 1 {
        format!("window {} of {}: {range}", g.window + 1, d.m.windows.len())
    } else {
        range
    }
}

/// Task ids at integer ticks along a side of `side` cells of `block`
/// tasks: (task, position of its cell's centre in cells).
pub fn task_ticks(n: usize, block: usize, max_ticks: usize) -> Vec<(u64, f32)> {
    axes::integer_ticks(0, n.max(1) as u64 - 1, max_ticks)
        .into_iter()
        .map(|q| (q, (q as f32 + 0.5) / block as f32))
        .collect()
}

/// The two task axes of a 2D matrix drawn over x ∈ [0, side] (receiver)
/// and y ∈ [−side, 0] (sender, row 0 on top).
pub fn axes_2d(
    lines: &mut Vec<Segment>,
    labels: &mut Vec<Label>,
    d: &CommData,
    g: &Grid,
    ink: [f32; 4],
) {
    let s = g.side as f32;
    let n = d.m.size();
    let tick = s * 0.012;
    let level = d.m.level.name();
    for (q, pos) in task_ticks(n, g.block, 10) {
        // sender: left side, row q from the top
        lines.push(Segment {
            a: [0.0, -pos, 0.3],
            b: [-tick, -pos, 0.3],
            color: ink,
        });
        labels.push(
            Label::world(q.to_string(), [-tick, -pos, 0.0], 12.0, ink)
                .aligned(LabelAlign::RightCenter)
                .priority(1),
        );
        lines.push(Segment {
            a: [pos, -s, 0.3],
            b: [pos, -s - tick, 0.3],
            color: ink,
        });
        labels.push(
            Label::world(q.to_string(), [pos, -s - tick, 0.0], 12.0, ink)
                .aligned(LabelAlign::CenterTop)
                .priority(1),
        );
    }
    labels.push(
        Label::world(
            format!("receiver {level}"),
            [s / 2.0, -s - tick, 0.0],
            13.0,
            ink,
        )
        .aligned(LabelAlign::AxisTitleBelow)
        .priority(0),
    );
    labels.push(
        Label::world(format!("sender {level}"), [0.0, -s / 2.0, 0.0], 13.0, ink)
            .aligned(LabelAlign::AxisTitleLeft)
            .priority(0),
    );
    // the frame
    for (a, b) in [
        ([0.0, 0.0], [s, 0.0]),
        ([s, 0.0], [s, -s]),
        ([s, -s], [0.0, -s]),
        ([0.0, -s], [0.0, 0.0]),
    ] {
        lines.push(Segment {
            a: [a[0], a[1], 0.3],
            b: [b[0], b[1], 0.3],
            color: ink,
        });
    }
}

/// Pixels on the shorter side of a 2D chart in an image (0: unknown).
pub fn chart_side(width: u32, height: u32) -> usize {
    if width == 0 || height == 0 {
        return usize::MAX;
    }
    let m = crate::scene::Margins::default();
    let w = width as f32 - m.left - m.right;
    let h = height as f32 - m.top - m.bottom;
    w.min(h).max(16.0) as usize
}

/// The panel shared by the three views.
fn panel(ui: &mut egui::Ui, p: &mut CommParams, contour: bool) {
    egui::ComboBox::from_label("quantity")
        .selected_text(p.quantity.clone())
        .show_ui(ui, |ui| {
            for q in ["messages", "bytes"] {
                ui.selectable_value(&mut p.quantity, q.to_string(), q);
            }
        });
    egui::ComboBox::from_label("tasks")
        .selected_text(p.level.clone())
        .show_ui(ui, |ui| {
            for q in ["thread", "process", "node"] {
                ui.selectable_value(&mut p.level, q.to_string(), q);
            }
        });
    ui.add(egui::Slider::new(&mut p.windows, 1..=200).text("sliding windows"));
    if contour {
        ui.add(egui::Slider::new(&mut p.levels, 1..=12).text("contour levels"));
    }
}
