//! Hypercube views of a trace (paper 001 §3, HyperView): the P = 2^d
//! locations as the nodes of a d-cube in the CUBE (a cube of cubes),
//! GRAY-CODE (a grid whose rows and columns follow the Gray code: the links
//! between the two halves of each dimension run parallel), PASCAL (rows by
//! the number of one bits: logarithmic combining trees) or FFT (the
//! butterfly: one column per dimension, a link of dimension j a crossing
//! edge of stage j) layout. At each animation step — the time cursor at
//! the end of a time bin — nodes are coloured by their busy fraction in
//! the bin, links are lit by the messages in flight across them during the
//! bin (routed by the e-cube rule: differing bits from the lowest), and the
//! messages sent to a node and not yet received at the cursor stand as a
//! stack above it (its queue). Beyond `max_nodes`, subcubes of 2^a nodes
//! merge into one (the title says so).

use serde::{Deserialize, Serialize};

use super::network as net;
use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::network;
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, Label, LabelAlign, Mesh, Projection, Scene, Segment, rgba,
};

/// The hypercube view.
pub struct Hypercube;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HypercubeParams {
    /// cube, gray, pascal or fft.
    pub layout: String,
    /// Subcubes merge beyond this many nodes (a power of two).
    pub max_nodes: usize,
    /// Draw the message queues.
    pub queues: bool,
    /// Message tracking: nodes whose messages among themselves are
    /// highlighted on the links they cross.
    pub track: Vec<usize>,
}

impl Default for HypercubeParams {
    fn default() -> Self {
        HypercubeParams {
            layout: "cube".into(),
            max_nodes: 4096,
            queues: true,
            track: Vec::new(),
        }
    }
}

const LAYOUTS: [&str; 4] = ["cube", "gray", "pascal", "fft"];
const IDLE: [f32; 4] = [0.72, 0.74, 0.78, 1.0];
use super::network::{QUEUE, TRACK};

/// What the view draws from a trace.
pub struct HypercubeData {
    /// Dimension of the (merged) cube.
    pub dim: u32,
    /// Locations merged per node (2^a).
    pub merged: usize,
    /// Busy fraction per bin and node: `busy[k * nodes + n]`.
    pub busy: Vec<f64>,
    /// Messages in flight per bin and link: `flight[k * links + link]`,
    /// link = node · dim + bit (the link from node to node ^ 1 << bit,
    /// for node < partner).
    pub flight: Vec<u32>,
    /// Messages sent to each node and not received at each bin's end.
    pub queue: Vec<u32>,
    /// `flight` of the messages among the tracked nodes (empty: none).
    pub tracked: Vec<u32>,
    pub edges: Vec<Time>,
    pub states_label: String,
}

fn check(p: &HypercubeParams) -> Result<()> {
    if !LAYOUTS.contains(&p.layout.as_str()) {
        return Err(Error::Invalid(format!(
            "unknown layout '{}' (layouts: {})",
            p.layout,
            LAYOUTS.join(", ")
        )));
    }
    if !p.max_nodes.is_power_of_two() || p.max_nodes < 2 || p.max_nodes > 1 << 16 {
        return Err(Error::Invalid(format!(
            "max_nodes must be a power of two from 2 to 65536, not {}",
            p.max_nodes
        )));
    }
    Ok(())
}

fn dimension(p: usize) -> Result<u32> {
    if p < 2 || !p.is_power_of_two() {
        return Err(Error::Invalid(format!(
            "the hypercube view needs a power-of-two number of locations (at least 2), this trace has {p}"
        )));
    }
    Ok(p.trailing_zeros())
}

/// The e-cube route from `a` to `b`: the links (lower node, bit) crossed,
/// flipping the differing bits from the lowest.
pub fn route(a: usize, b: usize, dim: u32) -> Vec<(usize, u32)> {
    let mut at = a;
    let mut out = Vec::new();
    for bit in 0..dim {
        if (at ^ b) >> bit & 1 == 1 {
            let next = at ^ 1 << bit;
            out.push((at.min(next), bit));
            at = next;
        }
    }
    out
}

impl View for Hypercube {
    const NAME: &'static str = "hypercube";
    const ABOUT: &'static str = "Hypercube of the locations (CUBE, GRAY-CODE, PASCAL, FFT): nodes by busy fraction, links by messages in flight, message queues (paper 001)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "layout",
            help: "cube, gray, pascal or fft [cube]",
        },
        ParamDoc {
            key: "max_nodes",
            help: "subcubes merge into one node beyond this many nodes (a power of two) [4096]",
        },
        ParamDoc {
            key: "queues",
            help: "draw the messages waiting at each node as a stack [true]",
        },
        ParamDoc {
            key: "track",
            help: "message tracking: nodes, e.g. [0,5]; their messages to each other are highlighted [none]",
        },
    ];
    type Params = HypercubeParams;
    type Data = HypercubeData;

    fn accepts(input: &Loaded, _spec: &Resolved, p: &HypercubeParams) -> Result<()> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        dimension(t.num_locations()).map(|_| ())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &HypercubeParams) -> Result<HypercubeData> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        let full = dimension(t.num_locations())?;
        let dim = full.min(p.max_nodes.trailing_zeros());
        let a = full - dim;
        let nodes = 1usize << dim;
        let mask = t.states.select(&spec.spec.states)?;
        let links = nodes * dim as usize;
        let act = network::activity(
            t,
            &mask,
            (spec.t0, spec.t1, spec.bins),
            nodes,
            links,
            |l| Some(l >> a),
            |s, r| {
                route(s, r, dim)
                    .into_iter()
                    .map(|(n, bit)| n * dim as usize + bit as usize)
                    .collect()
            },
            &p.track,
        )?;
        Ok(HypercubeData {
            dim,
            merged: 1 << a,
            busy: act.busy,
            flight: act.flight,
            queue: act.queue,
            tracked: act.tracked,
            edges: act.edges,
            states_label: spec.states_label.clone(),
        })
    }

    fn data_key(p: &HypercubeParams) -> serde_json::Value {
        serde_json::json!({ "max_nodes": p.max_nodes, "track": p.track })
    }

    fn animation(d: &HypercubeData, _p: &HypercubeParams) -> Animation {
        Animation {
            steps: d.edges.len().saturating_sub(1).max(1),
            stride: 1,
        }
    }

    fn step_at(d: &HypercubeData, _p: &HypercubeParams, t: Time) -> Option<usize> {
        let steps = d.edges.len().saturating_sub(1).max(1);
        Some(super::step_in_bins(&d.edges, t, 0, steps))
    }

    fn build(
        d: &HypercubeData,
        spec: &Resolved,
        p: &HypercubeParams,
        ctx: BuildCtx,
    ) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx.step, ctx.selected)
    }

    fn panel(ui: &mut egui::Ui, p: &mut HypercubeParams) {
        egui::ComboBox::from_label("layout")
            .selected_text(p.layout.clone())
            .show_ui(ui, |ui| {
                for l in LAYOUTS {
                    ui.selectable_value(&mut p.layout, l.to_string(), l);
                }
            });
        ui.checkbox(&mut p.queues, "message queues");
        super::mesh::track_editor(ui, &mut p.track);
    }
}

fn inverse_gray(g: usize) -> usize {
    let mut n = g;
    let mut s = g >> 1;
    while s != 0 {
        n ^= s;
        s >>= 1;
    }
    n
}

/// Node positions of a layout (x, y, z; 2D layouts in z = 0) and whether
/// it is 3D.
pub fn positions(layout: &str, dim: u32) -> (Vec<[f32; 3]>, bool) {
    let n = 1usize << dim;
    match layout {
        "cube" => {
            // bit k moves along axis k mod 3 by 2.5^(k / 3): cubes of cubes
            let pos = (0..n)
                .map(|v| {
                    let mut p = [0f32; 3];
                    for k in 0..dim {
                        if v >> k & 1 == 1 {
                            p[(k % 3) as usize] += 2.5f32.powi((k / 3) as i32);
                        }
                    }
                    // y up: the third axis is depth
                    [p[0], p[2], p[1]]
                })
                .collect();
            (pos, true)
        }
        "gray" => {
            let cb = dim.div_ceil(2);
            let pos = (0..n)
                .map(|v| {
                    let (hi, lo) = (v >> cb, v & ((1 << cb) - 1));
                    [inverse_gray(lo) as f32, -(inverse_gray(hi) as f32), 0.0]
                })
                .collect();
            (pos, false)
        }
        "pascal" => {
            // row k: the nodes with k one bits, in increasing order, centred
            let mut rows: Vec<Vec<usize>> = vec![Vec::new(); dim as usize + 1];
            for v in 0..n {
                rows[v.count_ones() as usize].push(v);
            }
            let widest = rows.iter().map(Vec::len).max().unwrap_or(1) as f32;
            let mut pos = vec![[0f32; 3]; n];
            for (k, row) in rows.iter().enumerate() {
                let step = (widest / row.len() as f32).max(1.0);
                for (i, &v) in row.iter().enumerate() {
                    let x = (i as f32 + 0.5) * step - widest / 2.0;
                    pos[v] = [x, -(k as f32) * (widest / (dim as f32 + 1.0)).max(1.0), 0.0];
                }
            }
            (pos, false)
        }
        _ => {
            // fft: column j of node v at (j, v); returned for column 0 only,
            // the butterfly columns are drawn by the builder
            let pos = (0..n).map(|v| [0.0, -(v as f32), 0.0]).collect();
            (pos, false)
        }
    }
}

pub fn build(
    d: &HypercubeData,
    colormap: &str,
    p: &HypercubeParams,
    step: usize,
    selected: Option<usize>,
) -> Result<Scene> {
    let dim = d.dim;
    let nodes = 1usize << dim;
    let links = nodes * dim as usize;
    let bins = d.edges.len().saturating_sub(1).max(1);
    let k = step.min(bins - 1);
    let cmap = Colormap::named(colormap)?;
    let flight = &d.flight[k * links..(k + 1) * links.max(1)];
    let fmax = d.flight.iter().copied().max().unwrap_or(0).max(1) as f32;
    let qmax = d.queue.iter().copied().max().unwrap_or(0);
    let (pos, three_d) = positions(&p.layout, dim);
    let tracked_at = |l: usize| d.tracked.get(k * links + l).copied().unwrap_or(0);
    let fft = p.layout == "fft";
    let mut scene = Scene::new(
        "",
        if three_d {
            Projection::Perspective
        } else {
            Projection::Orthographic
        },
    );
    let ink = axes::ink(three_d);
    let link_colour = |c: u32| {
        if c == 0 {
            if three_d {
                [0.3, 0.32, 0.38, 1.0]
            } else {
                IDLE
            }
        } else {
            rgba(cmap.at(0.25 + 0.75 * c as f32 / fmax), 1.0)
        }
    };
    let node_colour = |v: usize| {
        let b = d.busy[k * nodes + v] as f32;
        rgba(cmap.at(b.clamp(0.0, 1.0)), 1.0)
    };
    // the FFT layout: columns 0..=dim, stage j joins column j and j + 1
    let col_x = |j: u32| j as f32 * (nodes as f32 / (dim as f32 + 1.0)).max(2.0);
    let mut busy_links = 0usize;
    if fft {
        for j in 0..dim {
            for v in 0..nodes {
                let w = v ^ 1 << j;
                let lo = v.min(w);
                let c = flight[lo * dim as usize + j as usize];
                let tracked = tracked_at(lo * dim as usize + j as usize);
                busy_links += (c > 0 && v < w) as usize;
                let y = |u: usize| -(u as f32);
                for (a, b) in [((v, j), (v, j + 1)), ((v, j), (w, j + 1))] {
                    scene.lines.push(Segment {
                        a: [col_x(a.1), y(a.0), 0.1],
                        b: [col_x(b.1), y(b.0), 0.1],
                        color: if a.0 == b.0 {
                            IDLE
                        } else if tracked > 0 {
                            TRACK
                        } else {
                            link_colour(c)
                        },
                    });
                }
            }
        }
    } else {
        for v in 0..nodes {
            for bit in 0..dim {
                let w = v ^ 1 << bit;
                if w < v {
                    continue;
                }
                let c = flight[v * dim as usize + bit as usize];
                let tracked = tracked_at(v * dim as usize + bit as usize);
                busy_links += (c > 0) as usize;
                let z = if c > 0 { 0.15 } else { 0.05 };
                let (mut a, mut b) = (pos[v], pos[w]);
                if !three_d {
                    a[2] = z;
                    b[2] = z;
                }
                scene.lines.push(Segment {
                    a,
                    b,
                    color: if tracked > 0 { TRACK } else { link_colour(c) },
                });
            }
        }
    }
    // nodes: spheres in 3D, squares in 2D; queues as stacks above them
    let size = if three_d {
        0.28
    } else if fft {
        0.7
    } else {
        0.36
    };
    let cols: Vec<u32> = if fft { (0..=dim).collect() } else { vec![0] };
    if three_d {
        let mut spheres = Vec::new();
        let mut stacks = Vec::new();
        for (v, &pv) in pos.iter().enumerate() {
            spheres.push(GlyphInstance {
                position: pv,
                scale: [size; 3],
                color: node_colour(v),
            });
            let q = d.queue[k * nodes + v].min(16);
            for i in 0..q {
                stacks.push(GlyphInstance {
                    position: [pv[0], pv[1] + 0.22 + i as f32 * 0.09, pv[2]],
                    scale: [0.12, 0.06, 0.12],
                    color: QUEUE,
                });
            }
        }
        scene.glyphs.push(Glyphs {
            shape: GlyphShape::Sphere,
            instances: spheres,
        });
        if p.queues {
            scene.glyphs.push(Glyphs {
                shape: GlyphShape::Box,
                instances: stacks,
            });
        }
    } else {
        let mut mesh = Mesh::default();
        let h = size / 2.0;
        for &j in &cols {
            for (v, &pv) in pos.iter().enumerate() {
                let [x, y, _] = if fft {
                    [col_x(j), -(v as f32), 0.0]
                } else {
                    pv
                };
                mesh.rect(x - h, y - h, x + h, y + h, 0.3, node_colour(v));
                if p.queues && (!fft || j == dim) {
                    let q = d.queue[k * nodes + v].min(16);
                    for i in 0..q {
                        let y0 = y + h + 0.04 + i as f32 * 0.1;
                        mesh.rect(x - h * 0.6, y0, x + h * 0.6, y0 + 0.07, 0.35, QUEUE);
                    }
                }
            }
        }
        scene.meshes.push(mesh);
        // node numbers when there is room
        if nodes <= 64 {
            for (v, &pv) in pos.iter().enumerate() {
                let [x, y, _] = if fft {
                    [col_x(0), -(v as f32), 0.0]
                } else {
                    pv
                };
                scene.labels.push(
                    Label::world(v.to_string(), [x - h, y, 0.0], 11.0, ink)
                        .aligned(LabelAlign::RightCenter)
                        .priority(2),
                );
            }
        }
        if fft {
            for j in 0..dim {
                scene.labels.push(
                    Label::world(
                        format!("bit {j}"),
                        [(col_x(j) + col_x(j + 1)) / 2.0, 0.8, 0.0],
                        12.0,
                        ink,
                    )
                    .aligned(LabelAlign::CenterBottom)
                    .priority(1),
                );
            }
        }
    }
    // hover: every node; the selected processor's node framed
    let (t_a, t_b) = (d.edges[k], d.edges[k + 1]);
    let look = net::NodeLook { three_d, size };
    let node_at = |v: usize| -> [f32; 3] {
        if fft {
            [col_x(dim), -(v as f32), 0.0]
        } else {
            pos[v]
        }
    };
    for v in 0..nodes {
        let (a, b) = (v * d.merged, (v + 1) * d.merged);
        let who = net::who(v, (a, b));
        let out_links: u32 = (0..dim as usize)
            .map(|bit| {
                let w = v ^ 1 << bit;
                flight[v.min(w) * dim as usize + bit]
            })
            .sum();
        let text = net::node_text(
            &who,
            (t_a, t_b),
            &d.states_label,
            d.busy[k * nodes + v],
            &format!("\nmessages in flight on its links: {out_links}"),
            d.queue[k * nodes + v],
        );
        net::node_pick(
            &mut scene,
            node_at(v),
            look,
            text,
            (d.merged == 1).then_some(a),
        );
    }
    if let Some(sel) = selected.filter(|&s| s / d.merged.max(1) < nodes) {
        net::frame_selected(&mut scene, node_at(sel / d.merged.max(1)), look, sel);
    }
    if three_d && nodes <= 64 {
        for (v, &pv) in pos.iter().enumerate() {
            scene.labels.push(
                Label::world(v.to_string(), pv, 11.0, ink)
                    .aligned(LabelAlign::LeftTop)
                    .priority(3),
            );
        }
    }
    net::legend_and_key(
        &mut scene,
        net::Key {
            states_label: &d.states_label,
            colormap,
            group: d.merged,
            busiest: (link_colour(fmax as u32), fmax as u32, ""),
            idle: link_colour(0),
            track: &p.track,
            tracked_now: (0..links).map(tracked_at).sum(),
            queues: p.queues.then_some(qmax),
        },
    );
    let (a, b) = (d.edges[k], d.edges[k + 1]);
    let mag = *d.edges.last().unwrap_or(&1) as f64;
    let step_t = axes::nice_ticks(a as f64, b as f64, 4).1 / 10.0;
    scene.title = format!(
        "Hypercube ({}, d = {dim}): {} – {} (bin {} of {bins}) — {busy_links} of {} links carrying messages{}",
        p.layout.to_uppercase(),
        axes::format_time(a as f64, mag, step_t),
        axes::format_time(b as f64, mag, step_t),
        k + 1,
        nodes * dim as usize / 2,
        if d.merged > 1 {
            format!(", {} locations per node (subcubes merged)", d.merged)
        } else {
            String::new()
        }
    );
    scene.axes = format!("{} layout of a {dim}-cube", p.layout);
    Ok(scene)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_cube_routes_flip_bits_from_the_lowest() {
        assert_eq!(route(0b000, 0b101, 3), vec![(0b000, 0), (0b001, 2)]);
        assert_eq!(route(0b110, 0b000, 3), vec![(0b100, 1), (0b000, 2)]);
        assert!(route(5, 5, 3).is_empty());
    }

    fn gray(i: usize) -> usize {
        i ^ (i >> 1)
    }

    #[test]
    fn layouts_place_every_node_apart() {
        for layout in LAYOUTS {
            for dim in 1..=8 {
                let (pos, _) = positions(layout, dim);
                assert_eq!(pos.len(), 1 << dim);
                if layout == "fft" {
                    continue;
                }
                let mut seen: Vec<[i64; 3]> = pos
                    .iter()
                    .map(|p| p.map(|c| (c * 1000.0).round() as i64))
                    .collect();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), 1 << dim, "{layout} d = {dim}");
            }
        }
        // Gray code: hypercube neighbours along the low (column) bits are
        // adjacent or wrap around the row
        assert_eq!(
            (0..8).map(gray).map(inverse_gray).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        // Pascal: row k holds C(d, k) nodes
        let (pos, _) = positions("pascal", 4);
        let row0 = pos.iter().filter(|p| p[1] == pos[0][1]).count();
        assert_eq!(row0, 1);
    }
}
