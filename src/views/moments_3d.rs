//! The 3D moment display (paper 000 Fig. 6): processors in depth, time
//! across; each processor's m0 bar is a light box centred at m1, the m2
//! wings darker boxes out to m1 ± m2, the m3 skew a thin red box from m1;
//! all instanced box glyphs. Level of detail: at most `max_rows` rows
//! (4 boxes of 12 triangles each: 32,768 rows stay within 2 M triangles),
//! merged as in the 2D display (per-processor averages).

use serde::{Deserialize, Serialize};

use super::moments::{
    SKEW, merged_rows, moment_key, processor_ticks, processors_text, row_moments, row_text,
    window_text,
};
use super::{BuildCtx, ParamDoc, Resolved, View, inputs};
use crate::analysis::metric::BusyRuns;
use crate::analysis::moments::MomentAcc;
use crate::error::{Error, Result};
use crate::readers::Loaded;
use crate::scene::axes;
use crate::scene::pick::Pick;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, Label, LabelAlign, Projection, Scene, Segment,
};

/// The 3D moment display view.
pub struct Moments3d;

/// Parameters of the 3D display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Moments3dParams {
    /// At most this many processor rows (32,768 keep 2 M triangles).
    pub max_rows: usize,
    /// Depth of the processor axis relative to the time axis (2).
    pub depth: f32,
}

impl Default for Moments3dParams {
    fn default() -> Self {
        Moments3dParams {
            max_rows: 32_768,
            depth: 1.0,
        }
    }
}

/// The m0 bar on the dark background: light grey; the m2 wings: slate.
const BAR: [f32; 4] = [0.80, 0.80, 0.80, 1.0];
const WING: [f32; 4] = [0.38, 0.45, 0.62, 1.0];

impl View for Moments3d {
    const NAME: &'static str = "moments-3d";
    const ABOUT: &'static str =
        "3D moment display: m0..m3 boxes per processor, processors in depth (paper 000 Fig. 6)";
    const COLORMAP: &'static str = "heat";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "max_rows",
            help: "at most this many processor rows (48 triangles each) [32768]",
        },
        ParamDoc {
            key: "depth",
            help: "length of the processor axis relative to the time axis [1]",
        },
    ];
    type Params = Moments3dParams;
    /// The accumulators over the window and the busy runs (moments up
    /// to the time cursor).
    type Data = (Vec<MomentAcc>, BusyRuns);

    fn accepts(input: &Loaded, _spec: &Resolved, _p: &Moments3dParams) -> Result<()> {
        let t = inputs::trace(input, Self::NAME)?;
        if t.num_locations() == 0 {
            return Err(Error::Invalid("the trace has no locations".into()));
        }
        Ok(())
    }

    fn compute(
        input: &Loaded,
        spec: &Resolved,
        _p: &Moments3dParams,
    ) -> Result<(Vec<MomentAcc>, BusyRuns)> {
        let t = inputs::trace(input, Self::NAME)?;
        Ok((
            inputs::moment_accs(t, spec)?,
            BusyRuns::new(t, &t.states.select(&spec.spec.states)?),
        ))
    }

    fn build(
        (accs, runs): &(Vec<MomentAcc>, BusyRuns),
        spec: &Resolved,
        p: &Moments3dParams,
        ctx: BuildCtx,
    ) -> Result<Scene> {
        let (accs, upto) = super::moments::accs_at(accs, runs, (spec.t0, spec.t1), ctx.cursor);
        let mut s = build(&accs, spec, p)?;
        if upto < spec.t1 {
            s.title.push_str(&format!(
                " (up to the cursor, {})",
                super::moments::window_text(spec.t0, upto)
            ));
        }
        Ok(s)
    }

    fn panel(ui: &mut egui::Ui, p: &mut Moments3dParams) {
        ui.add(egui::Slider::new(&mut p.depth, 0.2..=4.0).text("depth"));
    }
}

/// Builds the 3D display.
pub fn build(accs: &[MomentAcc], spec: &Resolved, p: &Moments3dParams) -> Result<Scene> {
    let (t0, t1) = (spec.t0, spec.t1);
    if t1 <= t0 {
        return Err(Error::Invalid("the display window is empty".into()));
    }
    let (group, row) = row_moments(accs, p.max_rows.clamp(1, 32_768))?;
    let rows = row.len();
    let n = accs.len();
    let span = (t1 - t0) as f64;
    let width = 2.0f32;
    let x = |t: f64| (((t - t0 as f64) / span).clamp(0.0, 1.0)) as f32 * width;
    let depth = width * p.depth.clamp(0.05, 20.0);
    let dz = depth / rows as f32;
    let mut picks = Vec::new();
    let mut boxes = Vec::with_capacity(rows * 4);
    let mut push = |x0: f32, x1: f32, y: f32, h: f32, z: f32, d: f32, color: [f32; 4]| {
        if x1 > x0 {
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
        let z = -(r as f32 + 0.5) * dz;
        let (a, b) = (r * group, ((r + 1) * group).min(n));
        picks.push(Pick::point(
            [x(m1), 0.12, z],
            row_text(&processors_text(a, b), m, &spec.states_label),
            (group == 1).then_some(a),
        ));
        let half = m.m0 / 2.0;
        push(x(m1 - half), x(m1 + half), 0.0, 0.12, z, dz * 0.8, BAR);
        push(x(m1 - m2), x(m1 - half), 0.0, 0.06, z, dz * 0.8, WING);
        push(x(m1 + half), x(m1 + m2), 0.0, 0.06, z, dz * 0.8, WING);
        let (a, b) = if m3 >= 0.0 {
            (x(m1), x(m1 + m3))
        } else {
            (x(m1 + m3), x(m1))
        };
        push(a, b, 0.12, 0.02, z, dz * 0.25, SKEW);
    }
    let mut scene = Scene::new("", Projection::Perspective);
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Box,
        instances: boxes,
    });
    scene.picks = picks;
    let ink = axes::ink(true);
    // the time axis in front, with ticks
    let zf = 0.05f32;
    scene.lines.push(Segment {
        a: [0.0, 0.0, zf],
        b: [width, 0.0, zf],
        color: ink,
    });
    let (ticks, step) = axes::nice_ticks(t0 as f64, t1 as f64, 5);
    for v in ticks {
        let xv = x(v);
        scene.lines.push(Segment {
            a: [xv, 0.0, zf],
            b: [xv, 0.0, zf + 0.06],
            color: ink,
        });
        scene.labels.push(
            Label::world(
                axes::format_time(v, t1 as f64, step),
                [xv, 0.0, zf + 0.08],
                12.0,
                ink,
            )
            .aligned(LabelAlign::CenterTop)
            .priority(1),
        );
    }
    // the processor axis on the left, in depth
    scene.lines.push(Segment {
        a: [0.0, 0.0, zf],
        b: [0.0, 0.0, -depth],
        color: ink,
    });
    for (q, y) in processor_ticks(n, group, 6) {
        // y of the 2D rows is the depth here
        let z = y * dz;
        scene.lines.push(Segment {
            a: [0.0, 0.0, z],
            b: [-0.06, 0.0, z],
            color: ink,
        });
        scene.labels.push(
            Label::world(format!("{q}"), [-0.08, 0.0, z], 12.0, ink)
                .aligned(LabelAlign::RightCenter)
                .priority(1),
        );
    }
    scene.labels.push(
        Label::world("processor", [-0.1, 0.0, -depth * 0.5], 13.0, ink)
            .aligned(LabelAlign::RightCenter)
            .priority(2),
    );
    scene.key = moment_key(BAR, WING);
    scene.axes = format!(
        "x: time, 0..2 = {}; y: bar height (m0 0.12, m2 0.06, m3 on top); z: processor rows of {group}, processor 0 at z = 0, later ones toward -z",
        window_text(t0, t1)
    );
    scene.title = format!(
        "Moments of time in {} — {n} processor{} in depth{}, {}",
        spec.states_label,
        if n == 1 { "" } else { "s" },
        merged_rows(group),
        window_text(t0, t1)
    );
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::DataSpec;

    fn spec(t1: u64) -> Resolved {
        Resolved {
            spec: DataSpec::default(),
            t0: 0,
            t1,
            bins: 10,
            colormap: "heat".into(),
            states_label: "busy".into(),
            warnings: vec![],
            gpu: None,
        }
    }

    #[test]
    fn boxes_per_processor() {
        let accs: Vec<MomentAcc> = (0..6)
            .map(|p| {
                MomentAcc::interval(100 * p, 100 * p + 50).merge(MomentAcc::interval(900, 1000))
            })
            .collect();
        let s = build(&accs, &spec(1000), &Moments3dParams::default()).unwrap();
        // grey, two wings and a skew box per processor
        assert_eq!(s.glyphs[0].instances.len(), 6 * 4);
        assert_eq!(s.triangles(), 6 * 4 * 12);
        let (lo, hi) = s.bounds().unwrap();
        assert!(lo[0] >= -0.1 && hi[0] <= 2.0 + 1e-6);
    }

    #[test]
    fn stays_within_two_million_triangles() {
        let accs: Vec<MomentAcc> = (0..65_536u64)
            .map(|p| {
                MomentAcc::interval(p % 100, 500).merge(MomentAcc::interval(700, 900 + p % 50))
            })
            .collect();
        let s = build(&accs, &spec(1000), &Moments3dParams::default()).unwrap();
        assert!(s.triangles() <= 2_000_000, "{}", s.triangles());
    }
}
