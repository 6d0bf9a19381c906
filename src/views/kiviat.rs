//! The Kiviat tube (paper 003 §3.3–3.4, SPEC §4.1): the elements of a ring
//! field on a circle, radius proportional to the value (linear, or log10
//! above a stated floor), one ring per time bin along the tube's axis,
//! adjacent elements and successive rings joined into quad patches;
//! coloured by the value or by a second field (`--color-by`); leading
//! empty bins trimmed; an animation window of `width` bins slides along
//! the tube; `stretch` scales the time axis.
//!
//! One colour scale and one radius scale per animation: both span the
//! whole (trimmed) tube unless `per_frame_scale` is set, so frames compare.
//! Level of detail: beyond `max_triangles`, successive bins are averaged
//! into one ring.

use serde::{Deserialize, Serialize};

use super::{Animation, BuildCtx, ParamDoc, Resolved, View, inputs};
use crate::analysis::fields::{Field, TimeAxis, leading_empty_bins};
use crate::error::{Error, Result};
use crate::gpu::kernels::tube::{BinSummary, GpuField, TubeShape};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{Label, LabelAlign, Legend, Mesh, Projection, Scene, Segment, Vertex, rgba};

/// The Kiviat tube view.
pub struct Kiviat;

/// Parameters of the tube.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KiviatParams {
    /// Bins shown (the animation width); 0: the whole tube.
    pub width: usize,
    /// Length of one bin along the axis, relative to the tube's radius.
    pub stretch: f32,
    /// Logarithmic radius: log10(value / floor), floor = `log_floor` × the
    /// largest value.
    pub log: bool,
    pub log_floor: f64,
    /// Keep leading empty bins.
    pub keep_empty: bool,
    /// Colour and radius scales of the shown bins only (else the whole tube).
    pub per_frame_scale: bool,
    /// Radius of a zero value, relative to the largest radius.
    pub inner: f32,
    /// Level of detail: at most this many triangles.
    pub max_triangles: usize,
    /// Level of detail: at most this many sectors around the ring
    /// (adjacent elements averaged beyond).
    pub max_sectors: usize,
}

impl KiviatParams {
    /// Elements averaged into one sector of a ring of `ne` (level of
    /// detail: at most `max_sectors` sectors, at least 3).
    pub fn elements_per_sector(&self, ne: usize) -> usize {
        ne.div_ceil(self.max_sectors.max(3)).max(1)
    }
}

impl Default for KiviatParams {
    fn default() -> Self {
        KiviatParams {
            width: 15,
            stretch: 0.15,
            log: false,
            log_floor: 1e-3,
            keep_empty: false,
            per_frame_scale: false,
            inner: 0.05,
            max_triangles: 2_000_000,
            max_sectors: 2048,
        }
    }
}

/// The radius field, the optional colour field and the leading empty bins.
pub struct KiviatData {
    /// The radius field; with `resident`, its bins, edges and names only
    /// (no values: they stay on the GPU).
    pub field: Field,
    pub color: Option<Field>,
    /// The scales of the whole tube (computed once, not per frame).
    pub whole: Scales,
    /// Bins before the first with any value.
    pub leading: usize,
    /// The busy field left on the GPU, and its bins' summaries over the
    /// tube's sectors, when the trace was resident there.
    pub resident: Option<(GpuField, Vec<BinSummary>)>,
}

impl KiviatData {
    fn skip(&self, p: &KiviatParams) -> usize {
        if p.keep_empty { 0 } else { self.leading }
    }
}

/// The largest radius value and the colour range of some bins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scales {
    pub vmax: f64,
    pub cmin: f64,
    pub cmax: f64,
}

impl Scales {
    /// Over bins `t0..t1`, elements averaged into sectors of `eg`.
    pub fn of(field: &Field, color: Option<&Field>, eg: usize, t0: usize, t1: usize) -> Scales {
        let ne = field.elements;
        let sector = |f: &Field, t: usize, k: usize| -> f64 {
            let (a, b) = (k * eg, ((k + 1) * eg).min(ne));
            (a..b).map(|x| f.at(t, x)).sum::<f64>() / (b - a).max(1) as f64
        };
        let cf = color.unwrap_or(field);
        let mut s = Scales {
            vmax: 0.0,
            cmin: f64::INFINITY,
            cmax: f64::NEG_INFINITY,
        };
        for t in t0..t1 {
            for k in 0..ne.div_ceil(eg.max(1)) {
                s.vmax = s.vmax.max(sector(field, t, k));
                let c = sector(cf, t, k);
                s.cmin = s.cmin.min(c);
                s.cmax = s.cmax.max(c);
            }
        }
        s
    }

    /// The whole tube's scales for parameters `p`.
    pub fn whole(field: &Field, color: Option<&Field>, p: &KiviatParams) -> Scales {
        let skip = if p.keep_empty {
            0
        } else {
            leading_empty_bins(field)
        };
        let eg = p.elements_per_sector(field.elements);
        Scales::of(field, color, eg, skip, field.bins)
    }
}

impl View for Kiviat {
    const NAME: &'static str = "kiviat";
    const ABOUT: &'static str =
        "Kiviat tube: elements on a ring, radius = value, time along the tube (paper 003)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "width",
            help: "animation width in bins (0: the whole tube) [15]",
        },
        ParamDoc {
            key: "stretch",
            help: "length of a bin along the axis, relative to the radius [0.15]",
        },
        ParamDoc {
            key: "log",
            help: "logarithmic radius, log10(value / floor) [false]",
        },
        ParamDoc {
            key: "log_floor",
            help: "floor of the log radius, relative to the largest value [0.001]",
        },
        ParamDoc {
            key: "keep_empty",
            help: "keep the leading bins where every element is 0 [false]",
        },
        ParamDoc {
            key: "per_frame_scale",
            help: "colour and radius scales of each frame instead of the whole tube [false]",
        },
        ParamDoc {
            key: "inner",
            help: "radius of a zero value, relative to the largest [0.05]",
        },
        ParamDoc {
            key: "max_triangles",
            help: "level of detail: successive bins are averaged beyond this [2000000]",
        },
        ParamDoc {
            key: "max_sectors",
            help: "level of detail: adjacent elements are averaged beyond this many sectors [2048]",
        },
    ];
    type Params = KiviatParams;
    type Data = KiviatData;

    fn accepts(input: &Loaded, spec: &Resolved, _p: &KiviatParams) -> Result<()> {
        let (e, what) = match input {
            // an access tensor opened on its own: its elements
            Loaded::Tensor(t) => (t.shape[1] as usize, "the tensor".to_string()),
            _ => {
                let t = inputs::trace(input, Self::NAME)?;
                (
                    inputs::elements(t, &spec.spec.quantity)?,
                    spec.spec.quantity.clone(),
                )
            }
        };
        if e < 3 {
            return Err(Error::Invalid(format!(
                "a Kiviat tube needs at least 3 elements, {what} has {e}"
            )));
        }
        Ok(())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &KiviatParams) -> Result<KiviatData> {
        // the busy field of a trace resident on the GPU stays there, where
        // it fits one storage binding (the tube's kernels bind it whole)
        if let (Some(g), Loaded::Trace(t), "busy", None) = (
            &spec.gpu,
            input,
            spec.spec.quantity.as_str(),
            &spec.spec.color_by,
        ) && g.0.field_fits(spec.bins)
        {
            let mask = t.states.select(&spec.spec.states)?;
            let field = g.0.busy_field(&mask, spec.t0, spec.t1, spec.bins)?;
            let eg = p.elements_per_sector(field.elements);
            let summaries = field.summaries(eg)?;
            let mut meta = crate::analysis::fields::busy_field(
                Vec::new(),
                field.edges.clone(),
                field.elements,
            );
            if spec.states_label != "busy" {
                meta.quantity = format!("fraction of time in {}", spec.states_label);
            }
            let leading = leading_empty_summaries(&summaries);
            let skip = if p.keep_empty { 0 } else { leading };
            let whole = scales_of_summaries(&summaries, skip, meta.bins);
            return Ok(KiviatData {
                field: meta,
                color: None,
                whole,
                leading,
                resident: Some((field, summaries)),
            });
        }
        let field = inputs::field_of(input, &spec.spec.quantity, spec, Self::NAME)?;
        let color = spec
            .spec
            .color_by
            .as_deref()
            .map(|q| inputs::field_of(input, q, spec, Self::NAME))
            .transpose()?;
        let whole = Scales::whole(&field, color.as_ref(), p);
        Ok(KiviatData {
            leading: leading_empty_bins(&field),
            field,
            color,
            whole,
            resident: None,
        })
    }

    fn on_gpu(d: &KiviatData) -> bool {
        d.resident.is_some()
    }

    fn data_key(p: &KiviatParams) -> serde_json::Value {
        // what the whole tube's scales depend on
        serde_json::json!({ "keep_empty": p.keep_empty, "max_sectors": p.max_sectors })
    }

    fn animation(d: &KiviatData, p: &KiviatParams) -> Animation {
        if p.width == 0 {
            return Animation::STILL;
        }
        let avail = d.field.bins.saturating_sub(d.skip(p));
        Animation {
            steps: avail.saturating_sub(p.width) + 1,
            stride: p.width,
        }
    }

    fn step_at(d: &KiviatData, p: &KiviatParams, t: Time) -> Option<usize> {
        if p.width == 0 || d.field.time != TimeAxis::Nanoseconds {
            return None;
        }
        let skip = d.skip(p);
        // the slide ends with the bin that holds the cursor
        let steps = Self::animation(d, p).steps;
        let bin = super::step_in_bins(&d.field.edges, t, 0, d.field.bins);
        Some(
            bin.saturating_sub(skip)
                .saturating_sub(p.width - 1)
                .min(steps - 1),
        )
    }

    fn build(d: &KiviatData, spec: &Resolved, p: &KiviatParams, ctx: BuildCtx) -> Result<Scene> {
        if let Some((g, summaries)) = &d.resident {
            return build_resident(
                g,
                &d.field,
                summaries,
                &spec.colormap,
                p,
                ctx.step,
                Some(d.whole),
                ctx.selected,
            );
        }
        let mut s = build(
            &d.field,
            d.color.as_ref(),
            &spec.colormap,
            p,
            ctx.step,
            Some(d.whole),
        )?;
        // the selected processor's sector: a line along the tube, just outside
        let ne = d.field.elements;
        let eg = p.elements_per_sector(ne);
        let e = ne.div_ceil(eg).max(1);
        if let Some(sel) = ctx.selected.filter(|&x| x < ne)
            && let Some(m) = s.meshes.first()
        {
            let line: Vec<[f32; 3]> = m
                .vertices
                .iter()
                .skip(sel / eg)
                .step_by(e)
                .map(|v| v.position)
                .collect();
            spoke(&mut s, line.into_iter(), sel);
        }
        Ok(s)
    }

    fn panel(ui: &mut egui::Ui, p: &mut KiviatParams) {
        ui.add(egui::Slider::new(&mut p.width, 0..=200).text("animation width (bins)"));
        ui.add(
            egui::Slider::new(&mut p.stretch, 0.01..=1.0)
                .logarithmic(true)
                .text("stretch"),
        );
        ui.checkbox(&mut p.log, "logarithmic radius");
        ui.checkbox(&mut p.keep_empty, "keep leading empty bins");
        ui.checkbox(&mut p.per_frame_scale, "scale per frame");
    }
}

/// Which bins and elements one frame of the tube shows, and how they are
/// grouped (level of detail): the same for the CPU and the GPU mesh.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Leading empty bins trimmed.
    pub skip: usize,
    /// Bins shown: `[first, first + n)`.
    pub first: usize,
    pub n: usize,
    /// Elements, elements per sector, sectors.
    pub ne: usize,
    pub eg: usize,
    pub e: usize,
    /// Bins per ring, rings.
    pub group: usize,
    pub rings: usize,
}

impl Layout {
    /// The frame from bin `start` (counted after the `skip` trimmed bins)
    /// of a field of `bins` × `ne`.
    pub fn new(
        bins: usize,
        ne: usize,
        skip: usize,
        p: &KiviatParams,
        start: usize,
    ) -> Result<Layout> {
        if ne < 3 {
            return Err(Error::Invalid(format!(
                "a Kiviat tube needs at least 3 elements, the field has {ne}"
            )));
        }
        let avail = bins.saturating_sub(skip);
        let first = skip + start;
        let n = if p.width == 0 {
            avail.saturating_sub(start)
        } else {
            p.width.min(avail.saturating_sub(start))
        };
        if n == 0 {
            return Err(Error::Invalid(format!(
                "no bins to show: {bins} bins, {skip} leading empty, start {start}"
            )));
        }
        // level of detail: at most `max_sectors` sectors around the ring
        // (adjacent elements averaged), then `group` successive bins per ring
        let eg = p.elements_per_sector(ne);
        let e = ne.div_ceil(eg);
        let group = (2 * e * n).div_ceil(p.max_triangles.max(2 * e)).max(1);
        Ok(Layout {
            skip,
            first,
            n,
            ne,
            eg,
            e,
            group,
            rings: n.div_ceil(group),
        })
    }

    /// The bins of ring `r`.
    pub fn ring_bins(&self, r: usize) -> (usize, usize) {
        let a = self.first + r * self.group;
        (a, (a + self.group).min(self.first + self.n))
    }

    /// The angle of sector `k` (element 0 at +y, clockwise).
    pub fn angle(&self, k: usize) -> f32 {
        std::f32::consts::FRAC_PI_2 - std::f32::consts::TAU * k as f32 / self.e as f32
    }

    /// The cut and the scales as the mesh builders take them.
    pub fn shape(&self, s: Scales, p: &KiviatParams) -> TubeShape {
        TubeShape {
            first: self.first,
            shown: self.n,
            eg: self.eg,
            sectors: self.e,
            group: self.group,
            rings: self.rings,
            vmax: s.vmax,
            cmin: s.cmin,
            cmax: s.cmax,
            floor: if s.vmax > 0.0 {
                s.vmax * p.log_floor.clamp(1e-12, 0.5)
            } else {
                1.0
            },
            log: p.log,
            inner: p.inner,
            stretch: p.stretch,
        }
    }

    /// The quads between adjacent sectors (wrapping) and successive rings,
    /// two triangles each.
    pub fn indices(&self) -> Vec<u32> {
        let e = self.e;
        let mut out = Vec::with_capacity(self.rings.saturating_sub(1) * e * 6);
        for t in 0..self.rings.saturating_sub(1) {
            for k in 0..e {
                let (a, b) = ((t * e + k) as u32, (t * e + (k + 1) % e) as u32);
                let (c, d) = (a + e as u32, b + e as u32);
                out.extend_from_slice(&[a, b, d, a, d, c]);
            }
        }
        out
    }
}

/// The scales of bins `t0..t1` from a resident field's bin summaries (the
/// tube is coloured by its radius field there).
pub fn scales_of_summaries(s: &[BinSummary], t0: usize, t1: usize) -> Scales {
    let mut out = Scales {
        vmax: 0.0,
        cmin: f64::INFINITY,
        cmax: f64::NEG_INFINITY,
    };
    for b in &s[t0.min(s.len())..t1.min(s.len())] {
        out.vmax = out.vmax.max(b.max as f64);
        out.cmin = out.cmin.min(b.min as f64);
        out.cmax = out.cmax.max(b.max as f64);
    }
    out
}

/// Builds the tube for `field` (radius), coloured by `color` (or by the
/// radius field), from bin `start` (counted after trimmed empty bins).
pub fn build(
    field: &Field,
    color: Option<&Field>,
    colormap: &str,
    p: &KiviatParams,
    start: usize,
    whole: Option<Scales>,
) -> Result<Scene> {
    if let Some(c) = color
        && (c.bins != field.bins || c.elements != field.elements)
    {
        return Err(Error::Invalid(format!(
            "the colour field ({} bins x {} elements) must have the shape of the radius field ({} x {})",
            c.bins, c.elements, field.bins, field.elements
        )));
    }
    let skip = if p.keep_empty {
        0
    } else {
        leading_empty_bins(field)
    };
    let l = Layout::new(field.bins, field.elements, skip, p, start)?;
    let (ne, eg, e) = (l.ne, l.eg, l.e);
    let sector = |f: &Field, t: usize, k: usize| -> f64 {
        let (a, b) = (k * eg, ((k + 1) * eg).min(ne));
        (a..b).map(|x| f.at(t, x)).sum::<f64>() / (b - a).max(1) as f64
    };
    let avg = |f: &Field, a: usize, b: usize, k: usize| -> f64 {
        (a..b).map(|t| sector(f, t, k)).sum::<f64>() / (b - a).max(1) as f64
    };
    // scales: the whole tube (one scale per animation) or this frame
    let cf = color.unwrap_or(field);
    let scales = if p.per_frame_scale {
        Scales::of(field, color, eg, l.first, l.first + l.n)
    } else {
        whole.unwrap_or_else(|| Scales::of(field, color, eg, skip, field.bins))
    };
    let shape = l.shape(scales, p);
    let Scales { vmax, cmin, cmax } = scales;
    let floor = shape.floor;
    // the radius in [0, 1]
    let radius = |v: f64| -> f32 {
        if vmax <= 0.0 {
            return 0.0;
        }
        let r = if p.log {
            (v.max(floor) / floor).log10() / (vmax / floor).log10()
        } else {
            v.max(0.0) / vmax
        };
        r.clamp(0.0, 1.0) as f32
    };
    let constant = cmax <= cmin;
    let shade = |c: f64| -> f32 {
        if constant {
            0.5
        } else {
            ((c - cmin) / (cmax - cmin)) as f32
        }
    };
    let cmap = Colormap::named(colormap)?;
    let mut mesh = Mesh {
        lit: true,
        ..Default::default()
    };
    let z_of = |r: usize| -((r * l.group) as f32) * p.stretch;
    for r in 0..l.rings {
        let (a, b) = l.ring_bins(r);
        for k in 0..e {
            let rad = p.inner + (1.0 - p.inner) * radius(avg(field, a, b, k));
            let ang = l.angle(k);
            mesh.vertices.push(Vertex {
                position: [rad * ang.cos(), rad * ang.sin(), z_of(r)],
                normal: [0.0; 3],
                color: rgba(cmap.at(shade(avg(cf, a, b, k))), 1.0),
            });
        }
    }
    mesh.indices = l.indices();
    mesh.smooth_normals();
    let mut scene = Scene::new("Kiviat tube", Projection::Perspective);
    // hover: every vertex (sector × ring), up to 50,000
    if l.rings * e <= MAX_PICKS {
        let positions: Vec<[f32; 3]> = mesh.vertices.iter().map(|v| v.position).collect();
        picks(
            &mut scene,
            field,
            color,
            &l,
            &shape,
            &positions,
            |r, k| {
                let (a, b) = l.ring_bins(r);
                avg(field, a, b, k)
            },
            |r, k| {
                let (a, b) = l.ring_bins(r);
                color.map(|c| avg(c, a, b, k))
            },
        );
    }
    if l.rings == 1 {
        outline(&mut scene, &mesh.vertices[..e]);
    }
    frame(&mut scene, field, color, colormap, p, &l, &shape);
    scene.meshes.push(mesh);
    Ok(scene)
}

/// Builds the tube of a busy field left on the GPU: the mesh is made there
/// by [`GpuField::tube`] and drawn where it lies; `meta` is the field
/// without its values (bins, edges, names), `summaries` its bins'
/// summaries over the layout's sectors. Hover texts (at most 50,000, with
/// their values) and the `selected` processor's spoke (a vertex a ring)
/// are read back; the field never is.
#[allow(clippy::too_many_arguments)]
pub fn build_resident(
    g: &GpuField,
    meta: &Field,
    summaries: &[BinSummary],
    colormap: &str,
    p: &KiviatParams,
    start: usize,
    whole: Option<Scales>,
    selected: Option<usize>,
) -> Result<Scene> {
    let skip = if p.keep_empty {
        0
    } else {
        leading_empty_summaries(summaries)
    };
    let l = Layout::new(meta.bins, meta.elements, skip, p, start)?;
    let scales = if p.per_frame_scale {
        scales_of_summaries(summaries, l.first, l.first + l.n)
    } else {
        whole.unwrap_or_else(|| scales_of_summaries(summaries, skip, meta.bins))
    };
    let shape = l.shape(scales, p);
    let cmap = Colormap::named(colormap)?;
    let tube = g.tube(&shape, cmap.stops(), cmap.is_categorical(), || l.indices())?;
    let mut scene = Scene::new("Kiviat tube", Projection::Perspective);
    let e = l.e as u32;
    // hover texts need the shown values: read back with their vertices
    // when few (44 bytes a vertex, as many as the CPU path hovers)
    if l.rings * l.e <= MAX_PICKS {
        let (verts, values) = tube.read(std::slice::from_ref(&(0..l.rings as u32 * e)))?;
        let positions: Vec<[f32; 3]> = verts.iter().map(|v| v.position).collect();
        picks(
            &mut scene,
            meta,
            None,
            &l,
            &shape,
            &positions,
            // to 6 significant digits, below the f32 averages' error: a
            // CPU 0.1 that the GPU summed to 0.099999994 reads 0.1 alike
            |r, k| {
                let v = values[r * l.e + k];
                format!("{v:.5e}").parse::<f64>().unwrap_or(v as f64)
            },
            |_, _| None,
        );
        if l.rings == 1 {
            outline(&mut scene, &verts);
        }
    } else if l.rings == 1 {
        // a single ring has no triangles: its outline, 40 bytes a sector
        outline(&mut scene, &tube.read(std::slice::from_ref(&(0..e)))?.0);
    }
    frame(&mut scene, meta, None, colormap, p, &l, &shape);
    // the selected processor's spoke: its sector's vertex of every ring
    if let Some(sel) = selected.filter(|&x| x < l.ne) {
        let k = (sel / l.eg) as u32;
        let runs: Vec<std::ops::Range<u32>> = (0..l.rings as u32)
            .map(|r| r * e + k..r * e + k + 1)
            .collect();
        let (verts, _) = tube.read(&runs)?;
        spoke(&mut scene, verts.iter().map(|v| v.position), sel);
    }
    scene.resident.push(tube.mesh);
    Ok(scene)
}

/// The most hover points of one frame (sectors × rings).
const MAX_PICKS: usize = 50_000;

/// Hover texts at `positions` (ring-major): the sector's processors, the
/// ring's time, the value `value(ring, sector)` and the colour field's.
#[allow(clippy::too_many_arguments)]
fn picks(
    scene: &mut Scene,
    field: &Field,
    color: Option<&Field>,
    l: &Layout,
    shape: &TubeShape,
    positions: &[[f32; 3]],
    value: impl Fn(usize, usize) -> f64,
    color_value: impl Fn(usize, usize) -> Option<f64>,
) {
    let (ne, eg, e) = (l.ne, l.eg, l.e);
    let (vmax, cmin, cmax) = (shape.vmax, shape.cmin, shape.cmax);
    let mag = field.edges[l.first + l.n].max(1) as f64;
    for r in 0..l.rings {
        let (a, b) = l.ring_bins(r);
        let when = match field.time {
            TimeAxis::Nanoseconds => format!(
                "{} – {}",
                axes::format_time(field.edges[a] as f64, mag, 0.0),
                axes::format_time(field.edges[b] as f64, mag, 0.0)
            ),
            TimeAxis::Intervals => format!("intervals {}–{}", field.edges[a], field.edges[b]),
        };
        for k in 0..e {
            let Some(&at) = positions.get(r * e + k) else {
                return;
            };
            let (x0, x1) = (k * eg, ((k + 1) * eg).min(ne));
            let mut text = format!(
                "{}\n{when}\n{}: {}",
                super::moments::processors_text(x0, x1),
                field.quantity,
                axes::format_value(value(r, k), &Unit::from_name(&field.unit), vmax, 0.0)
            );
            if let (Some(c), Some(v)) = (color, color_value(r, k)) {
                text.push_str(&format!(
                    "\n{}: {}",
                    c.quantity,
                    axes::format_value(
                        v,
                        &Unit::from_name(&c.unit),
                        cmax.abs().max(cmin.abs()),
                        0.0
                    )
                ));
            }
            scene
                .picks
                .push(Pick::point(at, text, (eg == 1).then_some(x0)));
        }
    }
}

/// The selected processor's sector: a line along the tube through its
/// vertices (one a ring), just outside, a box at the front and a key.
fn spoke(scene: &mut Scene, positions: impl Iterator<Item = [f32; 3]>, sel: usize) {
    let line: Vec<[f32; 3]> = positions.map(|[x, y, z]| [x * 1.04, y * 1.04, z]).collect();
    for w in line.windows(2) {
        scene.lines.push(Segment {
            a: w[0],
            b: w[1],
            color: super::moments::SELECTED,
        });
    }
    if let Some(first) = line.first() {
        scene.frame_box(*first, 0.05, super::moments::SELECTED);
    }
    scene.key.push(crate::scene::KeyEntry {
        mark: crate::scene::KeyMark::Line,
        color: super::moments::SELECTED,
        text: format!("selected: processor {sel}"),
    });
}

/// Bins before the first with any busy time, from the summaries.
pub fn leading_empty_summaries(s: &[BinSummary]) -> usize {
    s.iter().take_while(|b| !b.any).count()
}

/// A single ring (width 1) drawn as its outline.
fn outline(scene: &mut Scene, ring: &[Vertex]) {
    let e = ring.len();
    for k in 0..e {
        let (a, b) = (ring[k], ring[(k + 1) % e]);
        scene.lines.push(Segment {
            a: a.position,
            b: b.position,
            color: a.color,
        });
    }
}

/// Everything of a frame but the tube: the time axis, the element
/// numbers, the title, the axes' meaning and the legend. Needs the
/// fields' bins, edges and names, not their values.
fn frame(
    scene: &mut Scene,
    field: &Field,
    color: Option<&Field>,
    colormap: &str,
    p: &KiviatParams,
    l: &Layout,
    shape: &TubeShape,
) {
    let (first, n, ne, eg, e) = (l.first, l.n, l.ne, l.eg, l.e);
    let (vmax, cmin, cmax, floor) = (shape.vmax, shape.cmin, shape.cmax, shape.floor);
    let constant = cmax <= cmin;
    let cf = color.unwrap_or(field);
    // the camera frames the unit radius, whatever the values of a frame
    let z_last = -(((l.rings - 1) * l.group) as f32) * p.stretch;
    scene.extent = Some(([-1.0, -1.0, z_last], [1.0, 1.0, 0.0]));
    let ink = axes::ink(true);
    // the time axis under the tube, in the field's time unit
    let z1 = (-(((l.rings.max(2) - 1) * l.group) as f32) * p.stretch).min(-p.stretch);
    let (ta, tb) = (field.edges[first] as f64, field.edges[first + n] as f64);
    let ay = -1.2f32;
    scene.lines.push(Segment {
        a: [0.0, ay, 0.0],
        b: [0.0, ay, z1],
        color: ink,
    });
    let (ticks, step) = axes::nice_ticks(ta, tb, 6);
    let mag = ta.abs().max(tb.abs());
    for v in ticks {
        let z = ((v - ta) / (tb - ta).max(1e-9)) as f32 * z1;
        scene.lines.push(Segment {
            a: [0.0, ay, z],
            b: [0.12, ay, z],
            color: ink,
        });
        let text = match field.time {
            TimeAxis::Nanoseconds => axes::format_time(v, mag, step),
            TimeAxis::Intervals => format!("interval {}", v as u64),
        };
        scene.labels.push(
            Label::world(text, [0.14, ay, z], 12.0, ink)
                .aligned(LabelAlign::LeftCenter)
                .priority(1),
        );
    }
    scene.labels.push(
        Label::world(
            match field.time {
                TimeAxis::Nanoseconds => "time →",
                TimeAxis::Intervals => "interval →",
            },
            [0.0, ay - 0.15, z1 * 0.5],
            12.0,
            ink,
        )
        .aligned(LabelAlign::CenterTop)
        .priority(3),
    );
    // element numbers around the front ring (at most 16)
    let every = e.div_ceil(16);
    for k in (0..e).step_by(every) {
        let ang = l.angle(k);
        scene.labels.push(
            Label::world(
                format!("{}", k * eg),
                [1.12 * ang.cos(), 1.12 * ang.sin(), 0.0],
                11.0,
                ink,
            )
            .aligned(LabelAlign::CenterBottom)
            .priority(2),
        );
    }
    let when = match field.time {
        TimeAxis::Nanoseconds => format!(
            "{} – {}",
            axes::format_time(ta, mag, step),
            axes::format_time(tb, mag, step)
        ),
        TimeAxis::Intervals => format!("intervals {}..{}", first, first + n - 1),
    };
    let radius_text = if p.log {
        format!(
            "radius log10({} / {})",
            field.quantity,
            axes::format_value(floor, &Unit::from_name(&field.unit), floor, 0.0)
        )
    } else {
        format!("radius {}", field.quantity)
    };
    scene.title = format!(
        "Kiviat tube: {radius_text}{}, {ne} elements, {when}{}{}",
        color.map_or(String::new(), |c| format!(", colour {}", c.quantity)),
        if eg > 1 {
            format!(" ({eg} elements per sector)")
        } else {
            String::new()
        },
        if l.group > 1 {
            format!(" ({} bins per ring)", l.group)
        } else {
            String::new()
        }
    );
    scene.axes = format!(
        "x, y: the ring of {ne} elements, element 0 at +y, clockwise (radius 1 = {} {}); \
         z: time, {} per bin, z = 0 at {}, later times toward -z",
        axes::format_value(vmax, &Unit::from_name(&field.unit), vmax, 0.0),
        field.unit,
        p.stretch,
        match field.time {
            TimeAxis::Nanoseconds => axes::format_time(ta, mag, 0.0),
            TimeAxis::Intervals => format!("interval {first}"),
        }
    );
    let unit = Unit::from_name(&cf.unit);
    scene.legend = Some(Legend {
        title: format!("{}{}", cf.quantity, unit.bracket(&cf.quantity)),
        colormap: colormap.to_string(),
        min: cmin,
        max: if constant { cmin } else { cmax },
        unit,
        note: Some(
            if p.per_frame_scale {
                "range of this frame"
            } else {
                "range of the whole tube"
            }
            .into(),
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fields::FieldLayout;

    fn field(bins: usize, e: usize, f: impl Fn(usize, usize) -> f64) -> Field {
        Field {
            bins,
            elements: e,
            values: (0..bins * e).map(|i| f(i / e, i % e)).collect(),
            edges: (0..=bins as u64).map(|k| k * 1000).collect(),
            layout: FieldLayout::Ring,
            quantity: "accesses".into(),
            unit: "accesses".into(),
            time: TimeAxis::Nanoseconds,
        }
    }

    fn params(width: usize) -> KiviatParams {
        KiviatParams {
            width,
            ..Default::default()
        }
    }

    #[test]
    fn counts_bounds_and_trimming() {
        // 3 leading empty bins, then value = element + 1
        let f = field(10, 8, |t, e| if t < 3 { 0.0 } else { e as f64 + 1.0 });
        let p = params(4);
        let s = build(&f, None, "viridis", &p, 0, None).unwrap();
        let m = &s.meshes[0];
        assert_eq!(m.vertices.len(), 4 * 8);
        assert_eq!(m.triangles(), 2 * 8 * 3);
        // the window starts at bin 3 = 3 µs
        assert!(s.title.contains("3 µs – 7 µs"), "{}", s.title);
        // the largest value (element 7) sits at radius 1
        let r7 = m.vertices[7].position;
        assert!(((r7[0] * r7[0] + r7[1] * r7[1]).sqrt() - 1.0).abs() < 1e-6);
        // colours follow the colour map over the whole tube's range
        let cmap = Colormap::named("viridis").unwrap();
        assert_eq!(&m.vertices[0].color[..3], &cmap.at(0.0));
        assert_eq!(&m.vertices[7].color[..3], &cmap.at(1.0));
        let leg = s.legend.as_ref().unwrap();
        assert_eq!((leg.min, leg.max), (1.0, 8.0));
        assert!(!leg.title.contains("[accesses]"), "{}", leg.title);
        // every normal is unit length
        assert!(m.vertices.iter().all(|v| {
            ((v.normal[0].powi(2) + v.normal[1].powi(2) + v.normal[2].powi(2)).sqrt() - 1.0).abs()
                < 1e-4
        }));
        // time ticks and element labels
        assert!(s.labels.iter().any(|l| l.text == "4 µs"));
        assert!(s.labels.iter().any(|l| l.text == "7"));
    }

    #[test]
    fn one_scale_per_animation_and_constant_windows() {
        // values grow with time: a late frame keeps the whole tube's scale
        let f = field(40, 6, |t, e| (t * (e + 1)) as f64);
        let a = build(&f, None, "viridis", &params(10), 0, None).unwrap();
        let b = build(&f, None, "viridis", &params(10), 25, None).unwrap();
        let (la, lb) = (a.legend.unwrap(), b.legend.unwrap());
        assert_eq!((la.min, la.max), (lb.min, lb.max));
        let own = build(
            &f,
            None,
            "viridis",
            &KiviatParams {
                per_frame_scale: true,
                ..params(10)
            },
            25,
            None,
        )
        .unwrap();
        assert!(own.legend.unwrap().min > la.min);
        // a constant field shows its one value
        let c = field(5, 4, |_, _| 2.0);
        let s = build(&c, None, "viridis", &params(0), 0, None).unwrap();
        let l = s.legend.unwrap();
        assert_eq!((l.min, l.max), (2.0, 2.0));
    }

    #[test]
    fn log_radius_is_log10_above_the_floor() {
        let f = field(2, 3, |_, e| [1.0, 10.0, 1000.0][e]);
        let p = KiviatParams {
            log: true,
            log_floor: 1e-3,
            inner: 0.0,
            keep_empty: true,
            ..params(0)
        };
        let s = build(&f, None, "viridis", &p, 0, None).unwrap();
        let r = |k: usize| {
            let v = s.meshes[0].vertices[k].position;
            (v[0] * v[0] + v[1] * v[1]).sqrt()
        };
        // floor = 1, radii log10(v)/3
        assert!((r(0) - 0.0).abs() < 1e-6);
        assert!((r(1) - 1.0 / 3.0).abs() < 1e-6);
        assert!((r(2) - 1.0).abs() < 1e-6);
        assert!(s.title.contains("log10"), "{}", s.title);
    }

    #[test]
    fn sliding_window_and_errors() {
        let f = field(30, 6, |t, e| (t * e) as f64);
        let keep = |w| KiviatParams {
            keep_empty: true,
            ..params(w)
        };
        let whole = build(&f, None, "viridis", &keep(0), 0, None).unwrap();
        assert_eq!(whole.meshes[0].vertices.len(), 30 * 6);
        let slid = build(&f, None, "viridis", &keep(15), 20, None).unwrap();
        assert_eq!(slid.meshes[0].vertices.len(), 10 * 6);
        assert!(build(&f, None, "viridis", &params(15), 40, None).is_err());
        assert!(
            build(
                &field(3, 2, |_, _| 1.0),
                None,
                "viridis",
                &params(15),
                0,
                None
            )
            .is_err()
        );
    }

    #[test]
    fn level_of_detail_keeps_the_budget() {
        let f = field(10_000, 64, |t, e| ((t + e) % 7) as f64);
        let s = build(
            &f,
            None,
            "viridis",
            &KiviatParams {
                keep_empty: true,
                max_triangles: 100_000,
                ..params(0)
            },
            0,
            None,
        )
        .unwrap();
        assert!(s.triangles() <= 100_000, "{}", s.triangles());
        assert!(s.triangles() > 50_000);
        assert!(s.title.contains("bins per ring"));
        // a million elements: sectors of averaged elements, never a lone ring
        let f = field(4, 1 << 20, |t, e| ((t + e) % 5) as f64);
        let s = build(&f, None, "viridis", &params(0), 0, None).unwrap();
        assert!(s.triangles() > 10_000 && s.triangles() <= 2_000_000);
        assert!(s.title.contains("512 elements per sector"), "{}", s.title);
    }
}
