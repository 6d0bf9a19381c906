//! 3D scatter glyphs (paper 003 §3.3, SPEC §4.4): one glyph per (element,
//! processor) with accesses of the chosen kinds in an interval: at the
//! element's grid position, raised by the count, coloured by processor.
//! Instanced boxes; beyond `max_glyphs`, blocks of k × k elements share a
//! glyph per processor (their counts add up) and the title says so.
//!
//! Input: a trace with `--quantity tensor:PATH.npy`; `--kinds` chooses the
//! access kinds.

use serde::{Deserialize, Serialize};

use super::displacement::{grid_of, tensor_of};
use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::fields::access_kinds;
use crate::error::Result;
use crate::readers::Loaded;
use crate::readers::tensor::AccessTensor;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, KeyEntry, KeyMark, Label, LabelAlign, Projection, Scene,
    Segment, rgba,
};

/// The scatter view.
pub struct Scatter;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScatterParams {
    /// The elements as a "WxH" grid (default: the squarest).
    pub grid: String,
    /// Level of detail: at most this many glyphs.
    pub max_glyphs: usize,
    /// Height of the largest count, relative to the grid's width.
    pub height: f32,
}

impl Default for ScatterParams {
    fn default() -> Self {
        ScatterParams {
            grid: String::new(),
            max_glyphs: 150_000,
            height: 0.5,
        }
    }
}

/// The tensor and the kinds kept.
pub struct ScatterData {
    pub tensor: AccessTensor,
    pub kinds: [bool; 4],
    pub kinds_name: String,
}

impl View for Scatter {
    const NAME: &'static str = "scatter";
    const ABOUT: &'static str = "3D scatter glyphs: accesses per element and processor, colour = processor (paper 003 §3.3)";
    const COLORMAP: &'static str = "categorical";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "grid",
            help: "the elements as a WxH grid [the squarest]",
        },
        ParamDoc {
            key: "max_glyphs",
            help: "level of detail: blocks of elements share glyphs beyond this [150000]",
        },
        ParamDoc {
            key: "height",
            help: "height of the largest count, relative to the grid width [0.5]",
        },
    ];
    type Params = ScatterParams;
    type Data = ScatterData;

    fn accepts(input: &Loaded, spec: &Resolved, _p: &ScatterParams) -> Result<()> {
        super::inputs::accepts_tensor(input, &spec.spec.quantity, Self::NAME)
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &ScatterParams) -> Result<ScatterData> {
        let tensor = tensor_of(input, spec, Self::NAME)?;
        grid_of(&p.grid, tensor.elements)?;
        Ok(ScatterData {
            tensor,
            kinds: access_kinds(&spec.spec.kinds)?,
            kinds_name: spec.spec.kinds.clone(),
        })
    }

    fn data_key(p: &ScatterParams) -> serde_json::Value {
        serde_json::json!({ "grid": p.grid })
    }

    fn animation(d: &ScatterData, _p: &ScatterParams) -> Animation {
        Animation {
            steps: d.tensor.intervals,
            stride: 1,
        }
    }

    fn build(d: &ScatterData, spec: &Resolved, p: &ScatterParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx.step)
    }

    fn panel(ui: &mut egui::Ui, p: &mut ScatterParams) {
        ui.add(egui::Slider::new(&mut p.height, 0.05..=2.0).text("height"));
    }
}

/// Builds the glyphs of interval `t`.
pub fn build(d: &ScatterData, colormap: &str, p: &ScatterParams, t: usize) -> Result<Scene> {
    let a = &d.tensor;
    let (w, h) = grid_of(&p.grid, a.elements)?;
    let t = t.min(a.intervals.saturating_sub(1));
    let count = |t: usize, e: usize, q: usize| -> f64 {
        (0..4)
            .filter(|&k| d.kinds[k])
            .map(|k| a.at(t, e, q, k) as f64)
            .sum()
    };
    // level of detail: k × k blocks of elements until the glyphs fit
    let glyphs_at = |k: usize| {
        let (bw, bh) = (w.div_ceil(k), h.div_ceil(k));
        let mut n = 0usize;
        for bj in 0..bh {
            for bi in 0..bw {
                for q in 0..a.processors {
                    let any = (bj * k..((bj + 1) * k).min(h)).any(|j| {
                        (bi * k..((bi + 1) * k).min(w)).any(|i| count(t, j * w + i, q) > 0.0)
                    });
                    n += any as usize;
                }
            }
        }
        n
    };
    let mut k = 1;
    while k < w.max(h) && glyphs_at(k) > p.max_glyphs.max(1) {
        k *= 2;
    }
    let (bw, bh) = (w.div_ceil(k), h.div_ceil(k));
    // one height scale for the whole animation (at this block size)
    let block = |t: usize, bi: usize, bj: usize, q: usize| -> f64 {
        let mut s = 0.0;
        for j in bj * k..((bj + 1) * k).min(h) {
            for i in bi * k..((bi + 1) * k).min(w) {
                s += count(t, j * w + i, q);
            }
        }
        s
    };
    let mut m = 0f64;
    for tt in 0..a.intervals {
        for bj in 0..bh {
            for bi in 0..bw {
                for q in 0..a.processors {
                    m = m.max(block(tt, bi, bj, q));
                }
            }
        }
    }
    let m = m.max(1e-12);
    let cmap = Colormap::named(colormap)?;
    let cell = 2.0 / bw.max(bh) as f32;
    let (x0, z0) = (-(bw as f32) * cell / 2.0, -(bh as f32) * cell / 2.0);
    let top = p.height.clamp(0.01, 8.0) * 2.0;
    let mut g = Vec::new();
    let mut picks = Vec::new();
    for bj in 0..bh {
        for bi in 0..bw {
            for q in 0..a.processors {
                let c = block(t, bi, bj, q);
                if c <= 0.0 {
                    continue;
                }
                let position = [
                    x0 + (bi as f32 + 0.5) * cell,
                    (c / m) as f32 * top,
                    z0 + (bj as f32 + 0.5) * cell,
                ];
                let elements = if k == 1 {
                    format!("element ({bi}, {bj})")
                } else {
                    format!(
                        "elements ({}–{}, {}–{})",
                        bi * k,
                        ((bi + 1) * k).min(w) - 1,
                        bj * k,
                        ((bj + 1) * k).min(h) - 1
                    )
                };
                picks.push(Pick::point(
                    position,
                    format!("{elements}\nprocessor {q}\ninterval {t}\naccesses: {c}"),
                    None,
                ));
                g.push(GlyphInstance {
                    position,
                    scale: [cell * 0.5, cell * 0.5, cell * 0.5],
                    color: rgba(cmap.category(q), 1.0),
                });
            }
        }
    }
    let shown = g.len();
    let mut scene = Scene::new("", Projection::Perspective);
    scene.picks = picks;
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Box,
        instances: g,
    });
    let (x1, z1) = (x0 + bw as f32 * cell, z0 + bh as f32 * cell);
    let grey = [0.55, 0.58, 0.65, 1.0];
    for (p0, p1) in [
        ([x0, z0], [x1, z0]),
        ([x1, z0], [x1, z1]),
        ([x1, z1], [x0, z1]),
        ([x0, z1], [x0, z0]),
    ] {
        scene.lines.push(Segment {
            a: [p0[0], 0.0, p0[1]],
            b: [p1[0], 0.0, p1[1]],
            color: grey,
        });
    }
    // the count axis at the back left corner
    let ink = axes::ink(true);
    scene.lines.push(Segment {
        a: [x0, 0.0, z0],
        b: [x0, top, z0],
        color: ink,
    });
    let (ticks, step) = axes::nice_ticks(0.0, m, 4);
    let unit = axes::Unit::Count("accesses".into());
    for v in ticks {
        let y = (v / m) as f32 * top;
        scene.labels.push(
            Label::world(
                axes::format_value(v, &unit, m, step),
                [x0 - 0.04, y, z0],
                11.0,
                ink,
            )
            .aligned(LabelAlign::RightCenter)
            .priority(1),
        );
    }
    for q in 0..a.processors.min(12) {
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: rgba(cmap.category(q), 1.0),
            text: format!("processor {q}"),
        });
    }
    if a.processors > 12 {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: ink,
            text: format!("… {} processors, colours repeat", a.processors),
        });
    }
    scene.axes = format!(
        "x: element column, z: element row ({w}×{h} elements{}); y: accesses, {top} = {m}",
        if k > 1 {
            format!(", {k}×{k} per glyph")
        } else {
            String::new()
        }
    );
    scene.title = format!(
        "Accesses ({}) per element and processor — {w}×{h} elements, {} processors, interval {t} of {}: {shown} glyphs{}",
        d.kinds_name,
        a.processors,
        a.intervals,
        if k > 1 {
            format!(" ({k}×{k} elements per glyph)")
        } else {
            String::new()
        }
    );
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(w: usize, h: usize, p: usize) -> ScatterData {
        let (t, e) = (2, w * h);
        let mut values = Vec::new();
        for ti in 0..t {
            for ei in 0..e {
                for q in 0..p {
                    // processor q owns the elements e % p == q: local reads there
                    let own = ei % p == q;
                    values.extend([
                        own as u32 as f32 * (ti + 1) as f32,
                        (!own) as u32 as f32,
                        0.0,
                        0.0,
                    ]);
                }
            }
        }
        ScatterData {
            tensor: AccessTensor {
                intervals: t,
                elements: e,
                processors: p,
                values,
            },
            kinds: [true, true, false, false],
            kinds_name: "reads".into(),
        }
    }

    #[test]
    fn one_glyph_per_element_and_processor_with_accesses() {
        let s = build(&data(4, 4, 4), "categorical", &ScatterParams::default(), 0).unwrap();
        // every element: its owner (local) and the 3 others (remote)
        assert_eq!(s.glyphs[0].instances.len(), 16 * 4);
        assert_eq!(s.key.len(), 4);
    }

    #[test]
    fn level_of_detail_aggregates_blocks() {
        let p = ScatterParams {
            max_glyphs: 100,
            ..Default::default()
        };
        let s = build(&data(16, 16, 4), "categorical", &p, 1).unwrap();
        assert!(s.glyphs[0].instances.len() <= 100);
        assert!(s.title.contains("elements per glyph"), "{}", s.title);
    }
}
