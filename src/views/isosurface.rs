//! Isosurfaces over a data-distribution cube (paper 003 §3.2, SPEC §4.2):
//! the elements in an X × Y × Z cube, K isovalues (default 5) spanning the
//! value range of each step (or of the whole animation, or a list), each a translucent,
//! distinctly coloured surface (marching cubes, CPU path), animated over
//! the volume's steps (code regions of Boxfish tables, time bins of a
//! trace, the T of a 4D array); the cube outline with its axes.
//!
//! Inputs: a volume (Boxfish tables, a NumPy 3D/4D array; `--quantity`
//! names the column), or a trace whose locations fill a cube
//! (`--param cube=XxYxZ`: the field of `--quantity` per time bin).

use serde::{Deserialize, Serialize};

use super::{Animation, BuildCtx, ParamDoc, Resolved, View, inputs};
use crate::analysis::isosurface;
use crate::error::{Error, Result};
use crate::model::{Time, Volume};
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::{
    KeyEntry, KeyMark, Label, LabelAlign, Mesh, Projection, Scene, Segment, Vertex, rgba,
};

/// The isosurface view.
pub struct Isosurface;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IsoParams {
    /// Number of isovalues spanning the range.
    pub count: usize,
    /// Explicit isovalues (instead of `count`).
    pub values: Vec<f64>,
    /// Opacity of each surface.
    pub opacity: f32,
    /// The isovalues from each step's range (else the whole animation's:
    /// counters of real runs differ by orders of magnitude between code
    /// regions, so per step is the default).
    pub per_step_range: bool,
    /// A trace's locations as an X×Y×Z cube ("8x8x8").
    pub cube: String,
}

impl Default for IsoParams {
    fn default() -> Self {
        IsoParams {
            count: 5,
            values: Vec::new(),
            opacity: 0.4,
            per_step_range: true,
            cube: String::new(),
        }
    }
}

fn parse_cube(s: &str) -> Result<[usize; 3]> {
    let v: Vec<usize> = s
        .split('x')
        .map(|d| d.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::Invalid(format!("expected cube=XxYxZ, found '{s}'")))?;
    match v[..] {
        [x, y, z] if x * y * z > 0 => Ok([x, y, z]),
        _ => Err(Error::Invalid(format!("expected cube=XxYxZ, found '{s}'"))),
    }
}

/// The volume a view shows: from the input's volumes, or a trace's field.
pub fn volume_of(input: &Loaded, spec: &Resolved, cube: &str) -> Result<Volume> {
    match input {
        Loaded::Volumes(set) => {
            let q = &spec.spec.quantity;
            Ok(if q == "busy" {
                set.volumes
                    .first()
                    .ok_or_else(|| Error::Invalid("the input holds no volume".into()))?
                    .clone()
            } else {
                set.find(q)?.clone()
            })
        }
        Loaded::Trace(t) => {
            if cube.is_empty() {
                return Err(Error::Invalid(
                    "a trace needs --param cube=XxYxZ (its locations as a cube) for this view"
                        .into(),
                ));
            }
            let dims = parse_cube(cube)?;
            let f = inputs::field(t, &spec.spec.quantity, spec)?;
            if f.elements != dims.iter().product::<usize>() {
                return Err(Error::Invalid(format!(
                    "cube={cube} holds {} elements, {} has {}",
                    dims.iter().product::<usize>(),
                    f.quantity,
                    f.elements
                )));
            }
            let mag = *f.edges.last().unwrap_or(&1) as f64;
            let steps = (0..f.bins)
                .map(|k| axes::format_time(f.edges[k] as f64, mag, 0.0))
                .collect();
            Volume::new(
                f.quantity.clone(),
                f.unit.clone(),
                dims,
                ["x".into(), "y".into(), "z".into()],
                "time bin",
                steps,
                f.values,
            )
            .map(|mut v| {
                if f.time == crate::analysis::fields::TimeAxis::Nanoseconds {
                    v.times = f.edges.clone();
                }
                v
            })
        }
        Loaded::Tensor(tf) => {
            // accesses of --kinds per interval, the elements as a cube
            let e = tf.shape[1] as usize;
            let dims = if cube.is_empty() {
                let n = (e as f64).cbrt().round() as usize;
                if n * n * n != e {
                    return Err(Error::Invalid(format!(
                        "the tensor has {e} elements, not a cube: give --param cube=XxYxZ"
                    )));
                }
                [n, n, n]
            } else {
                parse_cube(cube)?
            };
            if dims.iter().product::<usize>() != e {
                return Err(Error::Invalid(format!(
                    "cube={cube} holds {} elements, the tensor has {e}",
                    dims.iter().product::<usize>()
                )));
            }
            let f = inputs::field_of(input, &spec.spec.quantity, spec, "isosurface")?;
            Volume::new(
                f.quantity.clone(),
                "accesses",
                dims,
                ["element x".into(), "element y".into(), "element z".into()],
                "interval",
                (0..f.bins).map(|t| t.to_string()).collect(),
                f.values,
            )
        }
        Loaded::Profile(_) => Err(Error::Invalid(
            "the isosurface view needs a volume (Boxfish tables, a 3D/4D .npy) or a trace with --param cube=XxYxZ".into(),
        )),
    }
}

impl View for Isosurface {
    const NAME: &'static str = "isosurface";
    const ABOUT: &'static str =
        "Isosurfaces over a data-distribution cube, animated over steps (paper 003 §3.2)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "count",
            help: "number of isovalues spanning the value range [5]",
        },
        ParamDoc {
            key: "values",
            help: "explicit isovalues, e.g. [1e6,5e6] (instead of count) [[]]",
        },
        ParamDoc {
            key: "opacity",
            help: "opacity of each surface [0.4]",
        },
        ParamDoc {
            key: "per_step_range",
            help: "isovalues from each step's range (false: one set for the whole animation) [true]",
        },
        ParamDoc {
            key: "cube",
            help: "a trace's locations as an XxYxZ cube, e.g. 4x4x4 [\"\"]",
        },
    ];
    type Params = IsoParams;
    type Data = Volume;

    fn accepts(input: &Loaded, spec: &Resolved, p: &IsoParams) -> Result<()> {
        match input {
            Loaded::Volumes(_) | Loaded::Tensor(_) => volume_of(input, spec, &p.cube).map(|_| ()),
            Loaded::Trace(_) if !p.cube.is_empty() => parse_cube(&p.cube).map(|_| ()),
            _ => Err(Error::Invalid(
                "the isosurface view needs a volume (Boxfish tables, a 3D/4D .npy) or a trace with --param cube=XxYxZ".into(),
            )),
        }
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &IsoParams) -> Result<Volume> {
        volume_of(input, spec, &p.cube)
    }

    fn data_key(p: &IsoParams) -> serde_json::Value {
        serde_json::json!({ "cube": p.cube })
    }

    fn animation(v: &Volume, _p: &IsoParams) -> Animation {
        Animation {
            steps: v.steps.len(),
            stride: 1,
        }
    }

    fn step_at(v: &Volume, _p: &IsoParams, t: Time) -> Option<usize> {
        // volumes of a trace's time bins; Boxfish regions are not times
        (v.times.len() == v.steps.len() + 1)
            .then(|| super::step_in_bins(&v.times, t, 0, v.steps.len()))
    }

    fn build(v: &Volume, spec: &Resolved, p: &IsoParams, ctx: BuildCtx) -> Result<Scene> {
        build(v, &spec.colormap, p, ctx.step, ctx.triangle_budget)
    }

    fn panel(ui: &mut egui::Ui, p: &mut IsoParams) {
        ui.add(egui::Slider::new(&mut p.count, 1..=12).text("isovalues"));
        ui.add(egui::Slider::new(&mut p.opacity, 0.05..=1.0).text("opacity"));
        ui.checkbox(&mut p.per_step_range, "isovalues per step");
    }
}

/// `p` moved by `d` toward −∞ along the two axes other than `axis`.
fn away(p: [f32; 3], axis: usize, d: f32) -> [f32; 3] {
    let mut q = p;
    for (k, c) in q.iter_mut().enumerate() {
        if k != axis {
            *c -= d;
        }
    }
    q
}

/// The isovalues of step `t`.
pub fn isovalues_for(v: &Volume, p: &IsoParams, t: usize) -> Vec<f64> {
    if !p.values.is_empty() {
        return p.values.clone();
    }
    let (lo, hi) = if p.per_step_range {
        v.step(t)
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            })
    } else {
        v.range()
    };
    isosurface::isovalues(lo, hi, p.count.clamp(1, 64))
}

/// Builds the scene of step `t`.
pub fn build(
    v: &Volume,
    colormap: &str,
    p: &IsoParams,
    t: usize,
    budget: Option<usize>,
) -> Result<Scene> {
    let t = t.min(v.steps.len().saturating_sub(1));
    let [nx, ny, nz] = v.dims;
    let isos = isovalues_for(v, p, t);
    let cmap = Colormap::named(colormap)?;
    let cells = v.cells();
    let values = &v.values[t * cells..(t + 1) * cells];
    // the cube [-1, 1] along its longest axis, centred
    let longest = (nx.max(ny).max(nz).max(2) - 1) as f32;
    let s = 2.0 / longest;
    let off = [nx, ny, nz].map(|d| (d.max(1) - 1) as f32 / 2.0);
    let place = |p: [f32; 3]| [0, 1, 2].map(|k| (p[k] - off[k]) * s);
    let unit = Unit::from_name(&v.unit);
    // the key writes the isovalues with the digits their spacing needs
    let mag = isos.iter().fold(0f64, |m, x| m.max(x.abs()));
    let step = if isos.len() > 1 {
        (isos[1] - isos[0]).abs()
    } else {
        0.0
    };
    let mut scene = Scene::new("", Projection::Perspective);
    let mut total = 0;
    let (meshes, detail) = surfaces(values, v.dims, &isos, budget);
    for (k, (&iso, m)) in isos.iter().zip(meshes).enumerate() {
        total += m.triangles();
        let shade = if isos.len() > 1 {
            k as f32 / (isos.len() - 1) as f32
        } else {
            0.5
        };
        let c = cmap.at(shade);
        let color = rgba(c, p.opacity.clamp(0.02, 1.0));
        let mesh = Mesh {
            vertices: m
                .positions
                .iter()
                .zip(&m.normals)
                .map(|(&pos, &n)| Vertex {
                    position: place(pos),
                    normal: n,
                    color,
                })
                .collect(),
            indices: m.indices,
            lit: true,
        };
        scene.meshes.push(mesh);
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: rgba(c, 1.0),
            text: format!("{} = {}", v.name, axes::format_value(iso, &unit, mag, step)),
        });
    }
    // the cube outline and its axes
    let ink = axes::ink(true);
    let (a, b) = (
        place([0.0; 3]),
        place([(nx - 1) as f32, (ny - 1) as f32, (nz - 1) as f32]),
    );
    let corners: Vec<[f32; 3]> = (0..8)
        .map(|i| {
            [
                if i & 1 == 0 { a[0] } else { b[0] },
                if i & 2 == 0 { a[1] } else { b[1] },
                if i & 4 == 0 { a[2] } else { b[2] },
            ]
        })
        .collect();
    for i in 0..8usize {
        for bit in [1, 2, 4] {
            if i & bit == 0 {
                scene.lines.push(Segment {
                    a: corners[i],
                    b: corners[i | bit],
                    color: [0.55, 0.58, 0.65, 1.0],
                });
            }
        }
    }
    // ticks along the three edges from the origin corner
    for (axis, n) in [nx, ny, nz].into_iter().enumerate() {
        for q in axes::integer_ticks(0, (n.max(1) - 1) as u64, 4) {
            let mut pt = [0.0f32; 3];
            pt[axis] = q as f32;
            let w = place(pt);
            // ticks point away from the cube
            let out = away(w, axis, 0.04);
            scene.lines.push(Segment {
                a: w,
                b: out,
                color: ink,
            });
            scene.labels.push(
                Label::world(format!("{q}"), out, 11.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
        let mut mid = [0.0f32; 3];
        mid[axis] = (n.max(1) - 1) as f32 / 2.0;
        // the axis name first: a tick may give way to it, never the reverse
        let w = away(place(mid), axis, 0.3);
        scene
            .labels
            .push(Label::world(v.axes[axis].clone(), w, 12.0, ink).priority(0));
    }
    scene.axes = format!(
        "x: {} (0..{}); y: {} (0..{}); z: {} (0..{}); the cube spans [-1, 1] along its longest axis",
        v.axes[0],
        nx - 1,
        v.axes[1],
        ny - 1,
        v.axes[2],
        nz - 1
    );
    scene.title = format!(
        "Isosurfaces of {} over {nx}×{ny}×{nz}, {} {} ({} of {}){}",
        v.name,
        v.step_axis,
        v.steps[t],
        t + 1,
        v.steps.len(),
        if total == 0 { " — no surface" } else { "" }
    );
    if let Some(d) = detail {
        scene.title.push_str(&format!(" — {d}"));
    }
    Ok(scene)
}

/// A triangle count to two or three figures: 1.4 M, 250 k.
fn approx(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.0} k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// The surfaces of `isos`, in the grid coordinates of `dims`: at full
/// detail, or (with a playback budget that the full surfaces would exceed)
/// from the field resampled to fewer points, with a note saying so. The
/// full triangle count is estimated from a probe at a quarter of the
/// resolution (surface triangles grow with the square of the resolution).
fn surfaces(
    values: &[f64],
    dims: [usize; 3],
    isos: &[f64],
    budget: Option<usize>,
) -> (Vec<isosurface::IsoMesh>, Option<String>) {
    let full = || {
        isos.iter()
            .map(|&i| isosurface::extract(values, dims, i))
            .collect()
    };
    let Some(budget) = budget else {
        return (full(), None);
    };
    let shrink = |f: f64| {
        dims.map(|n| {
            if n < 2 {
                n
            } else {
                (((n - 1) as f64 / f).ceil() as usize + 1).max(2)
            }
        })
    };
    let probe_dims = shrink(4.0);
    if probe_dims == dims {
        return (full(), None);
    }
    let probe = isosurface::resample(values, dims, probe_dims);
    let probed: usize = isos
        .iter()
        .map(|&i| isosurface::extract(&probe, probe_dims, i).triangles())
        .sum();
    let estimate = probed as f64 * 16.0;
    if estimate <= budget as f64 {
        return (full(), None);
    }
    let to = shrink((estimate / budget as f64).sqrt());
    let coarse = isosurface::resample(values, dims, to);
    // coarse grid coordinates back to the original's, per axis
    let scale = [0, 1, 2].map(|k| {
        if to[k] > 1 {
            (dims[k] - 1) as f32 / (to[k] - 1) as f32
        } else {
            1.0
        }
    });
    let meshes = isos
        .iter()
        .map(|&i| {
            let mut m = isosurface::extract(&coarse, to, i);
            for p in &mut m.positions {
                for k in 0..3 {
                    p[k] *= scale[k];
                }
            }
            // gradients in coarse units are scale × the original's
            for n in &mut m.normals {
                let g = glam::Vec3::new(n[0] / scale[0], n[1] / scale[1], n[2] / scale[2]);
                *n = g.normalize_or(glam::Vec3::Z).to_array();
            }
            m
        })
        .collect();
    let note = format!(
        "playback: field resampled to {}×{}×{} (full detail ≈ {} triangles; pause to see it)",
        to[0],
        to[1],
        to[2],
        approx(estimate),
    );
    (meshes, Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ball(n: usize, steps: usize) -> Volume {
        let c = (n as f64 - 1.0) / 2.0;
        let mut values = Vec::new();
        for t in 0..steps {
            for i in 0..n * n * n {
                let (x, y, z) = (i % n, (i / n) % n, i / (n * n));
                let d = ((x as f64 - c).powi(2) + (y as f64 - c).powi(2) + (z as f64 - c).powi(2))
                    .sqrt();
                values.push((t + 1) as f64 * (c - d).max(0.0));
            }
        }
        Volume::new(
            "v",
            "",
            [n, n, n],
            ["x".into(), "y".into(), "z".into()],
            "step",
            (0..steps).map(|t| t.to_string()).collect(),
            values,
        )
        .unwrap()
    }

    #[test]
    fn playback_budget_lowers_detail_and_says_so() {
        let v = ball(64, 1);
        let p = IsoParams::default();
        let full = build(&v, "viridis", &p, 0, None).unwrap();
        let budget = full.triangles() / 6;
        let play = build(&v, "viridis", &p, 0, Some(budget)).unwrap();
        assert!(!full.title.contains("playback"));
        assert!(
            play.title.contains("playback: field resampled to"),
            "{}",
            play.title
        );
        // within the budget give or take the estimate, and the same extent
        assert!(
            play.triangles() <= budget * 3 / 2,
            "{} > {budget}",
            play.triangles()
        );
        assert!(play.triangles() * 20 >= budget, "{}", play.triangles());
        let extent = |s: &Scene| {
            s.meshes[0]
                .vertices
                .iter()
                .fold(0f32, |m, v| m.max(v.position[0].abs()))
        };
        assert!((extent(&full) - extent(&play)).abs() < 0.05);
        // a budget the surfaces fit changes nothing
        let roomy = build(&v, "viridis", &p, 0, Some(full.triangles() * 4)).unwrap();
        assert_eq!(roomy.triangles(), full.triangles());
    }

    #[test]
    fn nested_shells_one_per_isovalue() {
        let v = ball(16, 2);
        let whole = IsoParams {
            per_step_range: false,
            ..Default::default()
        };
        let s = build(&v, "viridis", &whole, 0, None).unwrap();
        assert_eq!(s.meshes.len(), 5);
        assert_eq!(s.key.len(), 5);
        // isovalues over the whole animation: step 0 reaches only half of
        // them (its values are half of step 1's)
        let nonempty = s.meshes.iter().filter(|m| !m.indices.is_empty()).count();
        assert!((2..5).contains(&nonempty), "{nonempty}");
        let s1 = build(&v, "viridis", &whole, 1, None).unwrap();
        let own = build(&v, "viridis", &IsoParams::default(), 0, None).unwrap();
        assert_eq!(
            own.meshes.iter().filter(|m| !m.indices.is_empty()).count(),
            5
        );
        assert_eq!(
            s1.meshes.iter().filter(|m| !m.indices.is_empty()).count(),
            5
        );
        assert!(
            s1.meshes
                .iter()
                .all(|m| m.vertices.iter().all(|v| v.color[3] < 1.0))
        );
        // the cube outline: 12 edges
        assert!(s.lines.len() >= 12);
        let (lo, hi) = s.bounds().unwrap();
        assert!(lo.iter().chain(&hi).all(|x| x.abs() <= 1.3));
        assert!(s.title.contains("(1 of 2)"), "{}", s.title);
    }

    #[test]
    fn explicit_values_and_bad_cubes() {
        let v = ball(8, 1);
        let p = IsoParams {
            values: vec![1.0],
            ..Default::default()
        };
        assert_eq!(build(&v, "viridis", &p, 0, None).unwrap().meshes.len(), 1);
        assert!(parse_cube("4x4").is_err());
        assert!(parse_cube("0x4x4").is_err());
        assert_eq!(parse_cube("2x3x4").unwrap(), [2, 3, 4]);
    }
}
