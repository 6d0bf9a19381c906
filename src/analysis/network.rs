//! Activity on an interconnection network over time bins, for the
//! topology views of a trace (paper 001 §3): per node the busy fraction of
//! each bin, per link the messages in flight across it during each bin
//! (routed by the caller's rule: e-cube on hypercubes, dimension order on
//! meshes and tori), per node the messages sent to it and not received at
//! each bin's end (its queue), and the same flights restricted to the
//! messages between tracked nodes. Each message adds +1/−1 at the ends of
//! its bins on the links it crosses; one pass of prefix sums at the end
//! gives every bin: O(messages × hops + bins × links), whatever the
//! messages' durations.

use super::fields;
use crate::error::{Error, Result};
use crate::model::{Time, Trace};

/// The largest bins × links (or nodes) kept.
pub const MAX_CELLS: u64 = 1 << 27;

/// The network's activity, row-major by bin.
#[derive(Debug, Clone, PartialEq)]
pub struct Activity {
    pub nodes: usize,
    pub links: usize,
    /// Bin edges in ns (`bins + 1`).
    pub edges: Vec<Time>,
    /// Mean busy fraction of the node's locations in each bin.
    pub busy: Vec<f64>,
    /// Messages in flight on each link during each bin.
    pub flight: Vec<u32>,
    /// Messages waiting at each node at each bin's end.
    pub queue: Vec<u32>,
    /// `flight` of the messages whose sender and receiver are both tracked
    /// (empty when none are).
    pub tracked: Vec<u32>,
}

impl Activity {
    pub fn bins(&self) -> usize {
        self.edges.len().saturating_sub(1).max(1)
    }
}

/// The activity of `t` in `[t0, t1)` over `bins` bins; `node_of` maps a
/// location to its node (`None`: not on the network), `route` lists the
/// links a message from node `a` to node `b` crosses.
#[allow(clippy::too_many_arguments)]
pub fn activity(
    t: &Trace,
    mask: &[bool],
    (t0, t1, bins): (Time, Time, usize),
    nodes: usize,
    links: usize,
    node_of: impl Fn(usize) -> Option<usize>,
    route: impl Fn(usize, usize) -> Vec<usize>,
    tracked: &[usize],
) -> Result<Activity> {
    let cells = (bins as u64).saturating_mul(links.max(nodes) as u64);
    if cells > MAX_CELLS {
        return Err(Error::Invalid(format!(
            "{bins} time bins × {} links are too many cells (at most {MAX_CELLS}); use fewer --bins or fewer nodes",
            links.max(nodes)
        )));
    }
    let f = fields::busy_fraction(t, mask, t0, t1, bins)?;
    let bins = f.bins;
    let mut busy = vec![0.0; bins * nodes];
    let mut count = vec![0usize; nodes];
    for l in 0..t.num_locations() {
        if let Some(n) = node_of(l).filter(|&n| n < nodes) {
            count[n] += 1;
            for k in 0..bins {
                busy[k * nodes + n] += f.at(k, l);
            }
        }
    }
    for k in 0..bins {
        for n in 0..nodes {
            busy[k * nodes + n] /= count[n].max(1) as f64;
        }
    }
    let mut flight_d = vec![0i64; (bins + 1) * links.max(1)];
    let mut tracked_d = if tracked.is_empty() {
        Vec::new()
    } else {
        vec![0i64; (bins + 1) * links.max(1)]
    };
    let mut is_tracked = vec![false; nodes];
    for &n in tracked {
        if n >= nodes {
            return Err(Error::Invalid(format!(
                "track: node {n} does not exist (nodes 0..{})",
                nodes.saturating_sub(1)
            )));
        }
        is_tracked[n] = true;
    }
    let mut queue_d = vec![0i64; (bins + 1) * nodes];
    let edges = f.edges.clone();
    let bin_of = |x: Time| {
        edges
            .partition_point(|&e| e <= x)
            .saturating_sub(1)
            .min(bins - 1)
    };
    let m = &t.messages;
    for i in 0..m.len() {
        let (Some(s), Some(r)) = (
            node_of(m.sender[i] as usize).filter(|&n| n < nodes),
            node_of(m.receiver[i] as usize).filter(|&n| n < nodes),
        ) else {
            continue;
        };
        let (ts, tr) = (m.send_time[i], m.recv_time[i].max(m.send_time[i]));
        if tr < t0 || ts >= t1 {
            continue;
        }
        let (k0, k1) = (bin_of(ts.max(t0)), bin_of(tr.min(t1.saturating_sub(1))));
        if s != r {
            let track = !tracked_d.is_empty() && is_tracked[s] && is_tracked[r];
            for l in route(s, r) {
                if l >= links {
                    continue;
                }
                flight_d[k0 * links + l] += 1;
                flight_d[(k1 + 1) * links + l] -= 1;
                if track {
                    tracked_d[k0 * links + l] += 1;
                    tracked_d[(k1 + 1) * links + l] -= 1;
                }
            }
        }
        // waiting at the receiver at the end of every bin from the one it
        // is sent in up to the last ending at or before its arrival
        let kq = edges
            .partition_point(|&e| e <= tr)
            .saturating_sub(1)
            .min(bins);
        if kq > k0 {
            queue_d[k0 * nodes + r] += 1;
            queue_d[kq * nodes + r] -= 1;
        }
    }
    let sum = |d: &[i64], width: usize| -> Vec<u32> {
        if d.is_empty() {
            return Vec::new();
        }
        let mut out = vec![0u32; bins * width];
        let mut run = vec![0i64; width];
        for k in 0..bins {
            for (j, r) in run.iter_mut().enumerate() {
                *r += d[k * width + j];
                out[k * width + j] = (*r).max(0) as u32;
            }
        }
        out
    };
    Ok(Activity {
        nodes,
        links,
        busy,
        flight: sum(&flight_d, links.max(1)),
        queue: sum(&queue_d, nodes),
        tracked: sum(&tracked_d, links.max(1)),
        edges: f.edges,
    })
}

/// A mesh or torus of `dims` (1 to 3 axes, x fastest): node `n`'s
/// coordinates.
pub fn coords(n: usize, dims: &[usize]) -> Vec<usize> {
    let mut rest = n;
    dims.iter()
        .map(|&d| {
            let c = rest % d.max(1);
            rest /= d.max(1);
            c
        })
        .collect()
}

/// The node at coordinates `c`.
pub fn node_at(c: &[usize], dims: &[usize]) -> usize {
    c.iter()
        .rev()
        .zip(dims.iter().rev())
        .fold(0, |acc, (&x, &d)| acc * d + x)
}

/// Links of a mesh or torus: link `n * axes + axis` joins node `n` to its
/// neighbour one step up along `axis` (wrapping on a torus; on a mesh the
/// last node of an axis has no such link).
pub fn link(n: usize, axis: usize, axes: usize) -> usize {
    n * axes + axis
}

/// Dimension-order routing on a mesh or torus: x first, then y, then z,
/// each along the shorter way round on a torus (ties go up); the links
/// crossed.
pub fn route_mesh(a: usize, b: usize, dims: &[usize], torus: bool) -> Vec<usize> {
    let axes = dims.len();
    let mut at = coords(a, dims);
    let to = coords(b, dims);
    let mut out = Vec::new();
    for axis in 0..axes {
        let d = dims[axis];
        while at[axis] != to[axis] {
            let up_dist = (to[axis] + d - at[axis]) % d;
            let up = if torus {
                up_dist <= d - up_dist
            } else {
                to[axis] > at[axis]
            };
            if up {
                out.push(link(node_at(&at, dims), axis, axes));
                at[axis] = (at[axis] + 1) % d;
            } else {
                at[axis] = (at[axis] + d - 1) % d;
                out.push(link(node_at(&at, dims), axis, axes));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimension_order_routes() {
        let dims = [4, 3];
        assert_eq!(coords(7, &dims), vec![3, 1]);
        assert_eq!(node_at(&[3, 1], &dims), 7);
        // mesh: (0,0) → (3,2): three x links then two y links
        let r = route_mesh(0, node_at(&[3, 2], &dims), &dims, false);
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], link(0, 0, 2));
        assert_eq!(r[3], link(node_at(&[3, 0], &dims), 1, 2));
        // torus: (0,0) → (3,0) is one wrap-around link, the x link of (3,0)
        let r = route_mesh(0, 3, &dims, true);
        assert_eq!(r, vec![link(3, 0, 2)]);
        // the route back crosses the same links
        let mut a = route_mesh(5, 10, &dims, true);
        let mut b = route_mesh(10, 5, &dims, true);
        a.sort();
        b.sort();
        assert_eq!(a.len(), b.len());
        assert!(route_mesh(4, 4, &dims, true).is_empty());
    }
}
