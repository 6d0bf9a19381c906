//! The communication matrix in perspective (paper 001 Figs. 12–13): one
//! bar per sender × receiver cell on the task grid, its height and colour
//! the messages (or bytes) sent in the window. At most `max_side` (and
//! 128) cells per side: beyond, blocks of tasks add up (said in the title).

use super::BuildCtx;
use super::comm::{self, CommData, CommParams, CommStyle};
use crate::analysis::comm as comm_analysis;
use crate::error::Result;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, Label, LabelAlign, Legend, Projection, Scene, Segment, rgba,
};

/// The perspective view.
pub struct CommPerspective;

/// Bars per side at most (16,384 bars).
const MAX_BARS_SIDE: usize = 128;

impl CommStyle for CommPerspective {
    const NAME: &'static str = "comm-perspective";
    const ABOUT: &'static str = "Communication matrix in perspective: 3D bars per sender × receiver task (paper 001 Figs. 12–13)";
    fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, colormap, p, ctx)
    }
}

pub fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
    let g = comm::grid(d, p, ctx.step, MAX_BARS_SIDE)?;
    let cmap = Colormap::named(colormap)?;
    let side = g.side;
    let cell = 2.0 / side as f32;
    let half = 1.0f32;
    let top = 1.0f32;
    // receiver along x, sender along z (row 0 at the back)
    let at = |c: f32, r: f32| (-half + c * cell, -half + r * cell);
    let mut bars = Vec::new();
    let mut picks = Vec::new();
    for r in 0..side {
        for c in 0..side {
            let v = g.values[r * side + c];
            if !g.shown(v) {
                continue;
            }
            let h = (g.unit(v) * top).max(0.004);
            let (x, z) = at(c as f32 + 0.5, r as f32 + 0.5);
            picks.push(Pick::point(
                [x, h, z],
                comm::cell_text(d, &g, r, c, v),
                (d.m.level == comm_analysis::Level::Thread && g.block == 1).then_some(r),
            ));
            bars.push(GlyphInstance {
                position: [x, h / 2.0, z],
                scale: [cell * 0.8, h, cell * 0.8],
                color: rgba(cmap.at(g.unit(v)), 1.0),
            });
        }
    }
    let shown = bars.len();
    let mut scene = Scene::new("", Projection::Perspective);
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Box,
        instances: bars,
    });
    scene.picks = picks;
    let ink = axes::ink(true);
    let grey = [0.45, 0.48, 0.55, 1.0];
    // the floor: outline and a light grid every tick
    for (a, b) in [
        ([-half, -half], [half, -half]),
        ([half, -half], [half, half]),
        ([half, half], [-half, half]),
        ([-half, half], [-half, -half]),
    ] {
        scene.lines.push(Segment {
            a: [a[0], 0.0, a[1]],
            b: [b[0], 0.0, b[1]],
            color: grey,
        });
    }
    let n = d.m.size();
    let level = d.m.level.name();
    let tick = 0.03;
    for (q, pos) in comm::task_ticks(n, g.block, 8) {
        let (x, z) = at(pos, pos);
        // receiver ticks along the front edge (z = +half)
        scene.lines.push(Segment {
            a: [x, 0.0, half],
            b: [x, 0.0, half + tick],
            color: ink,
        });
        scene.labels.push(
            Label::world(q.to_string(), [x, 0.0, half + tick * 1.5], 11.0, ink)
                .aligned(LabelAlign::CenterTop)
                .priority(1),
        );
        // sender ticks along the left edge (x = −half)
        scene.lines.push(Segment {
            a: [-half, 0.0, z],
            b: [-half - tick, 0.0, z],
            color: ink,
        });
        scene.labels.push(
            Label::world(q.to_string(), [-half - tick * 1.5, 0.0, z], 11.0, ink)
                .aligned(LabelAlign::RightCenter)
                .priority(1),
        );
    }
    scene.labels.push(
        Label::world(
            format!("receiver {level}"),
            [0.0, 0.0, half + 0.22],
            13.0,
            ink,
        )
        .aligned(LabelAlign::CenterTop)
        .priority(0),
    );
    scene.labels.push(
        Label::world(
            format!("sender {level}"),
            [-half - 0.5, 0.0, 0.0],
            13.0,
            ink,
        )
        .aligned(LabelAlign::RightCenter)
        .priority(0),
    );
    // the value axis at the back left corner
    let q = d.quantity;
    let unit = comm::unit(q);
    scene.lines.push(Segment {
        a: [-half, 0.0, -half],
        b: [-half, top, -half],
        color: ink,
    });
    let (ticks, step) = axes::nice_ticks(g.lo, g.hi, 4);
    for v in ticks {
        let y = g.unit(v) * top;
        scene.lines.push(Segment {
            a: [-half, y, -half],
            b: [-half - tick, y, -half],
            color: ink,
        });
        scene.labels.push(
            Label::world(
                axes::format_value(v, &unit, g.hi, step),
                [-half - tick * 1.5, y, -half],
                11.0,
                ink,
            )
            .aligned(LabelAlign::RightCenter)
            .priority(1),
        );
    }
    scene.labels.push(
        Label::world(
            format!("{} sent", q.name()),
            [-half, top * 1.08, -half],
            12.0,
            ink,
        )
        .aligned(LabelAlign::CenterBottom)
        .priority(0),
    );
    scene.legend = Some(Legend {
        title: format!("{} sent", q.name()),
        colormap: colormap.to_string(),
        min: g.lo,
        max: g.hi,
        unit,
        note: Some(if g.clipped {
            "clipped: bars outside not drawn".to_string()
        } else if g.block > 1 {
            format!("sum over {b} × {b} tasks", b = g.block)
        } else {
            "one scale for all windows".to_string()
        }),
    });
    scene.title = format!(
        "Communication matrix in perspective: {} — {}, {} ({shown} bars)",
        q.name(),
        comm::tasks_text(d, &g),
        comm::window_text(d, &g)
    );
    scene.axes = format!(
        "x: receiver {level}, z: sender {level} (cells of {b} tasks, 2 units across); y: {} sent, {top} = {}",
        q.name(),
        g.hi,
        b = g.block
    );
    Ok(scene)
}
