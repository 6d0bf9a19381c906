//! The profile heat map (paper 004 Figs. 2–3, 5): the overview reduction
//! of `analyze profile-overview` (runs of zero rows left out, rows binned
//! by max or sum, strips side by side) coloured on the heat map, rows
//! without any value black; the busiest procedure framed in yellow; beside
//! it the minimum (dark) and maximum (light) of each row with their
//! processors, and the ranked procedures listed in the key. Tick counts
//! are printed over the cells when they fit. More rows than pixels bin
//! further, more columns than pixels take each block's maximum (the title
//! says so).

use super::BuildCtx;
use super::profile::{self, ProfileData, ProfileParams, ProfileStyle, Scale};
use super::profile_terrain::ZERO_ROW;
use crate::analysis::matrices::{self, BinBy};
use crate::error::Result;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    KeyEntry, KeyMark, Label, LabelAlign, Legend, Margins, Mesh, Projection, Scene, Segment, rgba,
};

/// The heat-map view.
pub struct ProfileHeatmap;

/// Cells after the last row of the last strip.
const PADDING: [f32; 4] = [0.96, 0.96, 0.96, 1.0];
/// The frame of the busiest procedure.
const BUSIEST: [f32; 4] = [0.95, 0.80, 0.0, 1.0];
/// The cursor.
const CURSOR: [f32; 4] = [0.1, 0.55, 1.0, 1.0];
/// The min and max bars.
const MIN_BAR: [f32; 4] = [0.25, 0.27, 0.33, 1.0];
const MAX_BAR: [f32; 4] = [0.72, 0.75, 0.82, 1.0];

impl ProfileStyle for ProfileHeatmap {
    const NAME: &'static str = "profile-heatmap";
    const ABOUT: &'static str = "Profile heat map: overview of lines or functions × processors, min/max bars, ranked procedures (paper 004)";
    const OVERVIEW: bool = true;
    fn build(d: &ProfileData, colormap: &str, q: &ProfileParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, colormap, q, ctx)
    }
}

pub fn build(d: &ProfileData, colormap: &str, q: &ProfileParams, ctx: BuildCtx) -> Result<Scene> {
    let p = &d.p;
    let m = d.a;
    let met = &p.metrics[m];
    let cols = p.num_columns();
    let by = if q.by == "sum" {
        BinBy::Sum
    } else {
        BinBy::Max
    };
    let margins = Margins {
        right: 250.0,
        left: if p.row_kind == crate::model::RowKind::Function {
            160.0
        } else {
            84.0
        },
        ..Margins::default()
    };
    let (px_w, px_h) = if ctx.width == 0 || ctx.height == 0 {
        (usize::MAX, usize::MAX)
    } else {
        (
            (ctx.width as f32 - margins.left - margins.right).max(16.0) as usize,
            (ctx.height as f32 - margins.top - margins.bottom).max(16.0) as usize,
        )
    };
    // bin further until the rows fit the pixels
    let mut bin = q.bin;
    let mut o = matrices::overview(p, m, q.skip, bin, by, q.strips)?;
    if o.rows > px_h {
        bin *= o.rows.div_ceil(px_h);
        o = matrices::overview(p, m, q.skip, bin, by, q.strips)?;
    }
    let strips = q.strips;
    let bars = strips == 1;
    // columns: blocks keep their max when there are more than pixels
    let width_units = if bars { 1.6 } else { 1.0 } * strips as f64;
    let bc = ((cols as f64 * width_units) / px_w as f64).ceil().max(1.0) as usize;
    let c2 = cols.div_ceil(bc);
    let cell = |r: usize, s: usize, c: usize| -> Option<f64> {
        (c * bc..((c + 1) * bc).min(cols))
            .filter_map(|k| o.values[r * o.cols + s * cols + k])
            .reduce(f64::max)
    };
    let all: Vec<f64> = o.values.iter().flatten().copied().collect();
    let scale = Scale::of(&all, q);
    let cmap = Colormap::named(colormap)?;
    let gap = (c2 as f32 * 0.08).max(0.5);
    let sx = |s: usize| s as f32 * (c2 as f32 + gap);
    let mut mesh = Mesh::default();
    let mut scene = Scene::new("", Projection::Orthographic);
    scene.margins = margins;
    let ink = axes::ink(false);
    // tick counts printed over cells of at least 60 × 14 pixels
    let cell_px = px_w as f64 / (c2 as f64 * width_units);
    let print = px_h / o.rows.max(1) >= 14 && cell_px >= 60.0;
    let unit = axes::Unit::from_name(&met.unit);
    for r in 0..o.rows {
        for s in 0..strips {
            let vals: Vec<Option<f64>> = (0..c2).map(|c| cell(r, s, c)).collect();
            let zero_row =
                vals.iter().all(|v| v.is_none_or(|v| v == 0.0)) && vals.iter().any(|v| v.is_some());
            for (c, v) in vals.iter().enumerate() {
                let (x0, y1) = (sx(s) + c as f32, -(r as f32));
                let color = match v {
                    None => PADDING,
                    Some(_) if zero_row => ZERO_ROW,
                    Some(v) => rgba(cmap.at(scale.at(*v)), 1.0),
                };
                mesh.rect(x0, y1 - 1.0, x0 + 1.0, y1, 0.0, color);
                if let Some(v) = v.filter(|_| o.rows * strips * c2 <= 250_000) {
                    let row = o.first_id.get(r * strips + s).copied().flatten().map_or(
                        String::new(),
                        |id| match p.row_kind {
                            crate::model::RowKind::Line => format!("line {id}"),
                            crate::model::RowKind::Function => {
                                profile::row_label(p, id as usize, 60)
                            }
                        },
                    );
                    let (a, b) = (c * bc, ((c + 1) * bc).min(cols));
                    let procs = super::moments::processors_text(a, b).replace("(mean)", "(max)");
                    scene.picks.push(Pick::rect(
                        [x0, y1 - 1.0],
                        [x0 + 1.0, y1],
                        format!(
                            "{row}{}\n{procs}\n{}: {}",
                            if bin > 1 {
                                format!(" (+{} rows, {})", bin - 1, q.by)
                            } else {
                                String::new()
                            },
                            met.name,
                            axes::format_value(v, &unit, v.abs(), 0.0)
                        ),
                        (bc == 1).then_some(a),
                    ));
                }
                if print && let Some(v) = v {
                    scene.labels.push(
                        Label::world(
                            axes::format_value(*v, &unit, v.abs(), 0.0),
                            [x0 + 0.5, y1 - 0.5, 0.0],
                            10.0,
                            [0.05, 0.05, 0.05, 1.0],
                        )
                        .aligned(LabelAlign::CenterBottom)
                        .priority(3),
                    );
                }
            }
        }
    }
    let rows_f = o.rows as f32;
    if let Some(sel) = ctx.selected.filter(|&x| x < cols) {
        let c = (sel / bc) as f32;
        for s in 0..strips {
            scene.frame_rect(
                [sx(s) + c, -rows_f],
                [sx(s) + c + 1.0, 0.0],
                0.5,
                super::moments::SELECTED,
            );
        }
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: super::moments::SELECTED,
            text: format!("selected: processor {sel}"),
        });
    }
    // row ticks: the first source row of each display row (strip 0 on the
    // left axis; other strips name their first and last rows on top)
    let idx = |r: usize, s: usize| o.first_id.get(r * strips + s).copied().flatten();
    let tick = 0.25f32.max(c2 as f32 * 0.012);
    let picks: Vec<usize> = if o.rows <= 30 {
        (0..o.rows).collect()
    } else {
        axes::integer_ticks(0, o.rows as u64 - 1, 10)
            .into_iter()
            .map(|r| r as usize)
            .collect()
    };
    // a function's name is cut to what the left margin holds beside the
    // axis title (a small image shrinks the margin): some 6.8 pixels a
    // character at 11 points, after the tick, a gap and the title's 24
    let name_chars = if ctx.width == 0 || ctx.height == 0 {
        18
    } else {
        let left = margins
            .fitted(ctx.width as f32, ctx.height as f32, true)
            .left;
        (((left - 36.0) / 6.8).floor().max(6.0) as usize).min(18)
    };
    let label_of = |id: i64| -> String {
        match p.row_kind {
            crate::model::RowKind::Line => id.to_string(),
            crate::model::RowKind::Function => profile::row_label(p, id as usize, name_chars),
        }
    };
    for r in picks {
        if let Some(id) = idx(r, 0) {
            let y = -(r as f32) - 0.5;
            scene.lines.push(Segment {
                a: [0.0, y, 0.3],
                b: [-tick, y, 0.3],
                color: ink,
            });
            scene.labels.push(
                Label::world(label_of(id), [-tick, y, 0.0], 11.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
    }
    if strips > 1 {
        for s in 0..strips {
            let first = idx(0, s);
            let last = (0..o.rows).rev().find_map(|r| idx(r, s));
            if let (Some(a), Some(b)) = (first, last) {
                scene.labels.push(
                    Label::world(
                        format!("{}–{}", label_of(a), label_of(b)),
                        [sx(s) + c2 as f32 / 2.0, 0.0, 0.0],
                        10.0,
                        ink,
                    )
                    .aligned(LabelAlign::CenterBottom)
                    .priority(2),
                );
            }
        }
    }
    scene.labels.push(
        Label::world(
            format!(
                "{}{}",
                profile::row_noun(p),
                if bin > 1 {
                    format!(" ({bin} per row, {})", q.by)
                } else {
                    String::new()
                }
            ),
            [0.0, -rows_f / 2.0, 0.0],
            13.0,
            ink,
        )
        .aligned(LabelAlign::AxisTitleLeft)
        .priority(0),
    );
    // column ticks under each strip
    for s in 0..strips {
        for col in axes::integer_ticks(0, cols as u64 - 1, if strips > 2 { 2 } else { 6 }) {
            let xx = sx(s) + (col as f32 + 0.5) / bc as f32;
            scene.lines.push(Segment {
                a: [xx, -rows_f, 0.3],
                b: [xx, -rows_f - tick, 0.3],
                color: ink,
            });
            scene.labels.push(
                Label::world(
                    p.columns.get(col as usize).cloned().unwrap_or_default(),
                    [xx, -rows_f - tick, 0.0],
                    11.0,
                    ink,
                )
                .aligned(LabelAlign::CenterTop)
                .priority(1),
            );
        }
    }
    let total_w = sx(strips - 1) + c2 as f32;
    scene.labels.push(
        Label::world(
            profile::column_noun(p),
            [total_w / 2.0, -rows_f - tick, 0.0],
            13.0,
            ink,
        )
        .aligned(LabelAlign::AxisTitleBelow)
        .priority(0),
    );
    // the busiest procedure framed (line profiles)
    // as many ranked procedures as the key has room for under the legend
    let room = if ctx.height == 0 {
        q.top
    } else {
        ((ctx.height as f32 * 0.45 - 40.0) / 16.0 - 2.0).max(1.0) as usize
    };
    let ranked = matrices::ranked_procedures(p, m, q.top.min(room)).unwrap_or_default();
    // frames three pixels wide (world units per pixel on each axis)
    let (ppx, ppy) = if px_w == usize::MAX {
        (0.0, 0.0)
    } else {
        (
            (sx(strips - 1) + c2 as f32 + if bars { c2 as f32 * 0.6 + gap } else { 0.0 })
                / px_w as f32,
            o.rows as f32 / px_h as f32,
        )
    };
    let frame = |lines: &mut Vec<Segment>, x0: f32, y0: f32, x1: f32, y1: f32, color| {
        for k in 0..3 {
            let (dx, dy) = (k as f32 * ppx, k as f32 * ppy);
            let (x0, y0, x1, y1) = (x0 + dx, y0 + dy, x1 - dx, y1 - dy);
            for (a, b) in [
                ([x0, y0], [x1, y0]),
                ([x1, y0], [x1, y1]),
                ([x1, y1], [x0, y1]),
                ([x0, y1], [x0, y0]),
            ] {
                lines.push(Segment {
                    a: [a[0], a[1], 0.5],
                    b: [b[0], b[1], 0.5],
                    color,
                });
            }
        }
    };
    if p.row_kind == crate::model::RowKind::Line
        && let Some(best) = ranked.first()
        && let Some(pr) = p.procedures.iter().find(|pr| pr.name == best.name)
    {
        for s in 0..strips {
            let inside: Vec<usize> = (0..o.rows)
                .filter(|&r| idx(r, s).is_some_and(|id| id >= pr.first_line && id <= pr.last_line))
                .collect();
            if let (Some(&a), Some(&b)) = (inside.first(), inside.last()) {
                frame(
                    &mut scene.lines,
                    sx(s),
                    -(b as f32) - 1.0,
                    sx(s) + c2 as f32,
                    -(a as f32),
                    BUSIEST,
                );
            }
        }
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: BUSIEST,
            text: format!("busiest: {}", pr.name),
        });
    }
    // the cursor: the display row holding the row, and the column
    if let Some((cr, cc)) = profile::cursor(q) {
        let id = match p.row_kind {
            crate::model::RowKind::Line => p.row_ids[cr],
            crate::model::RowKind::Function => cr as i64,
        };
        // the last display row (in strip order) starting at or before the row
        let mut at = None;
        for s in 0..strips {
            for r in 0..o.rows {
                if idx(r, s).is_some_and(|f| f <= id) {
                    at = Some((r, s));
                }
            }
        }
        if let Some((r, s)) = at {
            let c = (cc / bc) as f32;
            frame(
                &mut scene.lines,
                sx(s),
                -(r as f32) - 1.0,
                sx(s) + c2 as f32,
                -(r as f32),
                CURSOR,
            );
            frame(
                &mut scene.lines,
                sx(s) + c,
                -rows_f,
                sx(s) + c + 1.0,
                0.0,
                CURSOR,
            );
        }
    }
    // key entries after the ranked procedures
    let mut tail = Vec::new();
    // min and max of each display row, with their columns
    if bars {
        let bx = c2 as f32 + gap;
        let bw = c2 as f32 * 0.6;
        let hi = scale.hi.max(1e-300);
        let text = o.rows <= 40 && px_h / o.rows.max(1) >= 14;
        for r in 0..o.rows {
            let row: Vec<(usize, f64)> = (0..cols)
                .filter_map(|k| o.values[r * o.cols + k].map(|v| (k, v)))
                .collect();
            let Some(&(kmin, vmin)) = row.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
                continue;
            };
            let Some(&(kmax, vmax)) = row.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
                continue;
            };
            let y1 = -(r as f32) - 0.1;
            let y0 = -(r as f32) - 0.9;
            let w = |v: f64| bx + ((v / hi).clamp(0.0, 1.0) as f32) * bw;
            mesh.rect(bx, y0, w(vmin), y1, 0.1, MIN_BAR);
            mesh.rect(w(vmin), y0, w(vmax), y1, 0.1, MAX_BAR);
            if text && vmax > 0.0 {
                scene.labels.push(
                    Label::world(
                        format!(
                            "{} ({}) – {} ({})",
                            axes::format_value(vmin, &unit, vmin.abs(), 0.0),
                            p.columns.get(kmin).cloned().unwrap_or_default(),
                            axes::format_value(vmax, &unit, vmax.abs(), 0.0),
                            p.columns.get(kmax).cloned().unwrap_or_default()
                        ),
                        [w(vmax) + 0.2, -(r as f32) - 0.5, 0.0],
                        10.0,
                        ink,
                    )
                    .aligned(LabelAlign::LeftCenter)
                    .priority(3),
                );
            }
        }
        scene.lines.push(Segment {
            a: [bx, 0.0, 0.3],
            b: [bx, -rows_f, 0.3],
            color: ink,
        });
        scene.labels.push(
            Label::world("min / max", [bx + bw / 2.0, 0.0, 0.0], 11.0, ink)
                .aligned(LabelAlign::CenterBottom)
                .priority(1),
        );
        let (ticks, step) = axes::nice_ticks(0.0, hi, 3);
        for v in ticks {
            let xx = bx + (v / hi) as f32 * bw;
            scene.lines.push(Segment {
                a: [xx, -rows_f, 0.3],
                b: [xx, -rows_f - tick, 0.3],
                color: ink,
            });
            scene.labels.push(
                Label::world(
                    axes::format_value(v, &unit, hi, step),
                    [xx, -rows_f - tick, 0.0],
                    11.0,
                    ink,
                )
                .aligned(LabelAlign::CenterTop)
                .priority(2),
            );
        }
        tail.push(KeyEntry {
            mark: KeyMark::Bar,
            color: MIN_BAR,
            text: format!("min over {}s", profile::column_noun(p)),
        });
        tail.push(KeyEntry {
            mark: KeyMark::Bar,
            color: MAX_BAR,
            text: "up to the max".into(),
        });
    }
    scene.meshes.push(mesh);
    tail.insert(
        0,
        KeyEntry {
            mark: KeyMark::Bar,
            color: ZERO_ROW,
            text: format!("{} 0", met.name),
        },
    );
    if !ranked.is_empty() {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: [1.0, 1.0, 1.0, 0.0],
            text: format!(
                "top {} {}:",
                ranked.len(),
                if p.row_kind == crate::model::RowKind::Line {
                    "procedures"
                } else {
                    "functions"
                }
            ),
        });
        for (i, rk) in ranked.iter().enumerate() {
            let name: String = if rk.name.chars().count() > 18 {
                format!("{}…", rk.name.chars().take(17).collect::<String>())
            } else {
                rk.name.clone()
            };
            scene.key.push(KeyEntry {
                mark: KeyMark::Bar,
                color: rgba(cmap.at((rk.percent / 100.0) as f32), 1.0),
                text: format!("{}. {name} {:.1} %", i + 1, rk.percent),
            });
        }
    }
    scene.key.extend(tail);
    let (lo, hi, lunit) = scale.legend(&met.unit);
    scene.legend = Some(Legend {
        title: met.name.clone(),
        colormap: colormap.to_string(),
        min: lo,
        max: hi,
        unit: lunit,
        note: Some(if scale.normalized {
            format!(
                "of the hottest cell, {}",
                axes::format_value(scale.hi, &unit, scale.hi, 0.0)
            )
        } else {
            "raw values".into()
        }),
    });
    let skipped: i64 = o.skipped.iter().map(|(a, b)| b - a + 1).sum();
    let mut notes = Vec::new();
    if !o.skipped.is_empty() {
        notes.push(format!(
            "{skipped} zero rows in {} runs skipped",
            o.skipped.len()
        ));
    }
    if bin > q.bin {
        notes.push(format!("{bin} rows per row to fit"));
    } else if bin > 1 {
        notes.push(format!("{bin} rows per row ({})", q.by));
    }
    if bc > 1 {
        notes.push(format!(
            "{bc} {}s per column (max)",
            profile::column_noun(p)
        ));
    }
    if strips > 1 {
        notes.push(format!("{strips} strips"));
    }
    scene.title = format!(
        "Profile: {} — {} {}s × {} {}s{}",
        met.name,
        p.num_rows(),
        profile::row_noun(p),
        cols,
        profile::column_noun(p),
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        }
    );
    scene.axes = format!(
        "x: {} (strips of {c2} columns), y: −display row",
        profile::column_noun(p)
    );
    Ok(scene)
}
