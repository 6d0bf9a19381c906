//! The performance image G(n0) (paper 002 chapter 5, SPEC §3.2): the state
//! vector S(n0) of a metric placed on a grid (natural, Gray-code,
//! hypercube, near-square or user coordinates) and coloured by its colour
//! index g = g_min + α (m − m_min); animated over n0 (`steps` positions
//! across the window). Modes: the image, the difference G(n0) − G(n0 −
//! lag) contrast-stretched, the difference G_A(n0) − G_B against a
//! template run B (`template=B.prv`, paper 002 §5: at the same n0, or at
//! `template_n0`; the title gives the mismatch energy σ²), hot spots
//! (cells with g ≥ th, the others at g_min) and binary (g_max where
//! g ≥ th). One metric range for the whole
//! animation. Beyond the pixels, k × k cells share a pixel (their mean
//! index; the title says so).

use serde::{Deserialize, Serialize};

use super::moments::SELECTED;
use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::image::{self, Layout};
use crate::analysis::metric::{self, BusyRuns, Metric, MetricMatrix};
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{KeyEntry, KeyMark, Label, LabelAlign, Legend, Mesh, Projection, Scene, rgba};

/// The performance-image view.
pub struct PerfImage;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImageParams {
    /// busy, busy-fraction, messages, bytes or counter:NAME.
    pub metric: String,
    /// natural, gray, hypercube or near-square.
    pub layout: String,
    /// Columns of the natural layout (0: near-square).
    pub cols: usize,
    /// A CSV of location,row,col (overrides the layout).
    pub coords: String,
    /// Positions of n0 across the window.
    pub steps: usize,
    /// image, diff, hotspot or binary.
    pub mode: String,
    /// Threshold colour index of hotspot and binary.
    pub th: f64,
    /// Steps back of the difference image.
    pub lag: usize,
    /// Colour index range [g_min, g_max].
    pub g_range: Vec<f64>,
    /// Metric range [m_min, m_max] (empty: the data's over all steps).
    pub m_range: Vec<f64>,
    /// A template run (trace) to compare with in mode `template`.
    pub template: String,
    /// The template's fixed observation time (empty: the n0 shown).
    pub template_n0: String,
}

impl Default for ImageParams {
    fn default() -> Self {
        ImageParams {
            metric: "busy".into(),
            layout: "near-square".into(),
            cols: 0,
            coords: String::new(),
            steps: 100,
            mode: "image".into(),
            th: 128.0,
            lag: 1,
            g_range: vec![0.0, 255.0],
            m_range: Vec::new(),
            template: String::new(),
            template_n0: String::new(),
        }
    }
}

/// The analysis behind the images.
pub struct ImageData {
    pub metric: Metric,
    pub mm: MetricMatrix,
    pub layout: Layout,
    /// The metric range over all steps.
    pub m_lo: f64,
    pub m_hi: f64,
    /// The n0 of each step.
    pub n0: Vec<Time>,
    /// The busy runs behind the cumulative busy fraction.
    pub busy: Option<BusyRuns>,
    pub locations: usize,
    /// The template run of mode `template`.
    pub template: Option<Template>,
}

/// The template run: its state vectors, in this run's processor order.
pub struct Template {
    pub mm: MetricMatrix,
    pub busy: Option<BusyRuns>,
    /// This run's location `l` is the template's `map[l]`.
    pub map: Vec<u32>,
    /// A fixed observation time, else the n0 shown.
    pub n0: Option<Time>,
    pub name: String,
}

const MODES: [&str; 5] = ["image", "diff", "template", "hotspot", "binary"];
const NO_DATA: [f32; 4] = [0.88, 0.88, 0.9, 1.0];

fn check(p: &ImageParams) -> Result<()> {
    if p.steps == 0 || p.steps > 100_000 {
        return Err(Error::Invalid(format!(
            "steps must be 1 to 100000, not {}",
            p.steps
        )));
    }
    if !MODES.contains(&p.mode.as_str()) {
        return Err(Error::Invalid(format!(
            "unknown mode '{}' (modes: {})",
            p.mode,
            MODES.join(", ")
        )));
    }
    match p.g_range.as_slice() {
        [a, b] if a.is_finite() && b.is_finite() && a < b => {}
        other => {
            return Err(Error::Invalid(format!(
                "g_range must be [g_min, g_max] with g_min < g_max, not {other:?}"
            )));
        }
    }
    match p.m_range.as_slice() {
        [] => {}
        [a, b] if a.is_finite() && b.is_finite() && a < b => {}
        other => {
            return Err(Error::Invalid(format!(
                "m_range must be [m_min, m_max] with m_min < m_max, not {other:?}"
            )));
        }
    }
    if !p.th.is_finite() {
        return Err(Error::Invalid("th must be a number".into()));
    }
    if p.mode == "template" && p.template.is_empty() {
        return Err(Error::Invalid(
            "mode template needs template=TRACE (the run to compare with)".into(),
        ));
    }
    Ok(())
}

/// Loads the template run and makes its state vectors comparable.
fn template_of(
    t: &crate::model::Trace,
    states: &[String],
    p: &ImageParams,
) -> Result<Option<Template>> {
    if p.template.is_empty() {
        return Ok(None);
    }
    let path = std::path::Path::new(&p.template);
    let b = match crate::readers::load(path, &crate::readers::ReadOptions::default())? {
        Loaded::Trace(b) => b,
        _ => {
            return Err(Error::Invalid(format!(
                "{}: a template run must be a trace",
                path.display()
            )));
        }
    };
    if b.num_locations() != t.num_locations() {
        return Err(Error::Invalid(format!(
            "a template image needs the same number of processors: this run has {}, {} has {}",
            t.num_locations(),
            path.display(),
            b.num_locations()
        )));
    }
    let map = crate::analysis::compare::correspond(t, &b)?;
    let m = Metric::parse(&p.metric, &b)?;
    let mask = b.states.select(states)?;
    let (mm, busy) = if m == Metric::BusyFraction {
        (MetricMatrix::default(), Some(BusyRuns::new(&b, &mask)))
    } else {
        (metric::metric_matrix(&b, &m, &mask)?, None)
    };
    let n0 = if p.template_n0.is_empty() {
        None
    } else {
        Some(crate::analysis::cursor::parse_time(&p.template_n0)?)
    };
    Ok(Some(Template {
        mm,
        busy,
        map,
        n0,
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }))
}

fn layout_of(p: &ImageParams) -> Result<Layout> {
    if !p.coords.is_empty() {
        return image::read_coords(std::path::Path::new(&p.coords));
    }
    Layout::named(&p.layout, (p.cols > 0).then_some(p.cols))
}

impl View for PerfImage {
    const NAME: &'static str = "image";
    const ABOUT: &'static str =
        "Performance image G(n0): the state vector on a grid, animated over n0 (paper 002)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "metric",
            help: "busy, busy-fraction, messages, bytes or counter:NAME [busy]",
        },
        ParamDoc {
            key: "layout",
            help: "natural, gray, hypercube or near-square [near-square]",
        },
        ParamDoc {
            key: "cols",
            help: "columns of the natural layout [near-square]",
        },
        ParamDoc {
            key: "coords",
            help: "a CSV of location,row,col placing each location (overrides layout)",
        },
        ParamDoc {
            key: "steps",
            help: "positions of n0 across the window (the animation) [100]",
        },
        ParamDoc {
            key: "mode",
            help: "image, diff (G(n0) − G(n0 − lag)), template (G(n0) − G of the template run), hotspot or binary (threshold th) [image]",
        },
        ParamDoc {
            key: "th",
            help: "threshold colour index of hotspot and binary [128]",
        },
        ParamDoc {
            key: "lag",
            help: "steps back of the difference image [1]",
        },
        ParamDoc {
            key: "g_range",
            help: "colour index range [g_min, g_max] [[0, 255]]",
        },
        ParamDoc {
            key: "m_range",
            help: "metric range mapped onto the colour indices [the data's over all steps]",
        },
        ParamDoc {
            key: "template",
            help: "a template run (trace with as many processors) for mode template",
        },
        ParamDoc {
            key: "template_n0",
            help: "the template's fixed observation time, e.g. 500us [the n0 shown]",
        },
    ];
    type Params = ImageParams;
    type Data = ImageData;

    fn accepts(input: &Loaded, _spec: &Resolved, p: &ImageParams) -> Result<()> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        Metric::parse(&p.metric, t)?;
        let layout = layout_of(p)?;
        image::place(t.num_locations(), &layout).map(|_| ())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &ImageParams) -> Result<ImageData> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        let m = Metric::parse(&p.metric, t)?;
        let mask = t.states.select(&spec.spec.states)?;
        let (mm, busy) = if m == Metric::BusyFraction {
            (MetricMatrix::default(), Some(BusyRuns::new(t, &mask)))
        } else {
            (metric::metric_matrix(t, &m, &mask)?, None)
        };
        let layout = layout_of(p)?;
        image::place(t.num_locations(), &layout)?;
        let (m_lo, m_hi) = match m {
            Metric::Busy | Metric::BusyFraction => (0.0, 1.0),
            _ => {
                let lo = mm.value.iter().copied().fold(mm.initial, f64::min);
                let hi = mm.value.iter().copied().fold(mm.initial, f64::max);
                (lo, if hi > lo { hi } else { lo + 1.0 })
            }
        };
        let (t0, t1) = (spec.t0, spec.t1);
        let n = p.steps.min((t1 - t0) as usize + 1).max(1);
        let n0 = (0..n)
            .map(|k| {
                if n == 1 {
                    t1
                } else {
                    t0 + ((t1 - t0) as u128 * k as u128 / (n - 1) as u128) as Time
                }
            })
            .collect();
        Ok(ImageData {
            template: template_of(t, &spec.spec.states, p)?,
            metric: m,
            mm,
            layout,
            m_lo,
            m_hi,
            n0,
            busy,
            locations: t.num_locations(),
        })
    }

    fn data_key(p: &ImageParams) -> serde_json::Value {
        serde_json::json!({ "metric": p.metric, "layout": p.layout, "cols": p.cols, "coords": p.coords, "steps": p.steps, "template": p.template, "template_n0": p.template_n0 })
    }

    fn animation(d: &ImageData, _p: &ImageParams) -> Animation {
        Animation {
            steps: d.n0.len(),
            stride: 1,
        }
    }

    fn step_at(d: &ImageData, _p: &ImageParams, t: Time) -> Option<usize> {
        Some(d.n0.partition_point(|&n| n <= t).saturating_sub(1))
    }

    fn build(d: &ImageData, spec: &Resolved, p: &ImageParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx)
    }

    fn panel(ui: &mut egui::Ui, p: &mut ImageParams) {
        egui::ComboBox::from_label("mode")
            .selected_text(p.mode.clone())
            .show_ui(ui, |ui| {
                for m in MODES {
                    ui.selectable_value(&mut p.mode, m.to_string(), m);
                }
            });
        let (lo, hi) = match p.g_range.as_slice() {
            [a, b] => (*a, *b),
            _ => (0.0, 255.0),
        };
        ui.add(egui::Slider::new(&mut p.th, lo..=hi).text("threshold (colour index)"));
        ui.add(egui::Slider::new(&mut p.lag, 1..=50).text("difference lag (steps)"));
        ui.horizontal(|ui| {
            ui.label("template run");
            ui.text_edit_singleline(&mut p.template);
        });
    }
}

/// The n0 shown and the n0 the difference subtracts: step `ctx.step`'s,
/// or the time cursor itself when one is set (the state vector is exact at
/// any time), with the lag in the steps' spacing.
fn times(d: &ImageData, p: &ImageParams, ctx: &BuildCtx) -> (Time, Time) {
    let last = d.n0.len().saturating_sub(1);
    let k = ctx.step.min(last);
    let lag = p.lag.max(1);
    match ctx.cursor {
        Some(t) => {
            let spacing = if last > 0 {
                (d.n0[last] - d.n0[0]) / last as u64
            } else {
                0
            };
            (t, t.saturating_sub(spacing * lag as u64))
        }
        None => (d.n0[k], d.n0[k.saturating_sub(lag)]),
    }
}

/// The template's image (at its fixed time, else at `n0`) in this run's
/// processor order.
fn template_image(d: &ImageData, n0: Time) -> Result<image::Image> {
    let tp = d
        .template
        .as_ref()
        .ok_or_else(|| Error::Invalid("mode template needs template=TRACE".into()))?;
    let at = tp.n0.unwrap_or(n0);
    let v = match &tp.busy {
        Some(b) => b.fractions(at),
        None => tp.mm.state_vector(at),
    };
    let v: Vec<f64> = tp
        .map
        .iter()
        .map(|&k| v.get(k as usize).copied().unwrap_or(0.0))
        .collect();
    image::render(&v, &d.layout)
}

/// The colour-index image at `n0` (and `before` for the difference).
fn indices(
    d: &ImageData,
    p: &ImageParams,
    (n0, before): (Time, Time),
) -> Result<(image::Image, Vec<Option<f64>>)> {
    let g = (p.g_range[0], p.g_range[1]);
    let mr = match p.m_range.as_slice() {
        [a, b] => (*a, *b),
        _ => (d.m_lo, d.m_hi),
    };
    let at = |n0: Time| -> Result<image::Image> {
        let v = match &d.busy {
            Some(b) => b.fractions(n0),
            None => d.mm.state_vector(n0),
        };
        image::render(&v, &d.layout)
    };
    let img = at(n0)?;
    let gi = image::color_index(&img, g, Some(mr));
    let out = match p.mode.as_str() {
        "diff" => {
            let before = at(before)?;
            let diff = image::difference(&before, &img)?;
            image::contrast_stretch(&diff, g)
        }
        "template" => {
            let other = template_image(d, n0)?;
            // difference(a, b) is b − a: this run minus the template
            let diff = image::difference(&other, &img)?;
            image::contrast_stretch(&diff, g)
        }
        "hotspot" => image::hot_spots(&gi, p.th, None, g.0),
        "binary" => image::binary(&gi, p.th, g),
        _ => gi,
    };
    Ok((img, out))
}

pub fn build(d: &ImageData, colormap: &str, p: &ImageParams, ctx: BuildCtx) -> Result<Scene> {
    let (n0, before) = times(d, p, &ctx);
    let (img, g) = indices(d, p, (n0, before))?;
    let (g0, g1) = (p.g_range[0], p.g_range[1]);
    let cmap = Colormap::named(colormap)?;
    // pixels of the chart: blocks of b × b cells beyond
    let side_px = super::comm::chart_side(ctx.width, ctx.height);
    let b = img.rows.max(img.cols).div_ceil(side_px.max(1)).max(1);
    let (r2, c2) = (img.rows.div_ceil(b), img.cols.div_ceil(b));
    let mut mesh = Mesh::default();
    for r in 0..r2 {
        for c in 0..c2 {
            let mut sum = 0.0;
            let mut n = 0usize;
            for rr in r * b..((r + 1) * b).min(img.rows) {
                for cc in c * b..((c + 1) * b).min(img.cols) {
                    if let Some(v) = g[rr * img.cols + cc] {
                        sum += v;
                        n += 1;
                    }
                }
            }
            let color = if n == 0 {
                NO_DATA
            } else {
                let u = ((sum / n as f64 - g0) / (g1 - g0)).clamp(0.0, 1.0) as f32;
                rgba(cmap.at(u), 1.0)
            };
            let (x, y) = (c as f32, -(r as f32));
            mesh.rect(x, y - 1.0, x + 1.0, y, 0.0, color);
        }
    }
    let mut scene = Scene::new("", Projection::Orthographic);
    scene.meshes.push(mesh);
    // hover: each cell's processor, metric value and colour index (one
    // cell per processor up to 250,000 cells)
    let munit = Unit::from_name(d.metric.unit());
    let mag = d.m_hi.abs().max(d.m_lo.abs());
    if b == 1 && img.rows * img.cols <= 250_000 {
        let at_n0 = axes::format_time(n0 as f64, n0.max(1) as f64, 0.0);
        for (i, l) in img.location.iter().enumerate() {
            let Some(l) = l else { continue };
            let (r, c) = (i / img.cols, i % img.cols);
            let value =
                img.values[i].map_or("—".into(), |v| axes::format_value(v, &munit, mag, 0.0));
            let gv = g[i].map_or("—".into(), |v| format!("{v:.0}"));
            scene.picks.push(Pick::rect(
                [c as f32, -(r as f32) - 1.0],
                [c as f32 + 1.0, -(r as f32)],
                format!(
                    "processor {l} (row {r}, column {c})\n{} at {at_n0}: {value}\ncolour index {gv}",
                    p.metric
                ),
                Some(*l as usize),
            ));
        }
    }
    if let Some(sel) = ctx.selected
        && let Some(i) = img.location.iter().position(|l| *l == Some(sel as u32))
    {
        let (r, c) = ((i / img.cols / b) as f32, (i % img.cols / b) as f32);
        scene.frame_rect([c - 0.15, -r - 1.15], [c + 1.15, -r + 0.15], 0.5, SELECTED);
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: SELECTED,
            text: format!("selected: processor {sel}"),
        });
    }
    let ink = axes::ink(false);
    // processor numbers in cells big enough to hold them
    let cell_px = side_px as f32 / img.rows.max(img.cols) as f32;
    if b == 1 && cell_px >= 28.0 {
        for (i, l) in img.location.iter().enumerate() {
            if let Some(l) = l {
                let (r, c) = (i / img.cols, i % img.cols);
                let light = g[i].is_some_and(|v| ((v - g0) / (g1 - g0)) < 0.55);
                scene.labels.push(
                    Label::world(
                        l.to_string(),
                        [c as f32 + 0.5, -(r as f32) - 0.5, 0.0],
                        11.0,
                        if light {
                            [1.0, 1.0, 1.0, 1.0]
                        } else {
                            [0.0, 0.0, 0.0, 1.0]
                        },
                    )
                    .aligned(LabelAlign::CenterBottom)
                    .priority(3),
                );
            }
        }
    }
    let (rs, cs) = (r2 as f32, c2 as f32);
    let tick = 0.012 * rs.max(cs);
    for (cc, _) in super::comm::task_ticks(img.cols, b, 8) {
        let x = (cc as f32 + 0.5) / b as f32;
        scene.lines.push(crate::scene::Segment {
            a: [x, -rs, 0.3],
            b: [x, -rs - tick, 0.3],
            color: ink,
        });
        scene.labels.push(
            Label::world(cc.to_string(), [x, -rs - tick, 0.0], 12.0, ink)
                .aligned(LabelAlign::CenterTop)
                .priority(1),
        );
    }
    for (rr, _) in super::comm::task_ticks(img.rows, b, 8) {
        let y = -(rr as f32 + 0.5) / b as f32;
        scene.lines.push(crate::scene::Segment {
            a: [0.0, y, 0.3],
            b: [-tick, y, 0.3],
            color: ink,
        });
        scene.labels.push(
            Label::world(rr.to_string(), [-tick, y, 0.0], 12.0, ink)
                .aligned(LabelAlign::RightCenter)
                .priority(1),
        );
    }
    scene.labels.push(
        Label::world("image column", [cs / 2.0, -rs - tick, 0.0], 13.0, ink)
            .aligned(LabelAlign::AxisTitleBelow)
            .priority(0),
    );
    scene.labels.push(
        Label::world("image row", [0.0, -rs / 2.0, 0.0], 13.0, ink)
            .aligned(LabelAlign::AxisTitleLeft)
            .priority(0),
    );
    let unit = Unit::from_name(d.metric.unit());
    let mr = match p.m_range.as_slice() {
        [a, b] => (*a, *b),
        _ => (d.m_lo, d.m_hi),
    };
    scene.legend = Some(Legend {
        title: match p.mode.as_str() {
            "diff" | "template" => "difference".into(),
            _ => "colour index G".into(),
        },
        colormap: colormap.to_string(),
        min: g0,
        max: g1,
        unit: Unit::Count("index".into()),
        note: Some(match p.mode.as_str() {
            "diff" => "stretched: g_min = most decreased".into(),
            "template" => "stretched: g_min = most below the template".into(),
            _ => format!(
                "{} = {}, {} = {}",
                g0,
                axes::format_value(mr.0, &unit, mr.1, 0.0),
                g1,
                axes::format_value(mr.1, &unit, mr.1, 0.0)
            ),
        }),
    });
    scene.key.push(KeyEntry {
        mark: KeyMark::Bar,
        color: NO_DATA,
        text: "no processor".into(),
    });
    let at = |t: Time| axes::format_time(t as f64, n0.max(1) as f64, 0.0);
    let what = match p.mode.as_str() {
        "diff" => format!("G({}) − G({})", at(n0), at(before)),
        "template" => {
            let tp = d.template.as_ref();
            let tn0 = tp.and_then(|t| t.n0).unwrap_or(n0);
            let other = template_image(d, n0)?;
            let gr = (g0, g1);
            let e = image::mismatch_energies(&img, &other, gr, Some(mr))
                .map(|(e, _)| format!(", σ² = {e:.0}"))
                .unwrap_or_default();
            format!(
                "G({}) − G_{}({}){e}",
                at(n0),
                tp.map(|t| t.name.as_str()).unwrap_or("template"),
                at(tn0)
            )
        }
        "hotspot" => format!("hot spots g ≥ {} of G({})", p.th, at(n0)),
        "binary" => format!("G({}) ≥ {}", at(n0), p.th),
        _ => format!("G({})", at(n0)),
    };
    if let Some(s) = image::stats_of(&g) {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: ink,
            text: format!("mean g {:.1}, std {:.1}", s.mean, s.std),
        });
    }
    let position = match ctx.cursor {
        Some(_) => "at the cursor".to_string(),
        None => format!(
            "step {}/{}",
            ctx.step.min(d.n0.len().saturating_sub(1)) + 1,
            d.n0.len()
        ),
    };
    scene.title = format!(
        "{what}: {} — {} processors, {} {}×{}, {position}{}",
        p.metric,
        d.locations,
        d.layout.name(),
        img.rows,
        img.cols,
        if b > 1 {
            format!(", {b}×{b} cells per pixel (mean)")
        } else {
            String::new()
        }
    );
    scene.axes = "x: image column, y: −image row".into();
    Ok(scene)
}
