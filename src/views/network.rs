//! What the network views (`hypercube`, `mesh`) draw alike: a node's hover
//! text and pick, the selected node's frame, and the legend and key of
//! busy nodes, links in flight, tracked messages and queues.

use super::moments::SELECTED;
use crate::model::Time;
use crate::scene::axes::{self, Unit};
use crate::scene::pick::Pick;
use crate::scene::{KeyEntry, KeyMark, Legend, Scene};

/// Links carrying tracked messages.
pub const TRACK: [f32; 4] = [0.95, 0.2, 0.85, 1.0];
/// Queued messages.
pub const QUEUE: [f32; 4] = [0.85, 0.25, 0.2, 1.0];

/// How nodes are drawn: spheres of `size` in 3D, squares in 2D.
#[derive(Debug, Clone, Copy)]
pub struct NodeLook {
    pub three_d: bool,
    pub size: f32,
}

/// "node 5: location 5" or "node 5: locations 80–95".
pub fn who(node: usize, (a, b): (usize, usize)) -> String {
    if b > a + 1 {
        format!("node {node}: locations {a}–{}", b - 1)
    } else {
        format!("node {node}: location {a}")
    }
}

/// A node's hover text: who, the bin, its busy fraction, `extra` lines,
/// its queue.
pub fn node_text(
    who: &str,
    (ta, tb): (Time, Time),
    states_label: &str,
    busy: f64,
    extra: &str,
    queue: u32,
) -> String {
    format!(
        "{who}\n{} – {}\n{states_label}: {busy:.3} of the bin{extra}\nqueued receives: {queue}",
        axes::format_time(ta as f64, tb.max(1) as f64, 0.0),
        axes::format_time(tb as f64, tb.max(1) as f64, 0.0),
    )
}

/// The hover pick of a node at `at`.
pub fn node_pick(
    scene: &mut Scene,
    at: [f32; 3],
    look: NodeLook,
    text: String,
    location: Option<usize>,
) {
    let h = look.size / 2.0;
    scene.picks.push(if look.three_d {
        Pick::point(at, text, location)
    } else {
        Pick::rect(
            [at[0] - h, at[1] - h],
            [at[0] + h, at[1] + h],
            text,
            location,
        )
    });
}

/// Frames the node at `at` holding the selected `location`.
pub fn frame_selected(scene: &mut Scene, at: [f32; 3], look: NodeLook, location: usize) {
    let h = look.size / 2.0;
    if look.three_d {
        scene.frame_box(at, look.size * 0.8, SELECTED);
    } else {
        scene.frame_rect(
            [at[0] - h * 1.4, at[1] - h * 1.4],
            [at[0] + h * 1.4, at[1] + h * 1.4],
            0.5,
            SELECTED,
        );
    }
    scene.key.push(KeyEntry {
        mark: KeyMark::Line,
        color: SELECTED,
        text: format!("selected: location {location}"),
    });
}

/// The legend and key of a network view.
pub struct Key<'a> {
    pub states_label: &'a str,
    pub colormap: &'a str,
    /// Locations per node.
    pub group: usize,
    /// The colour of the busiest link, its count and a note on widths.
    pub busiest: ([f32; 4], u32, &'a str),
    pub idle: [f32; 4],
    pub track: &'a [usize],
    /// Link crossings of tracked messages in this bin.
    pub tracked_now: u32,
    /// The largest queue, when queues are drawn.
    pub queues: Option<u32>,
}

pub fn legend_and_key(scene: &mut Scene, k: Key<'_>) {
    scene.legend = Some(Legend {
        title: format!("{} fraction of the bin", k.states_label),
        colormap: k.colormap.to_string(),
        min: 0.0,
        max: 1.0,
        unit: Unit::Fraction,
        note: Some(if k.group > 1 {
            format!("mean of {} locations per node", k.group)
        } else {
            "nodes".into()
        }),
    });
    let (colour, n, note) = k.busiest;
    scene.key.push(KeyEntry {
        mark: KeyMark::Line,
        color: colour,
        text: format!(
            "link: {n} message{} in flight{note}",
            if n == 1 { "" } else { "s" }
        ),
    });
    scene.key.push(KeyEntry {
        mark: KeyMark::Line,
        color: k.idle,
        text: "link: none in flight".into(),
    });
    if !k.track.is_empty() {
        scene.key.push(KeyEntry {
            mark: KeyMark::Line,
            color: TRACK,
            text: format!("tracked {:?}: {} link crossings", k.track, k.tracked_now),
        });
    }
    if let Some(qmax) = k.queues {
        scene.key.push(KeyEntry {
            mark: KeyMark::Bar,
            color: QUEUE,
            text: format!("queued message (max {qmax})"),
        });
    }
}
