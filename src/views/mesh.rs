//! Mesh and torus views of a trace (paper 001 §3, HyperView's grid
//! layouts): the locations as the nodes of a 2D or 3D mesh or torus (a
//! shape given or the near-square one), or placed at user coordinates. At
//! each animation step — the time bin holding the cursor — nodes are
//! coloured by their busy fraction in the bin, links are lit by the
//! messages in flight across them (dimension-order routing: x, then y,
//! then z, the shorter way round a torus), the messages sent to a node and
//! not yet received stand as a stack beside it, and the messages among
//! tracked nodes are highlighted on their route. Wrap-around links of a
//! torus are drawn as stubs leaving both ends (labelled), so they never
//! cross the grid. Beyond `max_nodes`, consecutive locations merge into one
//! node (the title says how many).

use serde::{Deserialize, Serialize};

use super::network::{self as net, QUEUE};
use super::{Animation, BuildCtx, ParamDoc, Resolved, View};
use crate::analysis::network::{self, Activity};
use crate::error::{Error, Result};
use crate::model::Time;
use crate::readers::Loaded;
use crate::scene::axes;
use crate::scene::colormap::Colormap;
use crate::scene::{
    GlyphInstance, GlyphShape, Glyphs, KeyEntry, KeyMark, Label, LabelAlign, Mesh, Projection,
    Scene, Segment, rgba,
};

/// The mesh view.
pub struct MeshView;

/// Parameters of the view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MeshParams {
    /// `auto` (near-square 2D), `XxY` or `XxYxZ`.
    pub shape: String,
    /// Wrap-around links (a torus).
    pub torus: bool,
    /// A CSV of `location,row,col`: nodes at these places, a link per
    /// communicating pair.
    pub coords: String,
    /// Consecutive locations merge beyond this many nodes.
    pub max_nodes: usize,
    pub queues: bool,
    /// Message tracking: nodes whose messages among themselves are
    /// highlighted.
    pub track: Vec<usize>,
}

impl Default for MeshParams {
    fn default() -> Self {
        MeshParams {
            shape: "auto".into(),
            torus: false,
            coords: String::new(),
            max_nodes: 4096,
            queues: true,
            track: Vec::new(),
        }
    }
}

const IDLE_2D: [f32; 4] = [0.72, 0.74, 0.78, 1.0];
const IDLE_3D: [f32; 4] = [0.3, 0.32, 0.38, 1.0];
const EMPTY: [f32; 4] = [0.86, 0.86, 0.86, 1.0];

/// What the view draws.
pub struct MeshData {
    /// Nodes per axis (1 to 3 axes, x fastest); empty with coordinates.
    pub dims: Vec<usize>,
    pub torus: bool,
    /// Locations per node.
    pub group: usize,
    pub locations: usize,
    /// Node positions (x, y) with coordinates.
    pub places: Vec<[f32; 2]>,
    /// With coordinates: the links, one per communicating pair (a < b).
    pub pairs: Vec<(usize, usize)>,
    pub act: Activity,
    pub states_label: String,
}

fn parse_shape(s: &str) -> Result<Option<Vec<usize>>> {
    if s == "auto" || s.is_empty() {
        return Ok(None);
    }
    let dims: Option<Vec<usize>> = s.split('x').map(|v| v.trim().parse().ok()).collect();
    match dims {
        Some(d) if (1..=3).contains(&d.len()) && d.iter().all(|&x| x >= 1) => {
            let n = d.iter().try_fold(1usize, |a, &x| a.checked_mul(x));
            match n {
                Some(n) if n <= 1 << 20 => Ok(Some(d)),
                _ => Err(Error::Invalid(format!("shape {s}: too many nodes"))),
            }
        }
        _ => Err(Error::Invalid(format!(
            "shape: expected auto, XxY or XxYxZ, found '{s}'"
        ))),
    }
}

fn check(p: &MeshParams) -> Result<()> {
    parse_shape(&p.shape)?;
    if p.max_nodes < 1 || p.max_nodes > 1 << 18 {
        return Err(Error::Invalid(format!(
            "max_nodes must be from 1 to 262144, not {}",
            p.max_nodes
        )));
    }
    Ok(())
}

/// The near-square 2D shape of `n` nodes.
fn auto_shape(n: usize) -> Vec<usize> {
    let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
    vec![cols, n.div_ceil(cols).max(1)]
}

impl View for MeshView {
    const NAME: &'static str = "mesh";
    const ABOUT: &'static str = "2D/3D mesh or torus of the locations (or user coordinates): nodes by busy fraction, links by messages in flight, queues, message tracking (paper 001)";
    const COLORMAP: &'static str = "viridis";
    const PARAMS: &'static [ParamDoc] = &[
        ParamDoc {
            key: "shape",
            help: "auto (near-square 2D), XxY or XxYxZ nodes [auto]",
        },
        ParamDoc {
            key: "torus",
            help: "wrap-around links (a torus) [false]",
        },
        ParamDoc {
            key: "coords",
            help: "CSV of location,row,col: nodes at these places, a link per communicating pair [none]",
        },
        ParamDoc {
            key: "max_nodes",
            help: "consecutive locations merge into one node beyond this many [4096]",
        },
        ParamDoc {
            key: "queues",
            help: "draw the messages waiting at each node [true]",
        },
        ParamDoc {
            key: "track",
            help: "message tracking: nodes, e.g. [0,5]; their messages to each other are highlighted [none]",
        },
    ];
    type Params = MeshParams;
    type Data = MeshData;

    fn accepts(input: &Loaded, _spec: &Resolved, p: &MeshParams) -> Result<()> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        if t.num_locations() == 0 {
            return Err(Error::Invalid("the trace has no locations".into()));
        }
        Ok(())
    }

    fn compute(input: &Loaded, spec: &Resolved, p: &MeshParams) -> Result<MeshData> {
        let t = super::inputs::trace(input, Self::NAME)?;
        check(p)?;
        let n = t.num_locations();
        let mask = t.states.select(&spec.spec.states)?;
        let window = (spec.t0, spec.t1, spec.bins);
        if !p.coords.is_empty() {
            // user coordinates: one node per location, links per pair
            let layout = crate::analysis::image::read_coords(std::path::Path::new(&p.coords))?;
            let crate::analysis::image::Layout::Coordinates(xy) = layout else {
                return Err(Error::Invalid("coords: not a coordinate file".into()));
            };
            let mut places = vec![[f32::NAN; 2]; n];
            for (l, &(r, c)) in xy.iter().enumerate().take(n) {
                places[l] = [c as f32, -(r as f32)];
            }
            let m = &t.messages;
            let mut pairs: Vec<(usize, usize)> = (0..m.len())
                .filter(|&i| m.send_time[i] < spec.t1 && m.recv_time[i] >= spec.t0)
                .map(|i| {
                    let (a, b) = (m.sender[i] as usize, m.receiver[i] as usize);
                    (a.min(b), a.max(b))
                })
                .filter(|(a, b)| a != b)
                .collect();
            pairs.sort_unstable();
            pairs.dedup();
            if pairs.len() > 1 << 20 {
                return Err(Error::Invalid(format!(
                    "{} communicating pairs are too many links to draw; use a mesh shape instead",
                    pairs.len()
                )));
            }
            let index = |a: usize, b: usize| pairs.binary_search(&(a.min(b), a.max(b))).ok();
            let act = network::activity(
                t,
                &mask,
                window,
                n,
                pairs.len(),
                Some,
                |a, b| index(a, b).into_iter().collect(),
                &p.track,
            )?;
            return Ok(MeshData {
                dims: Vec::new(),
                torus: false,
                group: 1,
                locations: n,
                places,
                pairs,
                act,
                states_label: spec.states_label.clone(),
            });
        }
        let group = n.div_ceil(p.max_nodes).max(1);
        let nodes_needed = n.div_ceil(group);
        let dims = match parse_shape(&p.shape)? {
            Some(d) => {
                let have: usize = d.iter().product();
                if have < nodes_needed {
                    return Err(Error::Invalid(format!(
                        "shape {} holds {have} nodes; the trace needs {nodes_needed}{}",
                        p.shape,
                        if group > 1 {
                            format!(" ({group} locations per node)")
                        } else {
                            String::new()
                        }
                    )));
                }
                d
            }
            None => auto_shape(nodes_needed),
        };
        let nodes: usize = dims.iter().product();
        let axes_n = dims.len();
        let links = nodes * axes_n;
        let torus = p.torus;
        let act = network::activity(
            t,
            &mask,
            window,
            nodes,
            links,
            |l| Some(l / group),
            |a, b| network::route_mesh(a, b, &dims, torus),
            &p.track,
        )?;
        Ok(MeshData {
            dims,
            torus,
            group,
            locations: n,
            places: Vec::new(),
            pairs: Vec::new(),
            act,
            states_label: spec.states_label.clone(),
        })
    }

    fn data_key(p: &MeshParams) -> serde_json::Value {
        serde_json::json!([p.shape, p.torus, p.coords, p.max_nodes, p.track])
    }

    fn animation(d: &MeshData, _p: &MeshParams) -> Animation {
        Animation {
            steps: d.act.bins(),
            stride: 1,
        }
    }

    fn step_at(d: &MeshData, _p: &MeshParams, t: Time) -> Option<usize> {
        Some(super::step_in_bins(&d.act.edges, t, 0, d.act.bins()))
    }

    fn build(d: &MeshData, spec: &Resolved, p: &MeshParams, ctx: BuildCtx) -> Result<Scene> {
        build(d, &spec.colormap, p, ctx.step, ctx.selected)
    }

    fn panel(ui: &mut egui::Ui, p: &mut MeshParams) {
        ui.checkbox(&mut p.torus, "torus (wrap-around links)");
        ui.checkbox(&mut p.queues, "message queues");
        ui.horizontal(|ui| {
            ui.label("shape");
            ui.text_edit_singleline(&mut p.shape);
        });
        track_editor(ui, &mut p.track);
    }
}

/// A text field for the tracked nodes ("0, 5, 9").
pub fn track_editor(ui: &mut egui::Ui, track: &mut Vec<usize>) {
    let mut text = track
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    ui.horizontal(|ui| {
        ui.label("track nodes");
        if ui.text_edit_singleline(&mut text).lost_focus() {
            let parsed: Option<Vec<usize>> = text
                .split([',', ' '])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().ok())
                .collect();
            if let Some(v) = parsed {
                *track = v;
            }
        }
    });
}

/// Where node `n` sits (world units; 3D: x, up, depth).
fn place(d: &MeshData, n: usize) -> [f32; 3] {
    if !d.places.is_empty() {
        let [x, y] = d.places[n];
        return [x, y, 0.0];
    }
    let c = network::coords(n, &d.dims);
    match c.len() {
        1 => [c[0] as f32, 0.0, 0.0],
        2 => [c[0] as f32, -(c[1] as f32), 0.0],
        _ => [c[0] as f32, c[2] as f32, c[1] as f32],
    }
}

pub fn build(
    d: &MeshData,
    colormap: &str,
    p: &MeshParams,
    step: usize,
    selected: Option<usize>,
) -> Result<Scene> {
    let act = &d.act;
    let nodes = act.nodes;
    let links = act.links;
    let bins = act.bins();
    let k = step.min(bins - 1);
    let cmap = Colormap::named(colormap)?;
    let three_d = d.dims.len() == 3;
    let flight = |l: usize| act.flight.get(k * links + l).copied().unwrap_or(0);
    let tracked = |l: usize| act.tracked.get(k * links + l).copied().unwrap_or(0);
    let fmax = act.flight.iter().copied().max().unwrap_or(0).max(1) as f32;
    let qmax = act.queue.iter().copied().max().unwrap_or(0);
    let idle = if three_d { IDLE_3D } else { IDLE_2D };
    let link_colour = |l: usize| {
        let c = flight(l);
        if tracked(l) > 0 {
            net::TRACK
        } else if c == 0 {
            idle
        } else {
            rgba(cmap.at(0.25 + 0.75 * c as f32 / fmax), 1.0)
        }
    };
    let mut scene = Scene::new(
        "",
        if three_d {
            Projection::Perspective
        } else {
            Projection::Orthographic
        },
    );
    let ink = axes::ink(three_d);
    let mut busy_links = 0usize;
    let mut wraps = 0usize;
    let mut drawn = 0usize;
    let mut links_mesh = Mesh::default();
    let z = |a: [f32; 3], lift: f32| if three_d { a } else { [a[0], a[1], lift] };
    if !d.pairs.is_empty() || d.dims.is_empty() {
        for (l, &(a, b)) in d.pairs.iter().enumerate() {
            // a location the coordinate file does not place has no link
            if place(d, a)[0].is_nan() || place(d, b)[0].is_nan() {
                continue;
            }
            let busy = flight(l) > 0;
            busy_links += busy as usize;
            if !busy && d.pairs.len() > 4096 {
                continue;
            }
            let lift = if busy { 0.15 } else { 0.05 };
            drawn += 1;
            scene.lines.push(Segment {
                a: z(place(d, a), lift),
                b: z(place(d, b), lift),
                color: link_colour(l),
            });
        }
    } else {
        let axes_n = d.dims.len();
        for n in 0..nodes {
            let c = network::coords(n, &d.dims);
            for axis in 0..axes_n {
                let dn = d.dims[axis];
                if dn < 2 {
                    continue;
                }
                let wrap = c[axis] + 1 == dn;
                if wrap && (!d.torus || dn < 3) {
                    continue;
                }
                let l = network::link(n, axis, axes_n);
                let busy = flight(l) > 0;
                busy_links += busy as usize;
                let lift = if busy { 0.15 } else { 0.05 };
                let a = place(d, n);
                let mut c2 = c.clone();
                c2[axis] = (c[axis] + 1) % dn;
                let b = place(d, network::node_at(&c2, &d.dims));
                let segs: Vec<([f32; 3], [f32; 3])> = if wrap {
                    // a stub leaving each end outward, never across the grid
                    wraps += 1;
                    let dir: Vec<f32> = (0..3)
                        .map(|j| {
                            let v = a[j] - b[j];
                            if v.abs() < 1e-6 {
                                0.0
                            } else {
                                v.signum() * 0.45
                            }
                        })
                        .collect();
                    [(a, 1.0f32), (b, -1.0f32)]
                        .iter()
                        .map(|&(from, sign)| {
                            (
                                from,
                                [
                                    from[0] + sign * dir[0],
                                    from[1] + sign * dir[1],
                                    from[2] + sign * dir[2],
                                ],
                            )
                        })
                        .collect()
                } else {
                    vec![(a, b)]
                };
                for (u, v) in segs {
                    if three_d {
                        scene.lines.push(Segment {
                            a: u,
                            b: v,
                            color: link_colour(l),
                        });
                    } else {
                        // 2D: a bar as wide as the traffic
                        let f = flight(l) as f32 / fmax;
                        let w = if busy { 0.025 + 0.09 * f.sqrt() } else { 0.012 };
                        let (x0, x1) = (u[0].min(v[0]), u[0].max(v[0]));
                        let (y0, y1) = (u[1].min(v[1]), u[1].max(v[1]));
                        links_mesh.rect(x0 - w, y0 - w, x1 + w, y1 + w, lift, link_colour(l));
                    }
                }
                drawn += 1;
            }
        }
    }
    // nodes, queues, hover and selection
    let size = if three_d { 0.26 } else { 0.42 };
    let h = size / 2.0;
    let look = net::NodeLook { three_d, size };
    let node_colour = |n: usize| {
        if n * d.group >= d.locations {
            return EMPTY;
        }
        rgba(
            cmap.at((act.busy[k * nodes + n] as f32).clamp(0.0, 1.0)),
            1.0,
        )
    };
    let (ta, tb) = (act.edges[k], act.edges[k + 1]);
    let mut spheres = Vec::new();
    let mut stacks = Vec::new();
    let mut mesh = Mesh::default();
    for n in 0..nodes {
        let at = place(d, n);
        if at[0].is_nan() {
            continue;
        }
        let q = act.queue[k * nodes + n];
        if three_d {
            spheres.push(GlyphInstance {
                position: at,
                scale: [size; 3],
                color: node_colour(n),
            });
            for i in 0..q.min(16) {
                stacks.push(GlyphInstance {
                    position: [at[0], at[1] + 0.2 + i as f32 * 0.08, at[2]],
                    scale: [0.1, 0.05, 0.1],
                    color: QUEUE,
                });
            }
        } else {
            mesh.rect(
                at[0] - h,
                at[1] - h,
                at[0] + h,
                at[1] + h,
                0.3,
                node_colour(n),
            );
            if p.queues {
                for i in 0..q.min(16) {
                    let y0 = at[1] + h + 0.03 + i as f32 * 0.08;
                    mesh.rect(at[0] - h * 0.6, y0, at[0] + h * 0.6, y0 + 0.05, 0.35, QUEUE);
                }
            }
        }
        let (a, b) = (n * d.group, ((n + 1) * d.group).min(d.locations));
        if a >= d.locations {
            continue;
        }
        let place_text = if d.dims.is_empty() {
            String::new()
        } else {
            format!(" at {:?}", network::coords(n, &d.dims))
        };
        let text = net::node_text(
            &format!("{}{place_text}", net::who(n, (a, b))),
            (ta, tb),
            &d.states_label,
            act.busy[k * nodes + n],
            "",
            q,
        );
        net::node_pick(&mut scene, at, look, text, (d.group == 1).then_some(a));
    }
    if three_d {
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
        scene.meshes.push(links_mesh);
        scene.meshes.push(mesh);
    }
    if let Some(sel) = selected.filter(|&s| s / d.group < nodes) {
        net::frame_selected(&mut scene, place(d, sel / d.group), look, sel);
    }
    // node numbers along the edges of a 2D grid
    if !three_d && !d.dims.is_empty() {
        let cols = d.dims[0];
        let rows = d.dims.get(1).copied().unwrap_or(1);
        let bottom = -(rows as f32 - 1.0) - 0.65;
        let left = -0.65f32;
        for x in axes::integer_ticks(0, cols as u64 - 1, 12) {
            scene.lines.push(Segment {
                a: [x as f32, bottom, 0.0],
                b: [x as f32, bottom - 0.12, 0.0],
                color: ink,
            });
            scene.labels.push(
                Label::world(x.to_string(), [x as f32, bottom - 0.12, 0.0], 11.0, ink)
                    .aligned(LabelAlign::CenterTop)
                    .priority(1),
            );
        }
        for y in axes::integer_ticks(0, rows as u64 - 1, 12) {
            scene.lines.push(Segment {
                a: [left, -(y as f32), 0.0],
                b: [left - 0.12, -(y as f32), 0.0],
                color: ink,
            });
            scene.labels.push(
                Label::world(y.to_string(), [left - 0.12, -(y as f32), 0.0], 11.0, ink)
                    .aligned(LabelAlign::RightCenter)
                    .priority(1),
            );
        }
        scene.labels.push(
            Label::world(
                "mesh x",
                [(cols as f32 - 1.0) / 2.0, bottom - 0.12, 0.0],
                13.0,
                ink,
            )
            .aligned(LabelAlign::AxisTitleBelow)
            .priority(0),
        );
        scene.labels.push(
            Label::world("mesh y", [left, -(rows as f32 - 1.0) / 2.0, 0.0], 13.0, ink)
                .aligned(LabelAlign::AxisTitleLeft)
                .priority(0),
        );
        scene.margins.right = 250.0;
    }
    net::legend_and_key(
        &mut scene,
        net::Key {
            states_label: &d.states_label,
            colormap,
            group: d.group,
            busiest: (
                rgba(cmap.at(1.0), 1.0),
                fmax as u32,
                if three_d { "" } else { " (width ∝ √n)" },
            ),
            idle,
            track: &p.track,
            tracked_now: (0..links).map(tracked).sum(),
            queues: p.queues.then_some(qmax),
        },
    );
    if wraps > 0 {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: idle,
            text: format!("{wraps} wrap links: end stubs"),
        });
    }
    if d.locations < nodes * d.group && d.places.is_empty() {
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: EMPTY,
            text: "node without a location".into(),
        });
    }
    let what = if d.dims.is_empty() {
        format!("{} locations at user coordinates", d.locations)
    } else {
        format!(
            "{} {}",
            if d.torus { "Torus" } else { "Mesh" },
            d.dims
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("×")
        )
    };
    let mag = *act.edges.last().unwrap_or(&1) as f64;
    let step_t = axes::nice_ticks(ta as f64, tb as f64, 4).1 / 10.0;
    scene.title = format!(
        "{what}: {} – {} (bin {} of {bins}) — {busy_links} of {} links carrying messages{}",
        axes::format_time(ta as f64, mag, step_t),
        axes::format_time(tb as f64, mag, step_t),
        k + 1,
        drawn,
        if d.group > 1 {
            format!(", {} locations per node (merged)", d.group)
        } else {
            String::new()
        }
    );
    scene.axes = if three_d {
        "x: mesh x, y: mesh z (up), z: mesh y; nodes one unit apart".into()
    } else {
        "x: mesh x (or column), y: −mesh y (or −row); nodes one unit apart".into()
    };
    Ok(scene)
}
