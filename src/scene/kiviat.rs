//! The Kiviat tube (paper 003 §3.3–3.4, SPEC §4.1): the elements of a ring
//! field on a circle, radius proportional to the value (linear or log), one
//! ring per time bin along the tube's axis, adjacent elements and successive
//! rings joined into quad patches; coloured by the value or by a second
//! field; leading empty bins trimmed; an animation window of `width` bins
//! slides along the tube; `stretch` scales the time axis.

use super::colormap::Colormap;
use super::{Anchor, Label, Legend, Mesh, Projection, Scene, Segment, Vertex, rgba};
use crate::analysis::fields::{Field, leading_empty_bins};
use crate::error::{Error, Result};

/// How values become radii.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RadiusScale {
    Linear,
    Log,
}

/// Parameters of the tube.
#[derive(Debug, Clone)]
pub struct KiviatParams {
    /// First bin shown, counted after the trimmed leading empty bins.
    pub start: usize,
    /// Bins shown (the animation width); `None`: the whole tube.
    pub width: Option<usize>,
    /// Length of one bin along the axis, relative to the tube's radius.
    pub stretch: f32,
    pub scale: RadiusScale,
    pub trim_leading_empty: bool,
    pub colormap: String,
    /// Radius of a zero value, relative to the largest radius (keeps the
    /// tube closed where values are 0).
    pub inner: f32,
    /// Level of detail: at most this many triangles; beyond, successive
    /// bins are averaged into one ring.
    pub max_triangles: usize,
}

impl Default for KiviatParams {
    fn default() -> Self {
        KiviatParams {
            start: 0,
            width: Some(15),
            stretch: 0.15,
            scale: RadiusScale::Linear,
            trim_leading_empty: true,
            colormap: "viridis".into(),
            inner: 0.05,
            max_triangles: 2_000_000,
        }
    }
}

/// Builds the tube for `field` (radius), coloured by `color` (or by the
/// radius field).
pub fn build(field: &Field, color: Option<&Field>, p: &KiviatParams) -> Result<Scene> {
    let e = field.elements;
    if e < 3 {
        return Err(Error::Invalid(format!(
            "a Kiviat tube needs at least 3 elements, the field has {e}"
        )));
    }
    if let Some(c) = color
        && (c.bins != field.bins || c.elements != e)
    {
        return Err(Error::Invalid(
            "the colour field must have the shape of the radius field".into(),
        ));
    }
    let skip = if p.trim_leading_empty {
        leading_empty_bins(field)
    } else {
        0
    };
    let first = skip + p.start;
    let available = field.bins.saturating_sub(first);
    let n = p.width.map_or(available, |w| w.min(available));
    if n == 0 {
        return Err(Error::Invalid(format!(
            "no bins to show: {} bins, {skip} leading empty, start {}",
            field.bins, p.start
        )));
    }
    // level of detail: average `group` successive bins into one ring
    let group = (2 * e * n).div_ceil(p.max_triangles.max(2 * e)).max(1);
    let rings = n.div_ceil(group);
    let avg = |f: &Field, r: usize, k: usize| -> f64 {
        let (a, b) = (first + r * group, (first + (r + 1) * group).min(first + n));
        (a..b).map(|t| f.at(t, k)).sum::<f64>() / (b - a) as f64
    };
    let radius = |v: f64| -> f64 {
        match p.scale {
            RadiusScale::Linear => v.max(0.0),
            RadiusScale::Log => v.max(0.0).ln_1p(),
        }
    };
    // scales over the shown bins
    let (mut vmax, mut cmin, mut cmax) = (0f64, f64::INFINITY, f64::NEG_INFINITY);
    let cf = color.unwrap_or(field);
    for r in 0..rings {
        for k in 0..e {
            vmax = vmax.max(radius(avg(field, r, k)));
            let c = avg(cf, r, k);
            cmin = cmin.min(c);
            cmax = cmax.max(c);
        }
    }
    let vmax = if vmax > 0.0 { vmax } else { 1.0 };
    if cmax <= cmin {
        cmax = cmin + 1.0;
    }
    let cmap = Colormap::named(&p.colormap)?;
    let mut mesh = Mesh {
        lit: true,
        ..Default::default()
    };
    let angle = |k: usize| std::f32::consts::TAU * k as f32 / e as f32;
    let pos = |t: usize, k: usize| -> [f32; 3] {
        let r = p.inner + (1.0 - p.inner) * (radius(avg(field, t, k)) / vmax) as f32;
        let a = angle(k);
        [r * a.cos(), r * a.sin(), -((t * group) as f32) * p.stretch]
    };
    for t in 0..rings {
        for k in 0..e {
            let c = ((avg(cf, t, k) - cmin) / (cmax - cmin)) as f32;
            mesh.vertices.push(Vertex {
                position: pos(t, k),
                normal: [0.0; 3],
                color: rgba(cmap.at(c), 1.0),
            });
        }
    }
    // quads between adjacent elements (wrapping) and successive rings
    for t in 0..rings.saturating_sub(1) {
        for k in 0..e {
            let (a, b) = ((t * e + k) as u32, (t * e + (k + 1) % e) as u32);
            let (c, d) = (a + e as u32, b + e as u32);
            mesh.indices.extend_from_slice(&[a, b, d, a, d, c]);
        }
    }
    smooth_normals(&mut mesh);
    let mut scene = Scene::new("Kiviat tube", Projection::Perspective);
    // a single ring (width 1) is drawn as its outline
    if rings == 1 {
        for k in 0..e {
            let (a, b) = (mesh.vertices[k], mesh.vertices[(k + 1) % e]);
            scene.lines.push(Segment {
                a: a.position,
                b: b.position,
                color: a.color,
            });
        }
    }
    // the axis, with the time bins it spans
    let z1 = -(((rings.max(2) - 1) * group) as f32) * p.stretch;
    scene.lines.push(Segment {
        a: [0.0, 0.0, 0.0],
        b: [0.0, 0.0, z1],
        color: [0.6, 0.6, 0.6, 1.0],
    });
    scene.labels.push(Label {
        text: format!("bin {first}"),
        anchor: Anchor::World([0.0, 0.0, 0.0]),
        size: 14.0,
        color: [0.9, 0.9, 0.9, 1.0],
    });
    scene.labels.push(Label {
        text: format!("bin {}", first + n - 1),
        anchor: Anchor::World([0.0, 0.0, z1]),
        size: 14.0,
        color: [0.9, 0.9, 0.9, 1.0],
    });
    scene.meshes.push(mesh);
    scene.title = format!(
        "Kiviat tube: {} ({} elements, bins {}..{} of {}, {} leading empty bins trimmed{})",
        field.quantity,
        e,
        first,
        first + n - 1,
        field.bins,
        skip,
        if group > 1 {
            format!("; {group} bins per ring")
        } else {
            String::new()
        }
    );
    scene.legend = Some(Legend {
        title: color.map_or(field.quantity.clone(), |c| c.quantity.clone()),
        colormap: p.colormap.clone(),
        min: cmin,
        max: cmax,
        unit: cf.unit.clone(),
    });
    Ok(scene)
}

/// Averages the face normals around every vertex.
pub fn smooth_normals(mesh: &mut Mesh) {
    let mut acc = vec![[0f32; 3]; mesh.vertices.len()];
    for tri in mesh.indices.chunks_exact(3) {
        let [a, b, c] = [tri[0], tri[1], tri[2]].map(|i| mesh.vertices[i as usize].position);
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let n = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        for &i in tri {
            for k in 0..3 {
                acc[i as usize][k] += n[k];
            }
        }
    }
    for (v, n) in mesh.vertices.iter_mut().zip(acc) {
        let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        v.normal = if l > 0.0 {
            [n[0] / l, n[1] / l, n[2] / l]
        } else {
            [0.0, 0.0, 1.0]
        };
    }
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
            edges: (0..=bins as u64).collect(),
            layout: FieldLayout::Ring,
            quantity: "accesses".into(),
            unit: "accesses".into(),
        }
    }

    #[test]
    fn counts_bounds_and_trimming() {
        // 3 leading empty bins, then value = element + 1
        let f = field(10, 8, |t, e| if t < 3 { 0.0 } else { e as f64 + 1.0 });
        let p = KiviatParams {
            width: Some(4),
            ..Default::default()
        };
        let s = build(&f, None, &p).unwrap();
        let m = &s.meshes[0];
        assert_eq!(m.vertices.len(), 4 * 8);
        assert_eq!(m.triangles(), 2 * 8 * 3);
        assert!(s.title.contains("bins 3..6"), "{}", s.title);
        let (lo, hi) = s.bounds().unwrap();
        // the largest value (element 7) sits at radius 1
        assert!((hi[0] - 1.0f32.max(lo[0].abs())).abs() < 1.0 + 1e-6);
        assert!((lo[2] + 3.0 * p.stretch).abs() < 1e-6);
        let r7 = m.vertices[7].position;
        assert!(((r7[0] * r7[0] + r7[1] * r7[1]).sqrt() - 1.0).abs() < 1e-6);
        // colours follow the colour map: element 0 has the smallest value
        let cmap = Colormap::named("viridis").unwrap();
        assert_eq!(&m.vertices[0].color[..3], &cmap.at(0.0));
        assert_eq!(&m.vertices[7].color[..3], &cmap.at(1.0));
        // every normal is unit length
        assert!(m.vertices.iter().all(|v| {
            ((v.normal[0].powi(2) + v.normal[1].powi(2) + v.normal[2].powi(2)).sqrt() - 1.0).abs()
                < 1e-4
        }));
    }

    #[test]
    fn sliding_window_and_errors() {
        let f = field(30, 6, |t, e| (t * e) as f64);
        let whole = build(
            &f,
            None,
            &KiviatParams {
                width: None,
                trim_leading_empty: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(whole.meshes[0].vertices.len(), 30 * 6);
        let slid = build(
            &f,
            None,
            &KiviatParams {
                start: 20,
                width: Some(15),
                trim_leading_empty: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(slid.meshes[0].vertices.len(), 10 * 6);
        assert!(
            build(
                &f,
                None,
                &KiviatParams {
                    start: 40,
                    ..Default::default()
                }
            )
            .is_err()
        );
        assert!(build(&field(3, 2, |_, _| 1.0), None, &KiviatParams::default()).is_err());
    }

    #[test]
    fn level_of_detail_keeps_the_budget() {
        let f = field(10_000, 64, |t, e| ((t + e) % 7) as f64);
        let s = build(
            &f,
            None,
            &KiviatParams {
                width: None,
                trim_leading_empty: false,
                max_triangles: 100_000,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(s.triangles() <= 100_000, "{}", s.triangles());
        assert!(s.triangles() > 50_000);
        assert!(s.title.contains("bins per ring"));
    }
}
