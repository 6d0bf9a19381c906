//! The network topology of a mesh or torus (paper 001 HyperView, Boxfish):
//! nodes at their coordinates coloured by a counter, every directed link
//! drawn as a half-tube from its source towards its destination, coloured
//! and sized by its packets — so both directions of a pair meet in the
//! middle, each readable — and wrap-around links of a torus drawn as stubs
//! leaving the faces of the block (the partner stub enters on the opposite
//! face). Animated over the code regions; one colour and width scale for
//! all of them.
//!
//! Input: Boxfish tables with a link table (`hardware.link_coords_table`),
//! e.g. the 8 × 8 × 8 Blue Gene/P torus of `../shared/traces/boxfish-bgpc`.

use serde::{Deserialize, Serialize};

use super::moments::SELECTED;
use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::error::{Error, Result};
use crate::model::{LinkSet, Volume};
use crate::readers::Loaded;
use crate::scene::axes::{self, Unit};
use crate::scene::colormap::Colormap;
use crate::scene::pick::Pick;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, KeyEntry, KeyMark, Label, LabelAlign, Legend, Projection,
    Scene, Segment, rgba,
};

/// The topology view.
pub struct Topology;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopologyParams {
    /// The node counter (empty: `--quantity`, else the first).
    pub node: String,
    /// Draw links without packets (thin and grey).
    pub idle_links: bool,
    /// The colour map of the nodes.
    pub node_colormap: String,
    /// Colours and widths over each region's own range (code regions of
    /// real runs differ by orders of magnitude); false: one scale for all.
    pub per_step_range: bool,
}

impl Default for TopologyParams {
    fn default() -> Self {
        TopologyParams {
            node: String::new(),
            idle_links: true,
            node_colormap: "magma".into(),
            per_step_range: true,
        }
    }
}

/// The links and the node counter.
pub struct TopologyData {
    pub links: LinkSet,
    pub node: Option<Volume>,
}

const IDLE: [f32; 4] = [0.35, 0.37, 0.42, 1.0];

fn node_volume(
    input: &Loaded,
    spec: &Resolved,
    p: &TopologyParams,
) -> Result<(LinkSet, Option<Volume>)> {
    let Loaded::Volumes(set) = input else {
        return Err(Error::Invalid(
            "the topology view needs network tables with links (Boxfish tables with hardware.link_coords_table)"
                .into(),
        ));
    };
    let links = set.links.clone().ok_or_else(|| {
        Error::Invalid(format!(
            "{}: no link table (hardware.link_coords_table) for the topology view",
            set.source.display()
        ))
    })?;
    let name = if !p.node.is_empty() {
        Some(p.node.as_str())
    } else if spec.spec.quantity != "busy" {
        Some(spec.spec.quantity.as_str())
    } else {
        None
    };
    let node = match name {
        Some(n) => Some(set.find(n)?.clone()),
        None => set.volumes.first().cloned(),
    };
    if let Some(v) = &node
        && v.dims != links.dims
    {
        return Err(Error::Invalid(format!(
            "the node counter {} covers {:?} nodes and the links {:?}",
            v.name, v.dims, links.dims
        )));
    }
    Ok((links, node))
}

impl View for Topology {
    const NAME: &'static str = "topology";
    const ABOUT: &'static str = "Network topology of a mesh or torus: links coloured and sized by packets, nodes by a counter (paper 001)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "node",
            help: "the node counter [--quantity, else the first]",
        },
        ParamDoc {
            key: "idle_links",
            help: "draw links without packets, thin and grey [true]",
        },
        ParamDoc {
            key: "node_colormap",
            help: "colour map of the nodes [magma]",
        },
        ParamDoc {
            key: "per_step_range",
            help: "colours and widths over each region's own range; false: one scale for all regions [true]",
        },
    ];
    type Params = TopologyParams;
    type Data = TopologyData;

    fn accepts(input: &Loaded, spec: &Resolved, p: &TopologyParams) -> Result<()> {
        Colormap::named(&p.node_colormap)?;
        node_volume(input, spec, p).map(|_| ())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &TopologyParams) -> Result<TopologyData> {
        let (links, node) = node_volume(input, spec, p)?;
        Ok(TopologyData { links, node })
    }

    fn data_key(p: &TopologyParams) -> serde_json::Value {
        serde_json::json!({ "node": p.node })
    }

    fn animation(d: &TopologyData, _p: &TopologyParams) -> Animation {
        Animation {
            steps: d.links.steps.len().max(1),
            stride: 1,
        }
    }

    fn build(
        d: &TopologyData,
        spec: &Resolved,
        p: &TopologyParams,
        ctx: BuildCtx,
    ) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx.step, ctx.selected)
    }

    fn panel(ui: &mut egui::Ui, p: &mut TopologyParams) {
        ui.checkbox(&mut p.idle_links, "links without packets");
        ui.checkbox(&mut p.per_step_range, "each region on its own scale");
    }
}

/// The unit step from `a` to `b` along one axis of a mesh or torus (`None`
/// when they are not neighbours): the axis, the sign, and whether the link
/// wraps around.
pub fn neighbour_step(
    a: [usize; 3],
    b: [usize; 3],
    dims: [usize; 3],
    torus: bool,
) -> Option<(usize, i32, bool)> {
    let diff: Vec<usize> = (0..3).filter(|&i| a[i] != b[i]).collect();
    let [axis] = diff[..] else {
        return None;
    };
    let (x, y, n) = (a[axis] as i64, b[axis] as i64, dims[axis] as i64);
    match y - x {
        1 => Some((axis, 1, false)),
        -1 => Some((axis, -1, false)),
        d if torus && n > 2 && d == n - 1 => Some((axis, -1, true)),
        d if torus && n > 2 && d == -(n - 1) => Some((axis, 1, true)),
        _ => None,
    }
}

pub fn build(
    d: &TopologyData,
    colormap: &str,
    p: &TopologyParams,
    step: usize,
    selected: Option<usize>,
) -> Result<Scene> {
    let l = &d.links;
    let dims = l.dims;
    let cmap = Colormap::named(colormap)?;
    let ncmap = Colormap::named(&p.node_colormap)?;
    let t = step.min(l.steps.len().saturating_sub(1));
    let vals = l.step(t);
    let vmax = if p.per_step_range {
        vals
    } else {
        &l.values[..]
    }
    .iter()
    .copied()
    .fold(0.0, f64::max)
    .max(1e-300);
    // node positions: centred, one unit apart; torus z upwards
    let c = |i: usize, k: usize| i as f32 - (dims[k] as f32 - 1.0) / 2.0;
    let pos = |a: [usize; 3]| [c(a[0], 0), c(a[2], 2), c(a[1], 1)];
    let world_axis = [0usize, 2, 1];
    let mut boxes = Vec::new();
    let mut lines = Vec::new();
    let (mut wraps, mut busy) = (0usize, 0usize);
    let mut link_picks = Vec::new();
    for (k, (&a, &b)) in l.src.iter().zip(&l.dst).enumerate() {
        let v = vals.get(k).copied().unwrap_or(0.0);
        if v <= 0.0 && !p.idle_links {
            continue;
        }
        busy += (v > 0.0) as usize;
        let u = (v / vmax).clamp(0.0, 1.0) as f32;
        let (color, width) = if v > 0.0 {
            (rgba(cmap.at(u), 1.0), 0.05 + 0.17 * u.sqrt())
        } else {
            (IDLE, 0.025)
        };
        let mut mid = pos(a);
        let pb = pos(b);
        for k in 0..3 {
            mid[k] = (mid[k] + pb[k]) / 2.0;
        }
        link_picks.push((k, mid, v));
        match neighbour_step(a, b, dims, l.torus) {
            Some((axis, sign, wrap)) => {
                wraps += wrap as usize;
                let wa = world_axis[axis];
                let mut centre = pos(a);
                // from the node's surface (0.12) to the midpoint (0.5)
                centre[wa] += sign as f32 * 0.31;
                let mut scale = [width; 3];
                scale[wa] = 0.38;
                boxes.push(GlyphInstance {
                    position: centre,
                    scale,
                    color,
                });
            }
            None => lines.push(Segment {
                a: pos(a),
                b: pos(b),
                color,
            }),
        }
    }
    // nodes
    let mut spheres = Vec::new();
    let node_step = d.node.as_ref().map(|v| {
        let label = &l.steps[t];
        v.steps
            .iter()
            .position(|s| s == label)
            .unwrap_or(t.min(v.steps.len().saturating_sub(1)))
    });
    let (nlo, nhi) = match (&d.node, node_step) {
        (Some(v), Some(s)) if p.per_step_range => v
            .step(s)
            .iter()
            .filter(|x| x.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            }),
        (Some(v), _) => v.range(),
        _ => (0.0, 1.0),
    };
    for z in 0..dims[2] {
        for y in 0..dims[1] {
            for x in 0..dims[0] {
                let color = match (&d.node, node_step) {
                    (Some(v), Some(s)) => {
                        let val = v.step(s)[[z, y, x]];
                        let u = if nhi > nlo {
                            ((val - nlo) / (nhi - nlo)) as f32
                        } else {
                            0.5
                        };
                        rgba(ncmap.at(0.15 + 0.85 * u), 1.0)
                    }
                    _ => [0.8, 0.8, 0.82, 1.0],
                };
                spheres.push(GlyphInstance {
                    position: pos([x, y, z]),
                    scale: [0.24; 3],
                    color,
                });
            }
        }
    }
    let mut scene = Scene::new("", Projection::Perspective);
    let n_links = boxes.len() + lines.len();
    // hover: nodes (numbered x-fastest, as processors) and links
    let node_index = |[x, y, z]: [usize; 3]| x + dims[0] * (y + dims[1] * z);
    for z in 0..dims[2] {
        for y in 0..dims[1] {
            for x in 0..dims[0] {
                let value = match (&d.node, node_step) {
                    (Some(v), Some(s)) => format!(
                        "\n{}: {}",
                        v.name,
                        axes::format_value(
                            v.step(s)[[z, y, x]],
                            &Unit::from_name(&v.unit),
                            nhi.abs().max(nlo.abs()),
                            0.0
                        )
                    ),
                    _ => String::new(),
                };
                let i = node_index([x, y, z]);
                scene.picks.push(Pick::point(
                    pos([x, y, z]),
                    format!("node {i} at ({x}, {y}, {z}){value}"),
                    Some(i),
                ));
            }
        }
    }
    for (k, mid, v) in link_picks {
        let (a, b) = (l.src[k], l.dst[k]);
        scene.picks.push(Pick::point(
            mid,
            format!(
                "link ({}, {}, {}) → ({}, {}, {})\n{} {}",
                a[0], a[1], a[2], b[0], b[1], b[2], v, l.name
            ),
            None,
        ));
    }
    let n_nodes = dims[0] * dims[1] * dims[2];
    if let Some(sel) = selected.filter(|&s| s < n_nodes) {
        let (x, y, z) = (
            sel % dims[0],
            sel / dims[0] % dims[1],
            sel / (dims[0] * dims[1]),
        );
        scene.frame_box(pos([x, y, z]), 0.22, SELECTED);
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: SELECTED,
            text: format!("selected: node {sel} at ({x}, {y}, {z})"),
        });
    }
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Sphere,
        instances: spheres,
    });
    scene.glyphs.push(Glyphs {
        shape: GlyphShape::Box,
        instances: boxes,
    });
    scene.lines.append(&mut lines);
    // axes: the three torus axes along the block's edges, with node numbers
    let ink = axes::ink(true);
    let lo = pos([0, 0, 0]);
    let names = ["x", "y", "z"];
    for axis in 0..3 {
        let wa = world_axis[axis];
        let mut a = lo;
        let mut b = lo;
        for k in 0..3 {
            a[k] -= 0.6;
            b[k] -= 0.6;
        }
        b[wa] = lo[wa] + dims[axis] as f32 - 1.0 + 0.6;
        scene.lines.push(Segment { a, b, color: ink });
        for i in axes::integer_ticks(0, dims[axis] as u64 - 1, 8) {
            let mut at = a;
            at[wa] = lo[wa] + i as f32;
            scene.labels.push(
                Label::world(i.to_string(), at, 11.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
        scene.labels.push(
            Label::world(format!("torus {}", names[axis]), b, 13.0, ink)
                .aligned(LabelAlign::LeftCenter)
                .priority(0),
        );
    }
    scene.legend = Some(Legend {
        title: format!("{} per link", l.name),
        colormap: colormap.to_string(),
        min: 0.0,
        max: vmax,
        unit: Unit::Count(l.name.clone()),
        note: Some(if p.per_step_range {
            "width ∝ √value; this region's range".into()
        } else {
            "width ∝ √value; one scale for all regions".into()
        }),
    });
    if let Some(v) = &d.node {
        let unit = Unit::from_name(&v.unit);
        for (u, what) in [(0.0, "low"), (0.5, "middle"), (1.0, "high")] {
            let val = nlo + (nhi - nlo) * u;
            scene.key.push(KeyEntry {
                mark: KeyMark::Bar,
                color: rgba(ncmap.at(0.15 + 0.85 * u as f32), 1.0),
                text: format!(
                    "node {}: {} ({what})",
                    v.name,
                    axes::format_value(val, &unit, nhi.abs().max(nlo.abs()), 0.0)
                ),
            });
        }
    }
    if p.idle_links {
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: IDLE,
            text: "link without packets".into(),
        });
    }
    let region = l.steps.get(t).cloned().unwrap_or_default();
    scene.title = format!(
        "{} {}×{}×{}: {} per link, region {region} ({} of {}) — {} of {} links busy{}",
        if l.torus { "Torus" } else { "Mesh" },
        dims[0],
        dims[1],
        dims[2],
        l.name,
        t + 1,
        l.steps.len(),
        busy,
        l.len(),
        if wraps > 0 {
            format!(", {wraps} wrap-around links as stubs")
        } else {
            String::new()
        }
    );
    scene.axes = format!(
        "x: torus x, y: torus z (up), z: torus y; nodes one unit apart; {n_links} links drawn"
    );
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_and_wrap_arounds() {
        let d = [8, 8, 8];
        assert_eq!(
            neighbour_step([0, 0, 0], [1, 0, 0], d, true),
            Some((0, 1, false))
        );
        assert_eq!(
            neighbour_step([0, 0, 0], [7, 0, 0], d, true),
            Some((0, -1, true))
        );
        assert_eq!(
            neighbour_step([0, 7, 0], [0, 0, 0], d, true),
            Some((1, 1, true))
        );
        assert_eq!(neighbour_step([0, 0, 0], [7, 0, 0], d, false), None);
        assert_eq!(neighbour_step([0, 0, 0], [1, 1, 0], d, true), None);
        assert_eq!(neighbour_step([0, 0, 0], [0, 0, 0], d, true), None);
    }
}
