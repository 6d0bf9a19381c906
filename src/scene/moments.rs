//! The moment display (paper 000 Figs. 2, 3, 6; SPEC §4.6): one row per
//! processor with a grey bar of length m0 centred at m1, black bars out to
//! m1 ± m2, a tick at m1 and a thin line of signed length m3 from m1; the
//! utilization Gantt chart (busy fraction per time bin) beside it.
//!
//! Level of detail: with more processors than `max_rows`, adjacent
//! processors are merged into one row by merging their moment accumulators
//! (the moments of the group), and the Gantt chart averages their rows.

use super::colormap::Colormap;
use super::{Anchor, Label, Legend, Mesh, Projection, Scene, Segment, rgba};
use crate::analysis::fields::Field;
use crate::analysis::moments::{MomentAcc, Moments};
use crate::error::{Error, Result};
use crate::model::Time;

/// Parameters of the display.
#[derive(Debug, Clone)]
pub struct MomentParams {
    pub t0: Time,
    pub t1: Time,
    /// At most this many rows (processors are grouped beyond).
    pub max_rows: usize,
    /// At most this many rows in the Gantt chart (rows are averaged beyond).
    pub max_gantt_rows: usize,
    pub colormap: String,
}

impl Default for MomentParams {
    fn default() -> Self {
        MomentParams {
            t0: 0,
            t1: 1,
            max_rows: 65_536,
            max_gantt_rows: 2048,
            colormap: "heat".into(),
        }
    }
}

const GREY: [f32; 4] = [0.62, 0.62, 0.62, 1.0];
const BLACK: [f32; 4] = [0.05, 0.05, 0.05, 1.0];
const SKEW: [f32; 4] = [0.75, 0.1, 0.1, 1.0];

/// Checks the inputs of a display and merges the accumulators of
/// `group` adjacent processors per row (at most `max_rows` rows): returns
/// `group` and the moments of each row.
fn row_moments(accs: &[MomentAcc], p: &MomentParams) -> Result<(usize, Vec<Moments>)> {
    let n = accs.len();
    if n == 0 {
        return Err(Error::Invalid("no processors to display".into()));
    }
    if p.t1 <= p.t0 {
        return Err(Error::Invalid("the display window is empty".into()));
    }
    let group = n.div_ceil(p.max_rows.max(1));
    let rows = accs
        .chunks(group)
        .map(|c| {
            c.iter()
                .fold(MomentAcc::default(), |a, b| a.merge(*b))
                .moments()
        })
        .collect();
    Ok((group, rows))
}

/// Builds the display from per-processor accumulators and, optionally, the
/// busy-fraction field of the same processors for the Gantt chart.
pub fn build(accs: &[MomentAcc], gantt: Option<&Field>, p: &MomentParams) -> Result<Scene> {
    let (group, row) = row_moments(accs, p)?;
    let rows = row.len();
    let n = accs.len();
    if let Some(g) = gantt
        && g.elements != n
    {
        return Err(Error::Invalid(format!(
            "the Gantt field has {} elements for {n} processors",
            g.elements
        )));
    }
    let span = (p.t1 - p.t0) as f64;
    let x = |t: f64| (((t - p.t0 as f64) / span).clamp(0.0, 1.0)) as f32;
    let mut bars = Mesh::default();
    let mut lines = Vec::new();
    for (r, m) in row.iter().enumerate() {
        let (Some(m1), Some(m2), Some(m3)) = (m.m1, m.m2, m.m3) else {
            continue;
        };
        // row r occupies y in [-(r+1), -r): processor 0 on top
        let (y0, y1) = (-(r as f32) - 0.8, -(r as f32) - 0.2);
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
    scene.meshes.push(bars);
    scene.lines = lines;
    // the Gantt chart: [1.05, 2.05] in x
    if let Some(g) = gantt {
        let cmap = Colormap::named(&p.colormap)?;
        let mut mesh = Mesh::default();
        let gx = |t: u64| 1.05 + x(t as f64);
        let ggroup = n.div_ceil(p.max_gantt_rows.max(1)).max(group);
        let grows = n.div_ceil(ggroup);
        let scale = rows as f32 / grows as f32;
        for r in 0..grows {
            let (a, b) = (r * ggroup, ((r + 1) * ggroup).min(n));
            let (y0, y1) = (-((r + 1) as f32) * scale, -(r as f32) * scale);
            for k in 0..g.bins {
                let v = (a..b).map(|e| g.at(k, e)).sum::<f64>() / (b - a) as f64;
                if v <= 0.0 {
                    continue;
                }
                mesh.rect(
                    gx(g.edges[k]),
                    y0,
                    gx(g.edges[k + 1]),
                    y1,
                    0.0,
                    rgba(cmap.at(v as f32), 1.0),
                );
            }
        }
        scene.meshes.push(mesh);
        scene.legend = Some(Legend {
            title: "busy fraction".into(),
            colormap: p.colormap.clone(),
            min: 0.0,
            max: 1.0,
            unit: "fraction".into(),
        });
    }
    // frame and axis labels
    let bottom = -(rows as f32);
    for (x0, x1) in [(0.0, 1.0), (1.05, 2.05)] {
        for (a, b) in [
            ([x0, 0.0], [x1, 0.0]),
            ([x1, 0.0], [x1, bottom]),
            ([x1, bottom], [x0, bottom]),
            ([x0, bottom], [x0, 0.0]),
        ] {
            scene.lines.push(Segment {
                a: [a[0], a[1], 0.3],
                b: [b[0], b[1], 0.3],
                color: [0.3, 0.3, 0.3, 1.0],
            });
        }
        if gantt.is_none() {
            break;
        }
    }
    let label = |text: String, ax: f32, ay: f32| Label {
        text,
        anchor: Anchor::World([ax, ay, 0.0]),
        size: 14.0,
        color: [0.1, 0.1, 0.1, 1.0],
    };
    scene
        .labels
        .push(label(format!("{:.3} ms", p.t0 as f64 / 1e6), 0.0, bottom));
    scene
        .labels
        .push(label(format!("{:.3} ms", p.t1 as f64 / 1e6), 1.0, bottom));
    scene.labels.push(label(
        if group > 1 {
            format!("{n} processors, {group} per row")
        } else {
            format!("{n} processors")
        },
        0.0,
        0.0,
    ));
    scene.title = format!(
        "Moments of utilization m0..m3 ({n} processors){}",
        if gantt.is_some() {
            " and utilization Gantt chart"
        } else {
            ""
        }
    );
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_processor_and_grouping() {
        // processor p busy on [100p, 100p + 50)
        let accs: Vec<MomentAcc> = (0..10)
            .map(|p| MomentAcc::interval(100 * p, 100 * p + 50))
            .collect();
        let params = MomentParams {
            t0: 0,
            t1: 1000,
            ..Default::default()
        };
        let s = build(&accs, None, &params).unwrap();
        // 3 rectangles per row (two black bars of zero width for one interval, one grey)
        assert_eq!(s.meshes[0].vertices.len(), 10 * 3 * 4);
        // grey bar of row 3: [300, 350) → x in [0.30, 0.35]
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
        // grouped: 10 processors in 4 rows of 3
        let g = build(
            &accs,
            None,
            &MomentParams {
                max_rows: 4,
                ..params.clone()
            },
        )
        .unwrap();
        assert_eq!(g.meshes[0].vertices.len(), 4 * 3 * 4);
        assert!(build(&[], None, &params).is_err());
    }
}

/// The 3D variant: processors in depth, time across; each processor's m0
/// bar is a grey box centred at m1, the m2 wings black boxes, the m3 skew a
/// thin red box from m1; all drawn as instanced box glyphs.
pub fn build_3d(accs: &[MomentAcc], p: &MomentParams) -> Result<Scene> {
    use super::{GlyphInstance, GlyphShape, Glyphs};
    let (_, row) = row_moments(accs, p)?;
    let rows = row.len();
    let n = accs.len();
    let span = (p.t1 - p.t0) as f64;
    let width = 2.0f32;
    let x = |t: f64| (((t - p.t0 as f64) / span).clamp(0.0, 1.0)) as f32 * width;
    let depth = 2.0f32;
    let dz = depth / rows as f32;
    let mut boxes = Vec::with_capacity(rows * 4);
    let mut push = |x0: f32, x1: f32, y: f32, h: f32, z: f32, color: [f32; 4]| {
        if x1 > x0 {
            // the skew (red) is a thin line in depth; the bars fill the row
            let d = if color == SKEW { dz * 0.25 } else { dz * 0.8 };
            boxes.push(GlyphInstance {
                position: [(x0 + x1) / 2.0, y + h / 2.0, z],
                scale: [x1 - x0, h, d],
                color,
            });
        }
    };
    for (r, m) in row.iter().enumerate() {
        let (Some(m1), Some(m2), Some(m3)) = (m.m1, m.m2, m.m3) else {
            continue;
        };
        let z = -(r as f32) * dz;
        let half = m.m0 / 2.0;
        push(x(m1 - half), x(m1 + half), 0.0, 0.12, z, GREY);
        push(x(m1 - m2), x(m1 - half), 0.0, 0.06, z, BLACK);
        push(x(m1 + half), x(m1 + m2), 0.0, 0.06, z, BLACK);
        let (a, b) = if m3 >= 0.0 {
            (x(m1), x(m1 + m3))
        } else {
            (x(m1 + m3), x(m1))
        };
        push(a, b, 0.12, 0.02, z, SKEW);
    }
    let mut scene = Scene::new(
        format!("Moments of utilization, 3D ({n} processors in depth)"),
        Projection::Perspective,
    );
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Box,
        instances: boxes,
    });
    // the time axis and the processor axis
    scene.lines.push(Segment {
        a: [0.0, 0.0, dz],
        b: [width, 0.0, dz],
        color: [0.5, 0.5, 0.5, 1.0],
    });
    scene.lines.push(Segment {
        a: [0.0, 0.0, dz],
        b: [0.0, 0.0, -depth],
        color: [0.5, 0.5, 0.5, 1.0],
    });
    let label = |text: String, pos: [f32; 3]| Label {
        text,
        anchor: Anchor::World(pos),
        size: 13.0,
        color: [0.9, 0.9, 0.9, 1.0],
    };
    scene.labels.push(label(
        format!("{:.3} ms", p.t0 as f64 / 1e6),
        [0.0, 0.0, dz],
    ));
    scene.labels.push(label(
        format!("{:.3} ms", p.t1 as f64 / 1e6),
        [width, 0.0, dz],
    ));
    scene
        .labels
        .push(label("processor 0".into(), [0.0, 0.0, 0.0]));
    scene.labels.push(label(
        format!("processor {}", n - 1),
        [0.0, 0.0, -depth + dz],
    ));
    Ok(scene)
}

#[cfg(test)]
mod tests_3d {
    use super::*;

    #[test]
    fn boxes_per_processor() {
        let accs: Vec<MomentAcc> = (0..6)
            .map(|p| {
                MomentAcc::interval(100 * p, 100 * p + 50).merge(MomentAcc::interval(900, 1000))
            })
            .collect();
        let s = build_3d(
            &accs,
            &MomentParams {
                t0: 0,
                t1: 1000,
                ..Default::default()
            },
        )
        .unwrap();
        // grey, two wings and a skew box per processor
        assert_eq!(s.glyphs[0].instances.len(), 6 * 4);
        assert_eq!(s.triangles(), 6 * 4 * 12);
        let (lo, hi) = s.bounds().unwrap();
        assert!(lo[0] >= 0.0 && hi[0] <= 2.0 + 1e-6);
    }
}
