//! The communication matrix as a density plot (paper 001 Fig. 14): one
//! cell per sender × receiver task coloured by the messages (or bytes)
//! sent in the window; tasks by thread, process or node; the window
//! slides over time as an animation; blocks of tasks share a cell when
//! there are more tasks than pixels (the title says so).

use super::BuildCtx;
use super::comm::{self, CommData, CommParams, CommStyle};
use crate::error::Result;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::{KeyEntry, KeyMark, Legend, Mesh, Projection, Scene, rgba};

/// The density view.
pub struct CommDensity;

/// Cells without messages.
const EMPTY: [f32; 4] = [0.93, 0.93, 0.94, 1.0];

impl CommStyle for CommDensity {
    const NAME: &'static str = "comm-density";
    const ABOUT: &'static str =
        "Communication matrix as a density plot: sender × receiver task (paper 001 Fig. 14)";
    fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, colormap, p, ctx)
    }
}

pub fn build(d: &CommData, colormap: &str, p: &CommParams, ctx: BuildCtx) -> Result<Scene> {
    let g = comm::grid(d, p, ctx.step, comm::chart_side(ctx.width, ctx.height))?;
    let cmap = Colormap::named(colormap)?;
    let s = g.side as f32;
    let mut mesh = Mesh::default();
    mesh.rect(0.0, -s, s, 0.0, 0.0, EMPTY);
    let mut shown = 0usize;
    for r in 0..g.side {
        for c in 0..g.side {
            let v = g.values[r * g.side + c];
            if !g.shown(v) {
                continue;
            }
            shown += 1;
            let (x, y) = (c as f32, -(r as f32));
            mesh.rect(x, y - 1.0, x + 1.0, y, 0.1, rgba(cmap.at(g.unit(v)), 1.0));
        }
    }
    let mut scene = Scene::new("", Projection::Orthographic);
    scene.meshes.push(mesh);
    comm::cell_picks(&mut scene, d, &g, ctx.selected);
    let ink = axes::ink(false);
    comm::axes_2d(&mut scene.lines, &mut scene.labels, d, &g, ink);
    let q = d.quantity;
    scene.legend = Some(Legend {
        title: format!("{} sent", q.name()),
        colormap: colormap.to_string(),
        min: g.lo,
        max: g.hi,
        unit: comm::unit(q),
        note: Some(if g.clipped {
            "clipped: cells outside not drawn".to_string()
        } else if g.block > 1 {
            format!("sum over {b} × {b} tasks", b = g.block)
        } else {
            "one scale for all windows".to_string()
        }),
    });
    scene.key.push(KeyEntry {
        mark: KeyMark::Bar,
        color: EMPTY,
        text: if g.clipped {
            "none, or outside the clip range".into()
        } else {
            "no messages".into()
        },
    });
    scene.title = format!(
        "Communication matrix: {} — {}, {} ({shown} cells)",
        q.name(),
        comm::tasks_text(d, &g),
        comm::window_text(d, &g)
    );
    scene.axes = format!(
        "x: receiver {l} (cells of {b}), y: −sender {l}",
        l = d.m.level.name(),
        b = g.block
    );
    Ok(scene)
}
