//! Displacement (paper 003 §3.1, SPEC §4.3): a W × H grid of data
//! elements on a reference plane; above it the difference of local and
//! remote reads of each element, below it the difference of local and
//! remote writes, colour double-cued with height (a diverging map over one
//! scale for the whole animation). The representation adapts to the size:
//! spheres for small grids, towers for medium ones, a continuous
//! displacement surface for large ones (thresholds are parameters).
//! Animated over the tensor's intervals.
//!
//! Input: a trace with `--quantity tensor:PATH.npy` (the element access
//! tensor `[interval, element, processor, 4]` that `synth kernel --tensor`
//! writes).

use serde::{Deserialize, Serialize};

use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::error::{Error, Result};
use crate::readers::Loaded;
use crate::readers::tensor::{AccessTensor, read_access_tensor};
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, Label, LabelAlign, Legend, Mesh, Projection, Scene, Segment,
    Vertex, rgba,
};

/// The displacement view.
pub struct Displacement;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DisplacementParams {
    /// The grid of elements "WxH" (default: the squarest that holds them).
    pub grid: String,
    /// "auto", "spheres", "towers" or "surface".
    pub style: String,
    /// Spheres up to this many elements (auto).
    pub spheres_max: usize,
    /// Towers up to this many elements (auto); a surface beyond.
    pub towers_max: usize,
    /// Height of the largest difference, relative to the grid's width.
    pub height: f32,
}

impl Default for DisplacementParams {
    fn default() -> Self {
        DisplacementParams {
            grid: String::new(),
            style: "auto".into(),
            spheres_max: 144,
            towers_max: 1024,
            height: 0.35,
        }
    }
}

/// Local − remote reads and writes per interval and element.
pub struct DisplacementData {
    pub intervals: usize,
    pub elements: usize,
    pub reads: Vec<f64>,
    pub writes: Vec<f64>,
}

/// The grid `WxH` of `p`, or the squarest `W × H = n` (W ≥ H).
pub fn grid_of(spec: &str, n: usize) -> Result<(usize, usize)> {
    if spec.is_empty() {
        let mut h = (n as f64).sqrt() as usize;
        while h > 1 && !n.is_multiple_of(h) {
            h -= 1;
        }
        let h = h.max(1);
        return Ok((n / h, h));
    }
    let (w, h) = spec
        .split_once('x')
        .and_then(|(w, h)| {
            Some((
                w.trim().parse::<usize>().ok()?,
                h.trim().parse::<usize>().ok()?,
            ))
        })
        .ok_or_else(|| Error::Invalid(format!("expected grid=WxH, found '{spec}'")))?;
    if w * h != n {
        return Err(Error::Invalid(format!(
            "grid={spec} holds {} elements, the tensor has {n}",
            w * h
        )));
    }
    Ok((w, h))
}

/// The tensor named by the data specification's quantity.
pub fn tensor_of(input: &Loaded, spec: &Resolved, view: &str) -> Result<AccessTensor> {
    let path = super::inputs::tensor_path(input, &spec.spec.quantity).ok_or_else(|| {
        Error::Invalid(format!(
            "the {view} view reads an element access tensor: open the .npy, or give a trace with --quantity tensor:PATH.npy"
        ))
    })?;
    read_access_tensor(&path)
}

impl View for Displacement {
    const NAME: &'static str = "displacement";
    const ABOUT: &'static str =
        "Displacement of a data grid: local − remote reads above, writes below (paper 003 §3.1)";
    const COLORMAP: &'static str = "coolwarm";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "grid",
            help: "the elements as a WxH grid [the squarest]",
        },
        ParamDoc {
            key: "style",
            help: "auto, spheres, towers or surface [auto]",
        },
        ParamDoc {
            key: "spheres_max",
            help: "auto: spheres up to this many elements [144]",
        },
        ParamDoc {
            key: "towers_max",
            help: "auto: towers up to this many elements, a surface beyond [1024]",
        },
        ParamDoc {
            key: "height",
            help: "height of the largest difference, relative to the grid width [0.35]",
        },
    ];
    type Params = DisplacementParams;
    type Data = DisplacementData;

    fn accepts(input: &Loaded, spec: &Resolved, _p: &DisplacementParams) -> Result<()> {
        super::inputs::accepts_tensor(input, &spec.spec.quantity, Self::NAME)
    }

    fn compute(
        input: &Loaded,
        spec: &Resolved,
        p: &DisplacementParams,
    ) -> Result<DisplacementData> {
        let t = tensor_of(input, spec, Self::NAME)?;
        grid_of(&p.grid, t.elements)?;
        let n = t.intervals * t.elements;
        let (mut reads, mut writes) = (vec![0.0; n], vec![0.0; n]);
        for ti in 0..t.intervals {
            for e in 0..t.elements {
                let (mut r, mut w) = (0.0, 0.0);
                for q in 0..t.processors {
                    r += (t.at(ti, e, q, 0) - t.at(ti, e, q, 1)) as f64;
                    w += (t.at(ti, e, q, 2) - t.at(ti, e, q, 3)) as f64;
                }
                reads[ti * t.elements + e] = r;
                writes[ti * t.elements + e] = w;
            }
        }
        Ok(DisplacementData {
            intervals: t.intervals,
            elements: t.elements,
            reads,
            writes,
        })
    }

    fn data_key(p: &DisplacementParams) -> serde_json::Value {
        serde_json::json!({ "grid": p.grid })
    }

    fn animation(d: &DisplacementData, _p: &DisplacementParams) -> Animation {
        Animation {
            steps: d.intervals,
            stride: 1,
        }
    }

    fn build(
        d: &DisplacementData,
        spec: &Resolved,
        p: &DisplacementParams,
        ctx: BuildCtx,
    ) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx.step)
    }

    fn panel(ui: &mut egui::Ui, p: &mut DisplacementParams) {
        egui::ComboBox::from_label("representation")
            .selected_text(p.style.clone())
            .show_ui(ui, |ui| {
                for s in ["auto", "spheres", "towers", "surface"] {
                    ui.selectable_value(&mut p.style, s.to_string(), s);
                }
            });
        ui.add(egui::Slider::new(&mut p.height, 0.05..=1.0).text("height"));
    }
}

/// Builds the grid of interval `t`.
pub fn build(
    d: &DisplacementData,
    colormap: &str,
    p: &DisplacementParams,
    t: usize,
) -> Result<Scene> {
    let (w, h) = grid_of(&p.grid, d.elements)?;
    let t = t.min(d.intervals.saturating_sub(1));
    let style = match p.style.as_str() {
        "auto" if d.elements <= p.spheres_max => "spheres",
        "auto" if d.elements <= p.towers_max => "towers",
        "auto" => "surface",
        s @ ("spheres" | "towers" | "surface") => s,
        other => {
            return Err(Error::Invalid(format!(
                "style={other}: expected auto, spheres, towers or surface"
            )));
        }
    };
    // one scale for the whole animation
    let m = d
        .reads
        .iter()
        .chain(&d.writes)
        .fold(0f64, |a, v| a.max(v.abs()))
        .max(1e-12);
    let cmap = Colormap::named(colormap)?;
    let cell = 2.0 / w.max(h) as f32;
    let (x0, z0) = (-(w as f32) * cell / 2.0, -(h as f32) * cell / 2.0);
    let top = p.height.clamp(0.01, 4.0) * 2.0;
    let at = |i: usize, j: usize| [x0 + (i as f32 + 0.5) * cell, z0 + (j as f32 + 0.5) * cell];
    let color = |v: f64| rgba(cmap.at(((v / m + 1.0) / 2.0) as f32), 1.0);
    let mut scene = Scene::new("", Projection::Perspective);
    let row = |vals: &[f64], e: usize| vals[t * d.elements + e];
    // hover: each element's read and write differences (up to 65,536)
    if d.elements <= 65_536 {
        for e in 0..d.elements {
            let [x, z] = at(e % w, e / w);
            let (r, wr) = (row(&d.reads, e), row(&d.writes, e));
            let text = format!(
                "element {e} ({}, {})\ninterval {t}\nread difference {r}\nwrite difference {wr}",
                e % w,
                e / w
            );
            scene.picks.push(Pick::point(
                [x, (r / m) as f32 * top, z],
                text.clone(),
                None,
            ));
            if wr != 0.0 {
                scene
                    .picks
                    .push(Pick::point([x, -(wr / m) as f32 * top, z], text, None));
            }
        }
    }
    match style {
        "spheres" | "towers" => {
            let mut g = Vec::with_capacity(2 * d.elements);
            for e in 0..d.elements {
                let [x, z] = at(e % w, e / w);
                for (v, sign) in [(row(&d.reads, e), 1.0f32), (row(&d.writes, e), -1.0)] {
                    // reads rise, writes fall: a write difference of +5 hangs 5 below
                    let y = sign * (v / m) as f32 * top;
                    if style == "spheres" {
                        g.push(GlyphInstance {
                            position: [x, y, z],
                            scale: [cell * 0.6; 3],
                            color: color(v),
                        });
                    } else if y != 0.0 {
                        g.push(GlyphInstance {
                            position: [x, y / 2.0, z],
                            scale: [cell * 0.7, y.abs(), cell * 0.7],
                            color: color(v),
                        });
                    }
                }
            }
            scene.glyphs.push(Glyphs {
                shape: if style == "spheres" {
                    GlyphShape::Sphere
                } else {
                    GlyphShape::Box
                },
                instances: g,
            });
        }
        _ => {
            for (vals, sign) in [(&d.reads, 1.0f32), (&d.writes, -1.0)] {
                let mut mesh = Mesh {
                    lit: true,
                    ..Default::default()
                };
                for e in 0..d.elements {
                    let [x, z] = at(e % w, e / w);
                    let v = row(vals, e);
                    mesh.vertices.push(Vertex {
                        position: [x, sign * (v / m) as f32 * top, z],
                        normal: [0.0, 1.0, 0.0],
                        color: color(v),
                    });
                }
                for j in 0..h.saturating_sub(1) {
                    for i in 0..w.saturating_sub(1) {
                        let a = (j * w + i) as u32;
                        let (b, c, dd) = (a + 1, a + w as u32, a + w as u32 + 1);
                        mesh.indices.extend_from_slice(&[a, c, b, b, c, dd]);
                    }
                }
                mesh.smooth_normals();
                scene.meshes.push(mesh);
            }
        }
    }
    // the reference plane: its outline and grid lines
    let (x1, z1) = (x0 + w as f32 * cell, z0 + h as f32 * cell);
    let grey = [0.55, 0.58, 0.65, 1.0];
    for (a, b) in [
        ([x0, z0], [x1, z0]),
        ([x1, z0], [x1, z1]),
        ([x1, z1], [x0, z1]),
        ([x0, z1], [x0, z0]),
    ] {
        scene.lines.push(Segment {
            a: [a[0], 0.0, a[1]],
            b: [b[0], 0.0, b[1]],
            color: grey,
        });
    }
    let ink = axes::ink(true);
    for (axis, n) in [(0, w), (1, h)] {
        for q in axes::integer_ticks(0, (n - 1) as u64, 5) {
            let [x, z] = if axis == 0 {
                at(q as usize, 0)
            } else {
                at(0, q as usize)
            };
            let pos = if axis == 0 {
                [x, 0.0, z0 - 0.06]
            } else {
                [x0 - 0.06, 0.0, z]
            };
            scene.labels.push(
                Label::world(format!("{q}"), pos, 11.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
    }
    scene.labels.push(
        Label::world("element column", [0.0, 0.0, z0 - 0.25], 12.0, ink)
            .aligned(LabelAlign::CenterTop)
            .priority(2),
    );
    scene.labels.push(
        Label::world("element row", [x0 - 0.3, 0.0, 0.0], 12.0, ink)
            .aligned(LabelAlign::RightCenter)
            .priority(2),
    );
    scene.legend = Some(Legend {
        title: "local − remote accesses".into(),
        colormap: colormap.to_string(),
        min: -m,
        max: m,
        unit: Unit::Count("accesses".into()),
        note: Some("reads above, writes below".into()),
    });
    scene.axes = format!(
        "x: element column (0..{}), z: element row (0..{}), {cell} per element; y: reads (local − remote) above 0, writes below, {top} = {m} accesses",
        w - 1,
        h - 1
    );
    scene.title = format!(
        "Displacement: local − remote reads above, writes below — {w}×{h} elements as {style}, interval {t} of {}",
        d.intervals
    );
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(w: usize, h: usize) -> DisplacementData {
        let n = w * h;
        DisplacementData {
            intervals: 2,
            elements: n,
            reads: (0..2 * n).map(|i| (i % 7) as f64 - 2.0).collect(),
            writes: (0..2 * n).map(|i| -((i % 5) as f64)).collect(),
        }
    }

    #[test]
    fn representation_adapts_to_the_size() {
        let p = DisplacementParams::default();
        let s = build(&data(8, 8), "coolwarm", &p, 0).unwrap();
        assert_eq!(s.glyphs[0].shape, GlyphShape::Sphere);
        assert_eq!(s.glyphs[0].instances.len(), 128);
        let s = build(&data(16, 16), "coolwarm", &p, 0).unwrap();
        assert_eq!(s.glyphs[0].shape, GlyphShape::Box);
        let s = build(&data(64, 64), "coolwarm", &p, 1).unwrap();
        assert!(s.glyphs.is_empty());
        assert_eq!(s.meshes.len(), 2);
        assert_eq!(s.meshes[0].triangles(), 2 * 63 * 63);
        // reads above the plane, writes (here ≤ 0 differences) ... below
        assert!(s.meshes[0].vertices.iter().any(|v| v.position[1] > 0.0));
        assert!(s.title.contains("surface"), "{}", s.title);
    }

    #[test]
    fn grids() {
        assert_eq!(grid_of("", 64).unwrap(), (8, 8));
        assert_eq!(grid_of("", 12).unwrap(), (4, 3));
        assert_eq!(grid_of("6x2", 12).unwrap(), (6, 2));
        assert!(grid_of("5x2", 12).is_err());
        assert!(grid_of("ax2", 12).is_err());
    }
}
