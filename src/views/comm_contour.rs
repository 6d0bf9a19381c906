//! The communication matrix as a contour plot (paper 001 Fig. 15):
//! isolines of the messages (or bytes) sent, by marching squares over the
//! cell centres, at `levels` evenly spaced levels of the colour range,
//! each coloured as in the legend and labelled with its value. At most
//! 256 cells per side (blocks of tasks add up beyond; said in the title).

use super::BuildCtx;
use super::comm::{self, CommData, CommParams, CommStyle};
use crate::analysis::comm::contours;
use crate::error::{Error, Result};
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::{
    KeyEntry, KeyMark, Label, LabelAlign, Legend, Projection, Scene, Segment, rgba,
};

/// The contour view.
pub struct CommContour;

/// Cells per side at most.
const MAX_CONTOUR_SIDE: usize = 256;

impl CommStyle for CommContour {
    const NAME: &'static str = "comm-contour";
    const ABOUT: &'static str =
        "Communication matrix as labelled isolines (marching squares; paper 001 Fig. 15)";
    const CONTOUR: bool = true;
    fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, colormap, p, ctx)
    }
}

/// About `k` levels inside `(lo, hi)`: round values when at least two
/// fall inside, else `k` evenly spaced.
pub fn levels(lo: f64, hi: f64, k: usize) -> Vec<f64> {
    let (ticks, _) = axes::nice_ticks(lo, hi, k + 1);
    let inside: Vec<f64> = ticks.into_iter().filter(|&v| v > lo && v < hi).collect();
    if inside.len() >= 2 && inside.len() <= k {
        return inside;
    }
    (1..=k)
        .map(|i| lo + (hi - lo) * i as f64 / (k + 1) as f64)
        .collect()
}

pub fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
    if p.levels == 0 || p.levels > 64 {
        return Err(Error::Invalid(format!(
            "levels must be 1 to 64, not {}",
            p.levels
        )));
    }
    let side_px = comm::chart_side(ctx.width, ctx.height) / 2;
    let g = comm::grid(d, p, ctx.step, MAX_CONTOUR_SIDE.min(side_px.max(8)))?;
    let cmap = Colormap::named(colormap)?;
    let lv = levels(g.lo, g.hi, p.levels);
    // values outside the clip range do not count
    let v: Vec<f64> = g
        .values
        .iter()
        .map(|&x| if g.clipped && !g.shown(x) { 0.0 } else { x })
        .collect();
    let segs = contours(&v, g.side, g.side, &lv);
    let mut scene = Scene::new("", Projection::Orthographic);
    let colour = |l: usize| {
        // levels draw in the legend's colours, darkened to read on white
        let c = cmap.at(g.unit(lv[l]));
        rgba(c.map(|x| x * 0.85), 1.0)
    };
    // cell centre (c, r) → world: cell (r, c) is x ∈ [c, c+1], y ∈ [−r−1, −r]
    let w = |p: [f64; 2]| [p[0] as f32 + 0.5, -(p[1] as f32) - 0.5];
    for s in &segs {
        let (a, b) = (w(s.a), w(s.b));
        scene.lines.push(Segment {
            a: [a[0], a[1], 0.2],
            b: [b[0], b[1], 0.2],
            color: colour(s.level),
        });
    }
    // one label per level, on its segment farthest from the labels placed
    let q = d.quantity;
    let unit = comm::unit(q);
    let step = lv.get(1).map_or(g.hi - g.lo, |b| b - lv[0]);
    let mut placed: Vec<[f32; 2]> = Vec::new();
    for (l, &level) in lv.iter().enumerate() {
        let best = segs
            .iter()
            .filter(|s| s.level == l)
            .map(|s| {
                let (a, b) = (w(s.a), w(s.b));
                let m = [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0];
                let far = placed
                    .iter()
                    .map(|p| (p[0] - m[0]).powi(2) + (p[1] - m[1]).powi(2))
                    .fold(f32::INFINITY, f32::min);
                (m, far)
            })
            .max_by(|x, y| x.1.total_cmp(&y.1));
        if let Some((m, _)) = best {
            placed.push(m);
            scene.labels.push(
                Label::world(
                    axes::format_value(level, &unit, g.hi, step),
                    [m[0], m[1], 0.0],
                    11.0,
                    colour(l),
                )
                .aligned(LabelAlign::LeftCenter)
                .priority(2),
            );
        }
    }
    comm::cell_picks(&mut scene, d, &g, ctx.selected);
    let ink = axes::ink(false);
    comm::axes_2d(&mut scene.lines, &mut scene.labels, d, &g, ink);
    for (l, &x) in lv.iter().enumerate() {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: colour(l),
            text: format!(
                "{} {}",
                axes::format_value(x, &unit, g.hi, step),
                if matches!(unit, axes::Unit::Bytes) {
                    ""
                } else {
                    q.name()
                }
            )
            .trim_end()
            .to_string(),
        });
    }
    scene.legend = Some(Legend {
        title: format!("{} sent", q.name()),
        colormap: colormap.to_string(),
        min: g.lo,
        max: g.hi,
        unit,
        note: Some(format!("{} levels", lv.len())),
    });
    scene.title = format!(
        "Communication contours: {} — {}, {} ({} segments)",
        q.name(),
        comm::tasks_text(d, &g),
        comm::window_text(d, &g),
        segs.len()
    );
    scene.axes = format!(
        "x: receiver {l} (cells of {b}), y: −sender {l}",
        l = d.m.level.name(),
        b = g.block
    );
    Ok(scene)
}
