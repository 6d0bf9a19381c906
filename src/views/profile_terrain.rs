//! The performance-profile terrain (paper 004 Fig. 4; ParaProf's 3D
//! triangle mesh): rows (source lines or functions) × columns (processors
//! or threads) as a lit height field, height = metric A, colour = metric B
//! on the heat map, rows without any value (comments, blank lines) black.
//! Beyond `max_cells` grid points, blocks of rows and columns keep their
//! maximum (the title says so). The linked cursor draws its row and column
//! over the surface.

use super::BuildCtx;
use super::profile::{self, ProfileData, ProfileParams, ProfileStyle, Scale};
use crate::error::Result;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    KeyEntry, KeyMark, Label, LabelAlign, Legend, Mesh, Projection, Scene, Segment, Vertex, rgba,
};

/// The terrain view.
pub struct ProfileTerrain;

/// Rows without a value.
pub const ZERO_ROW: [f32; 4] = [0.0, 0.0, 0.0, 1.0];
/// The cursor.
const CURSOR: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

impl ProfileStyle for ProfileTerrain {
    const NAME: &'static str = "profile-terrain";
    const ABOUT: &'static str = "Profile terrain: lines or functions × processors as a lit height field, heat-map colours (paper 004)";
    fn build(d: &ProfileData, colormap: &str, q: &ProfileParams, _ctx: BuildCtx) -> Result<Scene> {
        build(d, colormap, q)
    }
}

pub fn build(d: &ProfileData, colormap: &str, q: &ProfileParams) -> Result<Scene> {
    let p = &d.p;
    let (rows, cols) = (p.num_rows(), p.num_columns());
    let (ma, mb) = (&p.metrics[d.a], &p.metrics[d.b]);
    // level of detail: the same block factor along both axes
    let f = ((rows * cols) as f64 / q.max_cells as f64)
        .sqrt()
        .ceil()
        .max(1.0) as usize;
    let (br, bc) = (f.min(rows), f.min(cols));
    let (r2, c2, ha) = profile::block_max(&ma.values, rows, cols, br, bc);
    let (_, _, hb) = profile::block_max(&mb.values, rows, cols, br, bc);
    // rows (of blocks) without any value
    let zero: Vec<bool> = (0..r2)
        .map(|r| {
            (r * br..((r + 1) * br).min(rows)).all(|k| {
                ma.values[k * cols..(k + 1) * cols]
                    .iter()
                    .all(|v| *v == 0.0)
            })
        })
        .collect();
    let height = Scale::of(&ha, &ProfileParams::default());
    let colour = Scale::of(&hb, q);
    let cmap = Colormap::named(colormap)?;
    // the footprint spans [−1, 1] on both axes; a ribbon when one side is 1
    let (gc, gr) = (c2.max(2), r2.max(2));
    let x = |c: usize| -1.0 + 2.0 * c as f32 / (gc - 1) as f32;
    let z = |r: usize| -1.0 + 2.0 * r as f32 / (gr - 1) as f32;
    let top = 0.8f32;
    let at = |r: usize, c: usize| (r.min(r2 - 1)) * c2 + c.min(c2 - 1);
    let y = |r: usize, c: usize| {
        let v = ha[at(r, c)];
        if v.is_finite() {
            height.at(v) * top
        } else {
            0.0
        }
    };
    let mut mesh = Mesh {
        lit: true,
        ..Default::default()
    };
    mesh.vertices.reserve(gr * gc);
    for r in 0..gr {
        for c in 0..gc {
            let color = if zero[r.min(r2 - 1)] {
                ZERO_ROW
            } else {
                rgba(cmap.at(colour.at(hb[at(r, c)])), 1.0)
            };
            mesh.vertices.push(Vertex {
                position: [x(c), y(r, c), z(r)],
                normal: [0.0, 1.0, 0.0],
                color,
            });
        }
    }
    for r in 0..gr - 1 {
        for c in 0..gc - 1 {
            let i = (r * gc + c) as u32;
            let (a, b, cc, dd) = (i, i + 1, i + gc as u32 + 1, i + gc as u32);
            mesh.indices.extend_from_slice(&[a, dd, b, b, dd, cc]);
        }
    }
    mesh.smooth_normals();
    let mut scene = Scene::new("", Projection::Perspective);
    // hover: every grid point (block) up to 65,536: rows, processors, both metrics
    if r2 * c2 <= 65_536 {
        let unit_a = axes::Unit::from_name(&ma.unit);
        let unit_b = axes::Unit::from_name(&mb.unit);
        for r in 0..r2 {
            let (ra, rb) = (r * br, ((r + 1) * br).min(rows));
            let row = if rb > ra + 1 {
                format!(
                    "{} {}–{} (max)",
                    profile::row_noun(p),
                    profile::row_label(p, ra, 30),
                    profile::row_label(p, rb - 1, 30)
                )
            } else {
                profile::row_label(p, ra, 60)
            };
            for c in 0..c2 {
                let (ca, cb) = (c * bc, ((c + 1) * bc).min(cols));
                let (va, vb) = (ha[at(r, c)], hb[at(r, c)]);
                let mut text = format!(
                    "{row}\n{}\n{}: {}",
                    super::moments::processors_text(ca, cb).replace("(mean)", "(max)"),
                    ma.name,
                    axes::format_value(va, &unit_a, va.abs(), 0.0)
                );
                if d.b != d.a {
                    text.push_str(&format!(
                        "\n{}: {}",
                        mb.name,
                        axes::format_value(vb, &unit_b, vb.abs(), 0.0)
                    ));
                }
                scene.picks.push(Pick::point(
                    mesh.vertices[r * gc + c].position,
                    text,
                    (bc == 1).then_some(ca),
                ));
            }
        }
    }
    scene.meshes.push(mesh);
    let ink = axes::ink(true);
    let grey = [0.45, 0.48, 0.55, 1.0];
    for (a, b) in [
        ([-1.0, -1.0], [1.0, -1.0]),
        ([1.0, -1.0], [1.0, 1.0]),
        ([1.0, 1.0], [-1.0, 1.0]),
        ([-1.0, 1.0], [-1.0, -1.0]),
    ] {
        scene.lines.push(Segment {
            a: [a[0], 0.0, a[1]],
            b: [b[0], 0.0, b[1]],
            color: grey,
        });
    }
    let tick = 0.03;
    // column ticks along the front edge (z = 1)
    let cpos = |col: f64| {
        if c2 == 1 {
            0.0
        } else {
            -1.0 + 2.0 * ((col + 0.5) / bc as f64 - 0.5) as f32 / (c2 - 1) as f32
        }
    };
    for col in axes::integer_ticks(0, cols as u64 - 1, 8) {
        let xx = cpos(col as f64);
        scene.lines.push(Segment {
            a: [xx, 0.0, 1.0],
            b: [xx, 0.0, 1.0 + tick],
            color: ink,
        });
        scene.labels.push(
            Label::world(
                p.columns.get(col as usize).cloned().unwrap_or_default(),
                [xx, 0.0, 1.0 + 1.5 * tick],
                11.0,
                ink,
            )
            .aligned(LabelAlign::CenterTop)
            .priority(1),
        );
    }
    // row ticks along the right edge (x = 1)
    let rpos = |row: usize| {
        if r2 == 1 {
            0.0
        } else {
            -1.0 + 2.0 * ((row as f64 + 0.5) / br as f64 - 0.5) as f32 / (r2 - 1) as f32
        }
    };
    let row_ticks: Vec<usize> = if rows <= 12 {
        (0..rows).collect()
    } else if p.row_kind == crate::model::RowKind::Line {
        // nice line numbers
        let (first, last) = (p.row_ids[0], p.row_ids[rows - 1]);
        axes::integer_ticks(first.max(0) as u64, last.max(0) as u64, 8)
            .into_iter()
            .map(|id| p.row_ids.partition_point(|&x| x < id as i64))
            .filter(|&r| r < rows)
            .collect()
    } else {
        axes::integer_ticks(0, rows as u64 - 1, 8)
            .into_iter()
            .map(|r| r as usize)
            .collect()
    };
    for r in row_ticks {
        let zz = rpos(r);
        scene.lines.push(Segment {
            a: [1.0, 0.0, zz],
            b: [1.0 + tick, 0.0, zz],
            color: ink,
        });
        scene.labels.push(
            Label::world(
                profile::row_label(p, r, 18),
                [1.0 + 1.5 * tick, 0.0, zz],
                11.0,
                ink,
            )
            .aligned(LabelAlign::LeftCenter)
            .priority(1),
        );
    }
    scene.labels.push(
        Label::world(profile::column_noun(p), [0.0, 0.0, 1.25], 13.0, ink)
            .aligned(LabelAlign::CenterTop)
            .priority(0),
    );
    scene.labels.push(
        Label::world(profile::row_noun(p), [1.35, 0.0, 0.0], 13.0, ink)
            .aligned(LabelAlign::LeftCenter)
            .priority(0),
    );
    // the height axis at the back left corner
    scene.lines.push(Segment {
        a: [-1.0, 0.0, -1.0],
        b: [-1.0, top, -1.0],
        color: ink,
    });
    let unit_a = axes::Unit::from_name(&ma.unit);
    let (ticks, step) = axes::nice_ticks(0.0, height.hi, 4);
    for v in ticks {
        let yy = height.at(v) * top;
        scene.lines.push(Segment {
            a: [-1.0, yy, -1.0],
            b: [-1.0 - tick, yy, -1.0],
            color: ink,
        });
        scene.labels.push(
            Label::world(
                axes::format_value(v, &unit_a, height.hi, step),
                [-1.0 - 1.5 * tick, yy, -1.0],
                11.0,
                ink,
            )
            .aligned(LabelAlign::RightCenter)
            .priority(1),
        );
    }
    scene.labels.push(
        Label::world(
            format!("{}{}", ma.name, unit_a.bracket(&ma.name)),
            [-1.0, top * 1.1, -1.0],
            12.0,
            ink,
        )
        .aligned(LabelAlign::CenterBottom)
        .priority(0),
    );
    // the cursor: its row and column over the surface
    if let Some((cr, cc)) = profile::cursor(q) {
        let (rb, cb) = (cr / br, cc / bc);
        let lift = 0.01;
        for c in 0..gc - 1 {
            scene.lines.push(Segment {
                a: [x(c), y(rb, c) + lift, z(rb.min(gr - 1))],
                b: [x(c + 1), y(rb, c + 1) + lift, z(rb.min(gr - 1))],
                color: CURSOR,
            });
        }
        for r in 0..gr - 1 {
            scene.lines.push(Segment {
                a: [x(cb.min(gc - 1)), y(r, cb) + lift, z(r)],
                b: [x(cb.min(gc - 1)), y(r + 1, cb) + lift, z(r + 1)],
                color: CURSOR,
            });
        }
        let v = p.value(d.a, cr, cc).unwrap_or(0.0);
        scene.labels.push(
            Label::world(
                format!(
                    "{} {}, {} {}: {}",
                    profile::row_noun(p),
                    profile::row_label(p, cr, 40),
                    profile::column_noun(p),
                    p.columns.get(cc).cloned().unwrap_or_default(),
                    axes::format_value(v, &unit_a, v.abs(), 0.0)
                ),
                [x(cb.min(gc - 1)), y(rb, cb) + 0.08, z(rb.min(gr - 1))],
                12.0,
                CURSOR,
            )
            .aligned(LabelAlign::CenterBottom)
            .priority(0),
        );
    }
    let (lo, hi, unit_b) = colour.legend(&mb.unit);
    scene.legend = Some(Legend {
        title: if d.a == d.b {
            mb.name.clone()
        } else {
            format!("colour: {}", mb.name)
        },
        colormap: colormap.to_string(),
        min: lo,
        max: hi,
        unit: unit_b,
        note: Some(if colour.normalized {
            format!(
                "of the hottest cell, {}",
                axes::format_value(colour.hi, &axes::Unit::from_name(&mb.unit), colour.hi, 0.0)
            )
        } else {
            "raw values".into()
        }),
    });
    scene.key.push(KeyEntry {
        mark: KeyMark::Bar,
        color: ZERO_ROW,
        text: format!("{}s without {}", profile::row_noun(p), ma.name),
    });
    let lod = if f > 1 {
        format!(" (blocks of {br} × {bc}, max)")
    } else {
        String::new()
    };
    scene.title = format!(
        "Profile terrain: {}{} — {} {}s × {} {}s{lod}",
        ma.name,
        if d.a == d.b {
            String::new()
        } else {
            format!(", colour {}", mb.name)
        },
        rows,
        profile::row_noun(p),
        cols,
        profile::column_noun(p)
    );
    scene.axes = format!(
        "x: {} (−1..1), z: {} (−1..1), y: {} ({top} = {})",
        profile::column_noun(p),
        profile::row_noun(p),
        ma.name,
        height.hi
    );
    Ok(scene)
}
