//! The moment display (paper 000 Figs. 2, 3, 6; SPEC §4.6): one row per
//! processor with a grey bar of length m0 centred at m1, black bars out to
//! m1 ± m2, a tick at m1 and a thin red line of signed length m3 from m1;
//! the utilization Gantt chart (fraction of each bin in the state set)
//! beside it, both on the same time axis, processors top to bottom.
//!
//! Level of detail: never more rows than pixels of the chart (nor than
//! `max_rows`); beyond, adjacent processors share a row showing their
//! per-processor averages (m0 of the group divided by its processors; m1,
//! m2, m3 of the group's merged accumulator). The Gantt chart averages its
//! rows the same way.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{BuildCtx, ParamDoc, Resolved, View, inputs};
use crate::analysis::fields::{Field, busy_field, inverse_widths};
use crate::analysis::metric::BusyRuns;
use crate::analysis::moments::MomentAcc;
use crate::error::{Error, Result};
use crate::gpu::kernels::gantt::{Gantt, GanttShape};
use crate::gpu::kernels::tube::GpuField;
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    KeyEntry, KeyMark, Label, LabelAlign, Legend, Margins, Mesh, Projection, Scene, Segment, rgba,
};

/// The moment display view.
pub struct Moments;

/// Parameters of the display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MomentParams {
    /// Draw the utilization Gantt chart beside the moments.
    pub gantt: bool,
    /// At most this many processor rows (fewer when the image has fewer
    /// pixel rows).
    pub max_rows: usize,
}

impl Default for MomentParams {
    fn default() -> Self {
        MomentParams {
            gantt: true,
            max_rows: 65_536,
        }
    }
}

/// Per-processor accumulators, the Gantt field and which processors have
/// intervals in the window.
pub struct MomentData {
    pub accs: Vec<MomentAcc>,
    /// Busy runs of every location, for the moments up to a time cursor
    /// (empty when the trace is resident on the GPU: the kernel runs again).
    pub runs: BusyRuns,
    /// The Gantt field; when `resident`, its bins, edges and names only.
    pub gantt: Option<Field>,
    pub has_data: Vec<bool>,
    /// The trace resident on the GPU, when the moments are computed there
    /// (`accs` is then empty: each frame's rows are folded there), and the
    /// busy field left there for the Gantt chart.
    pub resident: Option<Resident>,
}

/// What the display keeps on the GPU.
pub struct Resident {
    pub trace: inputs::GpuInput,
    /// The state set, for the moments up to a time cursor.
    pub mask: Vec<bool>,
    pub field: Option<GpuField>,
    /// The last frame's rows (by window end and processors per row) and
    /// Gantt chart (by its shape and colour map): a frame that changes
    /// neither (a selection, a redraw) runs no kernel.
    rows: Last<(Time, usize), Vec<MomentAcc>>,
    gantt: Last<(GanttShape, String), Gantt>,
}

/// The last value made, by what it was made from.
struct Last<K, V>(std::sync::Mutex<Option<(K, V)>>);

impl<K: PartialEq, V: Clone> Last<K, V> {
    fn new() -> Self {
        Last(std::sync::Mutex::new(None))
    }

    /// The value for `key`: the last one when made from the same key,
    /// else `make`'s (kept).
    fn get(&self, key: K, make: impl FnOnce() -> Result<V>) -> Result<V> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, v)) = &*last
            && *k == key
        {
            return Ok(v.clone());
        }
        let v = make()?;
        *last = Some((key, v.clone()));
        Ok(v)
    }
}

pub(super) const GREY: [f32; 4] = [0.62, 0.62, 0.62, 1.0];
pub(super) const BLACK: [f32; 4] = [0.05, 0.05, 0.05, 1.0];
pub(super) const SKEW: [f32; 4] = [0.85, 0.1, 0.1, 1.0];
/// Gantt rows of processors without intervals in the window.
pub(super) const NO_DATA: [f32; 4] = [0.86, 0.86, 0.86, 1.0];
/// The time cursor on light charts.
pub const CURSOR: [f32; 4] = [0.0, 0.45, 0.85, 1.0];
/// The selected processor, in every view that draws processors.
pub const SELECTED: [f32; 4] = [1.0, 0.55, 0.0, 1.0];

impl View for Moments {
    const NAME: &'static str = "moments";
    const ABOUT: &'static str =
        "Moment display: m0..m3 bars per processor with the utilization Gantt chart (paper 000)";
    const COLORMAP: &'static str = "heat";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "gantt",
            help: "draw the utilization Gantt chart beside the moments [true]",
        },
        ParamDoc {
            key: "max_rows",
            help: "at most this many processor rows; never more than pixel rows [65536]",
        },
    ];
    type Params = MomentParams;
    type Data = MomentData;

    fn accepts(input: &Loaded, _spec: &Resolved, _p: &MomentParams) -> Result<()> {
        let t = inputs::trace(input, Self::NAME)?;
        if t.num_locations() == 0 {
            return Err(Error::Invalid("the trace has no locations".into()));
        }
        Ok(())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &MomentParams) -> Result<MomentData> {
        let t = inputs::trace(input, Self::NAME)?;
        let quantity = if spec.states_label == "busy" {
            "busy fraction".into()
        } else {
            format!("fraction of time in {}", spec.states_label)
        };
        // a trace resident on the GPU: the moments computed there, the busy
        // field left there for the chart (the moments need SHADER_F64, the
        // chart's kernel a field within one storage binding)
        if let Some(g) = spec.gpu.as_ref().filter(|g| {
            crate::gpu::kernels::moments::supported(g.0.context())
                && (!p.gantt || g.0.field_fits(spec.bins))
        }) {
            let mask = t.states.select(&spec.spec.states)?;
            let (gantt, field) = if p.gantt {
                let f = g.0.busy_field(&mask, spec.t0, spec.t1, spec.bins)?;
                let mut meta = busy_field(Vec::new(), f.edges.clone(), f.elements);
                meta.quantity = quantity;
                (Some(meta), Some(f))
            } else {
                (None, None)
            };
            return Ok(MomentData {
                // the moments are folded into rows on the GPU when drawn
                accs: Vec::new(),
                runs: BusyRuns::default(),
                gantt,
                has_data: inputs::has_data(t, spec),
                resident: Some(Resident {
                    trace: g.clone(),
                    mask,
                    field,
                    rows: Last::new(),
                    gantt: Last::new(),
                }),
            });
        }
        let gantt = if p.gantt {
            let mut g = inputs::field(t, "busy", spec)?;
            g.quantity = quantity;
            Some(g)
        } else {
            None
        };
        Ok(MomentData {
            accs: inputs::moment_accs(t, spec)?,
            runs: BusyRuns::new(t, &t.states.select(&spec.spec.states)?),
            gantt,
            has_data: inputs::has_data(t, spec),
            resident: None,
        })
    }

    fn on_gpu(d: &MomentData) -> bool {
        d.resident.is_some()
    }

    fn data_key(p: &MomentParams) -> serde_json::Value {
        serde_json::json!({ "gantt": p.gantt })
    }

    fn build(d: &MomentData, spec: &Resolved, p: &MomentParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, spec, p, ctx)
    }

    fn panel(ui: &mut egui::Ui, p: &mut MomentParams) {
        ui.checkbox(&mut p.gantt, "utilization Gantt chart");
    }
}

/// The moments of one display row: per-processor averages of a group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowMoments {
    /// Busy time per processor of the row (ns).
    pub m0: f64,
    pub m1: Option<f64>,
    pub m2: Option<f64>,
    pub m3: Option<f64>,
}

/// Merges `group` adjacent processors per row, so that there are at most
/// `max_rows` rows: returns `group` and each row's moments, m0 divided by
/// the processors of the row.
pub fn row_moments(accs: &[MomentAcc], max_rows: usize) -> Result<(usize, Vec<RowMoments>)> {
    let group = row_group(accs.len(), max_rows)?;
    let rows = accs
        .chunks(group)
        .map(|c| row_of(MomentAcc::merged(c), c.len()))
        .collect();
    Ok((group, rows))
}

/// Processors per row of `n` processors in at most `max_rows` rows.
pub fn row_group(n: usize, max_rows: usize) -> Result<usize> {
    if n == 0 {
        return Err(Error::Invalid("no processors to display".into()));
    }
    Ok(n.div_ceil(max_rows.max(1)))
}

/// The moments of a row of `count` processors from their merged
/// accumulator.
pub fn row_of(acc: MomentAcc, count: usize) -> RowMoments {
    let m = acc.moments();
    RowMoments {
        m0: m.m0 / count.max(1) as f64,
        m1: m.m1,
        m2: m.m2,
        m3: m.m3,
    }
}

/// The key of the moment marks: the m0 bar, the m2 wings, the m3 line.
pub(super) fn moment_key(bar: [f32; 4], wing: [f32; 4]) -> Vec<KeyEntry> {
    vec![
        KeyEntry {
            mark: KeyMark::Bar,
            color: bar,
            text: "m0: busy time at m1".into(),
        },
        KeyEntry {
            mark: KeyMark::Bar,
            color: wing,
            text: "m1 ± m2".into(),
        },
        KeyEntry {
            mark: KeyMark::Line,
            color: SKEW,
            text: "m3: skew".into(),
        },
    ]
}

/// Pixel rows of the chart in an image of `height` (0: unknown).
pub(super) fn chart_rows(height: u32, margins: &Margins) -> usize {
    if height == 0 {
        return usize::MAX;
    }
    ((height as f32 - margins.top - margins.bottom).max(16.0)) as usize
}

/// " (64 per row, averages)" when processors share rows, for titles.
pub(super) fn merged_rows(group: usize) -> String {
    if group > 1 {
        format!(" ({group} per row, averages)")
    } else {
        String::new()
    }
}

/// A row's hover text: who and its moments.
pub(super) fn row_text(who: &str, m: &RowMoments, states_label: &str) -> String {
    let at = |v: f64| axes::format_time(v, v.abs().max(1.0), 0.0);
    match (m.m1, m.m2, m.m3) {
        (Some(m1), Some(m2), Some(m3)) => format!(
            "{who}\nm0 busy time {}\nm1 mean time {}\nm2 deviation ±{}\nm3 skew {}",
            at(m.m0),
            at(m1),
            at(m2),
            at(m3)
        ),
        _ => format!("{who}\nno time in {states_label} in the window"),
    }
}

/// "processor 3" or "processors 64–127 (mean)" for hover texts.
pub(super) fn processors_text(a: usize, b: usize) -> String {
    if b <= a + 1 {
        format!("processor {a}")
    } else {
        format!("processors {a}–{} (mean)", b - 1)
    }
}

/// "12 ms – 30 ms" for the window.
pub(super) fn window_text(t0: Time, t1: Time) -> String {
    let mag = t1 as f64;
    // as many digits as the axis ticks have, one more for the ends
    let step = axes::nice_ticks(t0 as f64, t1 as f64, 5).1 / 10.0;
    format!(
        "{} – {}",
        axes::format_time(t0 as f64, mag, step),
        axes::format_time(t1 as f64, mag, step)
    )
}

/// The processor axis: integer ticks of processor numbers at the left of
/// `x`, rows of `group` processors from y = 0 down.
pub(super) fn processor_ticks(n: usize, group: usize, max_ticks: usize) -> Vec<(u64, f32)> {
    axes::integer_ticks(0, n as u64 - 1, max_ticks)
        .into_iter()
        .map(|q| (q, -((q as f32 + 0.5) / group as f32)))
        .collect()
}

/// The accumulators over `[t0, cursor)` when a time cursor is set inside
/// the window `[t0, t1)` (the moment sub-window follows the cursor), else
/// `accs` over the whole window; and the end of the sub-window.
pub fn accs_at<'a>(
    accs: &'a [MomentAcc],
    runs: &BusyRuns,
    (t0, t1): (Time, Time),
    cursor: Option<Time>,
) -> (Cow<'a, [MomentAcc]>, Time) {
    use rayon::prelude::*;
    match cursor {
        Some(c) if c < t1 && runs.locations() == accs.len() => {
            let c = c.max(t0);
            let v = (0..accs.len())
                .into_par_iter()
                .map(|l| {
                    let (s, e) = runs.runs(l);
                    let k = s.partition_point(|&x| x < c);
                    crate::analysis::moments::accumulate_runs(&s[..k], &e[..k], t0, c)
                })
                .collect();
            (Cow::Owned(v), c)
        }
        _ => (Cow::Borrowed(accs), t1),
    }
}

/// Builds the display.
pub fn build(d: &MomentData, spec: &Resolved, p: &MomentParams, ctx: BuildCtx) -> Result<Scene> {
    let (t0, t1) = (spec.t0, spec.t1);
    if t1 <= t0 {
        return Err(Error::Invalid("the display window is empty".into()));
    }
    let margins = Margins::default();
    let max_rows = p.max_rows.min(chart_rows(ctx.height, &margins)).max(1);
    let (n, group, row, upto) = match &d.resident {
        // the rows folded on the GPU, over [t0, cursor) when one is set
        Some(r) => {
            let n = d.has_data.len();
            let group = row_group(n, max_rows)?;
            let upto = ctx.cursor.filter(|&c| c < t1).map_or(t1, |c| c.max(t0));
            let accs = r.rows.get((upto, group), || {
                Ok(r.trace.0.moment_rows(&r.mask, t0, upto, group)?.0)
            })?;
            let rows = accs
                .iter()
                .enumerate()
                .map(|(k, &a)| row_of(a, group.min(n - k * group)))
                .collect();
            (n, group, rows, upto)
        }
        None => {
            let (accs, upto) = accs_at(&d.accs, &d.runs, (t0, t1), ctx.cursor);
            let (group, rows) = row_moments(&accs, max_rows)?;
            (accs.len(), group, rows, upto)
        }
    };
    let rows = row.len();
    if let Some(g) = &d.gantt
        && g.elements != n
    {
        return Err(Error::Invalid(format!(
            "the Gantt field has {} elements for {n} processors",
            g.elements
        )));
    }
    let span = (t1 - t0) as f64;
    let x = |t: f64| (((t - t0 as f64) / span).clamp(0.0, 1.0)) as f32;
    let mut bars = Mesh::default();
    let mut lines = Vec::new();
    for (r, m) in row.iter().enumerate() {
        let (Some(m1), Some(m2), Some(m3)) = (m.m1, m.m2, m.m3) else {
            continue;
        };
        // row r occupies y in [-(r+1), -r): processor 0 on top
        let (y0, y1) = (-(r as f32) - 0.85, -(r as f32) - 0.15);
        let half = m.m0 / 2.0;
        bars.rect(x(m1 - m2), y0, x(m1 - half), y1, 0.0, BLACK);
        bars.rect(x(m1 + half), y0, x(m1 + m2), y1, 0.0, BLACK);
        bars.rect(x(m1 - half), y0, x(m1 + half), y1, 0.1, GREY);
        let ym = -(r as f32) - 0.5;
        lines.push(Segment {
            a: [x(m1), ym, 0.2],
            b: [x(m1 + m3), ym, 0.2],
            color: SKEW,
        });
        lines.push(Segment {
            a: [x(m1), y0, 0.2],
            b: [x(m1), y1, 0.2],
            color: BLACK,
        });
    }
    let mut scene = Scene::new("Moments of utilization", Projection::Orthographic);
    scene.margins = margins;
    // hover: each row's moments
    for (r, m) in row.iter().enumerate() {
        let (a, b) = (r * group, ((r + 1) * group).min(n));
        let text = row_text(&processors_text(a, b), m, &spec.states_label);
        scene.picks.push(Pick::rect(
            [0.0, -(r as f32) - 1.0],
            [1.0, -(r as f32)],
            text,
            (group == 1).then_some(a),
        ));
    }
    scene.meshes.push(bars);
    scene.lines = lines;
    let ink = axes::ink(false);
    let bottom = -(rows as f32);
    let gx0 = 1.12f32;
    // the Gantt chart: [gx0, gx0 + 1] in x
    if let Some(g) = &d.gantt {
        let cmap = Colormap::named(&spec.colormap)?;
        let gx = |t: u64| gx0 + x(t as f64);
        let ggroup = n.div_ceil(max_rows.min(4096)).max(group);
        let bin_text: Vec<String> = (0..g.bins)
            .map(|k| window_text(g.edges[k], g.edges[k + 1]))
            .collect();
        let grows = n.div_ceil(ggroup);
        let scale = rows as f32 / grows as f32;
        let xs: Vec<f32> = g.edges.iter().map(|&t| gx(t)).collect();
        // each row's values per bin, None for a row without data
        let resident = d
            .resident
            .as_ref()
            .and_then(|r| r.field.as_ref().map(|f| (r, f)));
        let cells = match resident {
            Some((r, f)) => {
                let shape = GanttShape {
                    group: ggroup,
                    xs: xs.clone(),
                    scale,
                    nodata: NO_DATA,
                };
                let chart = r.gantt.get((shape.clone(), spec.colormap.clone()), || {
                    Ok(f.gantt(&shape, &d.has_data, cmap.stops(), cmap.is_categorical())?)
                })?;
                let inv = inverse_widths(&g.edges);
                scene.resident.push(chart.mesh);
                gantt_values(grows, |r| {
                    let count = d.has_data[r * ggroup..((r + 1) * ggroup).min(n)]
                        .iter()
                        .filter(|&&h| h)
                        .count();
                    let sums = &chart.totals[r * g.bins..(r + 1) * g.bins];
                    (count > 0).then(|| {
                        sums.iter()
                            .zip(&inv)
                            .map(|(&s, w)| s as f64 * w / count as f64)
                            .collect()
                    })
                })
            }
            None => {
                let cells = gantt_values(grows, |r| {
                    let (a, b) = (r * ggroup, ((r + 1) * ggroup).min(n));
                    let with_data: Vec<usize> = (a..b).filter(|&e| d.has_data[e]).collect();
                    (!with_data.is_empty()).then(|| {
                        (0..g.bins)
                            .map(|k| {
                                with_data.iter().map(|&e| g.at(k, e)).sum::<f64>()
                                    / with_data.len() as f64
                            })
                            .collect()
                    })
                });
                let mut mesh = Mesh::default();
                for (r, row) in cells.iter().enumerate() {
                    let (y0, y1) = (-((r + 1) as f32) * scale, -(r as f32) * scale);
                    match row {
                        None => mesh.rect(gx0, y0, gx0 + 1.0, y1, 0.0, NO_DATA),
                        Some(v) => {
                            for (k, &v) in v.iter().enumerate() {
                                let c = rgba(cmap.at(v as f32), 1.0);
                                mesh.rect(xs[k], y0, xs[k + 1], y1, 0.0, c);
                            }
                        }
                    }
                }
                scene.meshes.push(mesh);
                cells
            }
        };
        for (r, row) in cells.iter().enumerate() {
            let Some(v) = row else { continue };
            let (a, b) = (r * ggroup, ((r + 1) * ggroup).min(n));
            let (y0, y1) = (-((r + 1) as f32) * scale, -(r as f32) * scale);
            let who = processors_text(a, b);
            for (k, (when, v)) in bin_text.iter().zip(v).enumerate() {
                scene.picks.push(Pick::rect(
                    [xs[k], y0],
                    [xs[k + 1], y1],
                    format!("{who}\n{when}\n{}: {v:.3}", g.quantity),
                    (ggroup == 1).then_some(a),
                ));
            }
        }
        scene.legend = Some(Legend {
            title: g.quantity.clone(),
            colormap: spec.colormap.clone(),
            min: 0.0,
            max: 1.0,
            unit: Unit::Fraction,
            note: (ggroup > 1).then(|| format!("mean of {ggroup} processors per row")),
        });
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: NO_DATA,
            text: "no data".into(),
        });
        scene.labels.push(
            Label::world("utilization per time bin", [gx0 + 0.5, 0.0, 0.0], 12.0, ink)
                .aligned(LabelAlign::CenterBottom)
                .priority(1),
        );
    }
    scene.key.splice(0..0, moment_key(GREY, BLACK));
    if upto < t1 {
        // the time cursor: the moments cover [t0, cursor)
        for x0 in [0.0, gx0] {
            if x0 > 0.0 && d.gantt.is_none() {
                continue;
            }
            let cx = x0 + x(upto as f64);
            scene.lines.push(Segment {
                a: [cx, 0.0, 0.4],
                b: [cx, -(rows as f32), 0.4],
                color: CURSOR,
            });
        }
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: CURSOR,
            text: "cursor (moments up to it)".into(),
        });
    }
    if let Some(sel) = ctx.selected.filter(|&s| s < n) {
        // the selected processor's row, framed across both panels
        let r = sel / group;
        let (y0, y1) = (-(r as f32) - 1.0, -(r as f32));
        let right = if d.gantt.is_some() { gx0 + 1.0 } else { 1.0 };
        for (a, b) in [([0.0, y0], [right, y0]), ([0.0, y1], [right, y1])] {
            scene.lines.push(Segment {
                a: [a[0], a[1], 0.45],
                b: [b[0], b[1], 0.45],
                color: SELECTED,
            });
        }
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: SELECTED,
            text: format!("selected: processor {sel}"),
        });
    }
    // frames, time axes, processor axis
    let tick = (rows as f32 * 0.012).max(0.05);
    let panels: &[f32] = if d.gantt.is_some() {
        &[0.0, gx0]
    } else {
        &[0.0]
    };
    // as many ticks as fit: about 80 pixels a time label, 28 a processor
    let (wpx, hpx) = if ctx.width == 0 {
        (800.0, 600.0)
    } else {
        (
            (ctx.width as f32 - margins.left - margins.right) / (panels.len() as f32 * 1.06),
            ctx.height as f32 - margins.top - margins.bottom,
        )
    };
    let time_ticks = ((wpx / 80.0) as usize).clamp(2, 8);
    let proc_ticks = ((hpx / 28.0) as usize).clamp(2, 12);
    for &x0 in panels {
        let x1 = x0 + 1.0;
        for (a, b) in [
            ([x0, 0.0], [x1, 0.0]),
            ([x1, 0.0], [x1, bottom]),
            ([x0, bottom], [x0, 0.0]),
        ] {
            scene.lines.push(Segment {
                a: [a[0], a[1], 0.3],
                b: [b[0], b[1], 0.3],
                color: [0.55, 0.55, 0.55, 1.0],
            });
        }
        axes::time_axis_2d(
            &mut scene.lines,
            &mut scene.labels,
            (x0, x1, bottom),
            (t0 as f64, t1 as f64),
            tick,
            time_ticks,
            "time",
            ink,
        );
    }
    for (q, y) in processor_ticks(n, group, proc_ticks) {
        scene.lines.push(Segment {
            a: [0.0, y, 0.3],
            b: [-0.012, y, 0.3],
            color: ink,
        });
        scene.labels.push(
            Label::world(format!("{q}"), [-0.015, y, 0.0], 12.0, ink)
                .aligned(LabelAlign::RightCenter)
                .priority(1),
        );
    }
    scene.labels.push(
        Label::world("processor", [-0.015, bottom / 2.0, 0.0], 13.0, ink)
            .aligned(LabelAlign::AxisTitleLeft)
            .priority(0),
    );
    scene.labels.push(
        Label::world("moments m0…m3", [0.5, 0.0, 0.0], 12.0, ink)
            .aligned(LabelAlign::CenterBottom)
            .priority(1),
    );
    scene.axes = format!(
        "x: time, 0..1 = {} (Gantt chart at 1.12..2.12); y: processor rows of {group}, row r from -r to -(r+1), processor 0 at the top",
        window_text(t0, t1)
    );
    scene.title = format!(
        "Moments of time in {} — {n} processor{}{}, {}",
        spec.states_label,
        if n == 1 { "" } else { "s" },
        merged_rows(group),
        if upto < t1 {
            format!("{} (up to the cursor)", window_text(t0, upto))
        } else {
            window_text(t0, t1)
        }
    );
    Ok(scene)
}

/// The Gantt chart's values: `row(r)` gives row r's value in each bin, or
/// `None` for a row none of whose processors has data; rows in parallel.
fn gantt_values(
    rows: usize,
    row: impl Fn(usize) -> Option<Vec<f64>> + Sync + Send,
) -> Vec<Option<Vec<f64>>> {
    use rayon::prelude::*;
    (0..rows).into_par_iter().map(row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{DataSpec, inputs};

    fn spec(t0: Time, t1: Time) -> Resolved {
        inputs::Resolved {
            spec: DataSpec::default(),
            t0,
            t1,
            bins: 10,
            colormap: "heat".into(),
            states_label: "busy".into(),
            warnings: vec![],
            gpu: None,
        }
    }

    fn data(accs: Vec<MomentAcc>) -> MomentData {
        let n = accs.len();
        MomentData {
            accs,
            runs: BusyRuns::default(),
            gantt: None,
            has_data: vec![true; n],
            resident: None,
        }
    }

    fn ctx(height: u32) -> BuildCtx {
        BuildCtx {
            step: 0,
            width: 1280,
            height,
            triangle_budget: None,
            cursor: None,
            selected: None,
        }
    }

    #[test]
    fn one_row_per_processor_and_grouping() {
        // processor p busy on [100p, 100p + 50)
        let accs: Vec<MomentAcc> = (0..10)
            .map(|p| MomentAcc::interval(100 * p, 100 * p + 50))
            .collect();
        let p = MomentParams::default();
        let s = build(&data(accs.clone()), &spec(0, 1000), &p, ctx(720)).unwrap();
        // 3 rectangles per row (two black bars of zero width for one interval, one grey)
        assert_eq!(s.meshes[0].vertices.len(), 10 * 3 * 4);
        let grey: Vec<_> = s.meshes[0]
            .vertices
            .iter()
            .filter(|v| v.color == GREY)
            .collect();
        let xs: Vec<f32> = grey[12..16].iter().map(|v| v.position[0]).collect();
        assert!(
            (xs[0] - 0.30).abs() < 1e-6 && (xs[1] - 0.35).abs() < 1e-6,
            "{xs:?}"
        );
        // a key for every mark, axes with units
        assert_eq!(s.key.len(), 3);
        assert!(
            s.labels.iter().any(|l| l.text == "0.4 µs"),
            "{:?}",
            s.labels
        );
        // grouped: 10 processors in 4 rows of 3
        let g = build(
            &data(accs),
            &spec(0, 1000),
            &MomentParams {
                max_rows: 4,
                ..p.clone()
            },
            ctx(720),
        )
        .unwrap();
        assert_eq!(g.meshes[0].vertices.len(), 4 * 3 * 4);
        assert!(row_moments(&[], 4).is_err());
    }

    #[test]
    fn merged_rows_show_per_processor_averages() {
        // 2^12 processors each busy for 100 ns: merged rows still show 100 ns
        let accs: Vec<MomentAcc> = (0..4096).map(|_| MomentAcc::interval(0, 100)).collect();
        let (group, rows) = row_moments(&accs, 64).unwrap();
        assert_eq!(group, 64);
        assert!(rows.iter().all(|r| (r.m0 - 100.0).abs() < 1e-9));
        // a small image never gets rows thinner than a pixel
        let s = build(
            &data(accs),
            &spec(0, 1000),
            &MomentParams::default(),
            ctx(360),
        )
        .unwrap();
        let bars = s.meshes[0].vertices.len() / 12;
        assert!(bars <= 360, "{bars} rows");
        assert!(s.title.contains("per row, averages"), "{}", s.title);
    }
}
