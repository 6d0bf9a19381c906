//! The communication matrix (paper 001 Figs. 12–16, SPEC §3.4): messages
//! and bytes from each task to each task over a time window, tasks being
//! threads (locations), processes or nodes of the location hierarchy.
//! Stored sparse (real codes talk to few partners), one matrix per
//! sliding window; [`CommMatrices::blocks`] aggregates blocks of tasks
//! for display, and [`contours`] draws isolines by marching squares.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{GroupKind, Time, Trace};

/// What a task of the matrix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Every location (thread, stream) is a task.
    #[default]
    Thread,
    /// Locations add up to their process.
    Process,
    /// Locations add up to their node.
    Node,
}

impl Level {
    pub fn parse(s: &str) -> Result<Level> {
        match s {
            "thread" | "location" => Ok(Level::Thread),
            "process" => Ok(Level::Process),
            "node" => Ok(Level::Node),
            other => Err(Error::Invalid(format!(
                "unknown level '{other}' (levels: thread, process, node)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Thread => "thread",
            Level::Process => "process",
            Level::Node => "node",
        }
    }
}

/// The tasks of `level`: each location's task and the tasks' names.
/// Locations outside any group of that level are tasks of their own.
pub fn tasks(trace: &Trace, level: Level) -> Result<(Vec<u32>, Vec<String>)> {
    let locs = &trace.locations;
    let kind = match level {
        Level::Thread => {
            let names = (0..locs.len() as u32).map(|l| locs.path(l)).collect();
            return Ok(((0..locs.len() as u32).collect(), names));
        }
        Level::Process => GroupKind::Process,
        Level::Node => GroupKind::Node,
    };
    if !locs.groups.iter().any(|g| g.kind == kind) {
        return Err(Error::Invalid(format!(
            "this trace's location hierarchy has no {} level (use --level thread{})",
            level.name(),
            if level == Level::Node && locs.groups.iter().any(|g| g.kind == GroupKind::Process) {
                " or process"
            } else {
                ""
            }
        )));
    }
    let mut group_task: Vec<Option<u32>> = vec![None; locs.groups.len()];
    let mut names = Vec::new();
    let mut map = Vec::with_capacity(locs.len());
    for (l, loc) in locs.locations.iter().enumerate() {
        // the first ancestor of the wanted kind
        let mut g = loc.group;
        let mut found = None;
        for _ in 0..64 {
            let Some(gi) = g else { break };
            let Some(group) = locs.groups.get(gi as usize) else {
                break;
            };
            if group.kind == kind {
                found = Some(gi as usize);
                break;
            }
            g = group.parent;
        }
        let task = match found {
            Some(gi) => *group_task[gi].get_or_insert_with(|| {
                names.push(locs.groups[gi].name.to_string());
                (names.len() - 1) as u32
            }),
            None => {
                names.push(locs.path(l as u32));
                (names.len() - 1) as u32
            }
        };
        map.push(task);
    }
    Ok((map, names))
}

/// One non-zero cell of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub from: u32,
    pub to: u32,
    pub count: u64,
    pub bytes: u64,
}

/// Task × task matrices of the messages sent in `windows` equal windows
/// of `[t0, t1)`, and of the whole window.
#[derive(Debug, Clone, Serialize)]
pub struct CommMatrices {
    pub level: Level,
    pub names: Vec<String>,
    pub t0: Time,
    pub t1: Time,
    /// The window edges (`windows + 1`).
    pub edges: Vec<Time>,
    /// Non-zero cells of each window, sorted by (from, to).
    pub windows: Vec<Vec<Cell>>,
    /// Non-zero cells of the whole `[t0, t1)`.
    pub total: Vec<Cell>,
}

/// Which number of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Quantity {
    #[default]
    Messages,
    Bytes,
}

impl Quantity {
    pub fn parse(s: &str) -> Result<Quantity> {
        match s {
            "messages" | "count" => Ok(Quantity::Messages),
            "bytes" | "volume" => Ok(Quantity::Bytes),
            other => Err(Error::Invalid(format!(
                "unknown quantity '{other}' (quantities: messages, bytes)"
            ))),
        }
    }
    pub fn of(self, c: &Cell) -> u64 {
        match self {
            Quantity::Messages => c.count,
            Quantity::Bytes => c.bytes,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Quantity::Messages => "messages",
            Quantity::Bytes => "bytes",
        }
    }
}

/// A matrix needs a window of some length.
fn check_window(t0: Time, t1: Time) -> Result<()> {
    if t1 <= t0 {
        return Err(Error::Invalid(format!(
            "the time window is empty ({t0} ns to {t1} ns)"
        )));
    }
    Ok(())
}

/// The most windows of a sliding matrix.
pub const MAX_WINDOWS: usize = 10_000;

/// Sums `(key, count, bytes)` with equal keys; `key = from << 32 | to`.
fn reduce(mut v: Vec<(u64, u64, u64)>) -> Vec<Cell> {
    use rayon::slice::ParallelSliceMut;
    v.par_sort_unstable_by_key(|e| e.0);
    let mut out: Vec<Cell> = Vec::new();
    for (k, c, b) in v {
        let (from, to) = ((k >> 32) as u32, k as u32);
        match out.last_mut() {
            Some(last) if last.from == from && last.to == to => {
                last.count += c;
                last.bytes = last.bytes.saturating_add(b);
            }
            _ => out.push(Cell {
                from,
                to,
                count: c,
                bytes: b,
            }),
        }
    }
    out
}

/// The matrices of the messages sent in `[t0, t1)` at `level`, in
/// `windows` equal windows. O(m log m) in the messages of the window, on
/// every core.
pub fn comm_matrices(
    trace: &Trace,
    t0: Time,
    t1: Time,
    level: Level,
    windows: usize,
) -> Result<CommMatrices> {
    check_window(t0, t1)?;
    if windows == 0 || windows > MAX_WINDOWS {
        return Err(Error::Invalid(format!(
            "windows must be 1 to {MAX_WINDOWS}, not {windows}"
        )));
    }
    let windows = windows.min((t1 - t0) as usize);
    let (map, names) = tasks(trace, level)?;
    let m = &trace.messages;
    let a = m.send_time.partition_point(|&t| t < t0);
    let b = m.send_time.partition_point(|&t| t < t1);
    let span = (t1 - t0) as u128;
    let edges: Vec<Time> = (0..=windows)
        .map(|k| t0 + (span * k as u128 / windows as u128) as Time)
        .collect();
    let task = |l: u32| map.get(l as usize).copied().unwrap_or(l) as u64;
    // (window, sender << 32 | receiver, bytes) of every message, in
    // parallel; one sort by window and pair; runs of equal pairs add up
    use rayon::prelude::*;
    let mut all: Vec<(u32, u64, u64)> = (a..b)
        .into_par_iter()
        .map(|i| {
            let key = task(m.sender[i]) << 32 | task(m.receiver[i]);
            let w = ((m.send_time[i] - t0) as u128 * windows as u128 / span) as usize;
            (w.min(windows - 1) as u32, key, m.bytes[i])
        })
        .collect();
    all.par_sort_unstable_by_key(|e| (e.0, e.1));
    let mut per: Vec<Vec<Cell>> = vec![Vec::new(); windows];
    for (w, key, bytes) in all {
        let (from, to) = ((key >> 32) as u32, key as u32);
        let cells = &mut per[w as usize];
        match cells.last_mut() {
            Some(last) if last.from == from && last.to == to => {
                last.count += 1;
                last.bytes = last.bytes.saturating_add(bytes);
            }
            _ => cells.push(Cell {
                from,
                to,
                count: 1,
                bytes,
            }),
        }
    }
    // the whole window: the windows' cells merged (far fewer than messages)
    let total = reduce(
        per.iter()
            .flatten()
            .map(|c| ((c.from as u64) << 32 | c.to as u64, c.count, c.bytes))
            .collect(),
    );
    Ok(CommMatrices {
        level,
        names,
        t0,
        t1,
        edges,
        windows: per,
        total,
    })
}

impl CommMatrices {
    /// The matrix of one window `[t0, t1)` from messages already summed per
    /// pair of locations: `(sender, receiver, messages, bytes)` (as a
    /// streaming reduction keeps them), at `level` of `trace`'s locations.
    /// Equal to [`comm_matrices`] with one window over the same messages.
    pub fn from_pairs(
        trace: &Trace,
        level: Level,
        t0: Time,
        t1: Time,
        pairs: impl Iterator<Item = (u32, u32, u64, u64)>,
    ) -> Result<CommMatrices> {
        check_window(t0, t1)?;
        let (map, names) = tasks(trace, level)?;
        let task = |l: u32| map.get(l as usize).copied().unwrap_or(l) as u64;
        let total = reduce(
            pairs
                .map(|(s, r, n, b)| (task(s) << 32 | task(r), n, b))
                .collect(),
        );
        Ok(CommMatrices {
            level,
            names,
            t0,
            t1,
            edges: vec![t0, t1],
            windows: vec![total.clone()],
            total,
        })
    }

    pub fn size(&self) -> usize {
        self.names.len()
    }

    /// The dense `size × size` matrix of `cells` (row: sender), refused
    /// beyond `max_cells`.
    pub fn dense(&self, cells: &[Cell], q: Quantity, max_cells: u64) -> Result<Vec<u64>> {
        let n = self.size();
        let need = (n as u64).saturating_mul(n as u64);
        if need > max_cells {
            return Err(Error::Invalid(format!(
                "a {n} × {n} communication matrix exceeds {max_cells} cells (choose a coarser --level)"
            )));
        }
        crate::memory::guard(need.saturating_mul(8), || {
            format!("a {n} × {n} communication matrix")
        })?;
        let mut out = vec![0u64; n * n];
        for c in cells {
            if let Some(v) = out.get_mut(c.from as usize * n + c.to as usize) {
                *v = v.saturating_add(q.of(c));
            }
        }
        Ok(out)
    }

    /// The dense matrix of `cells` with `block × block` tasks summed per
    /// cell: `(side, values)`, side = ⌈size / block⌉.
    pub fn blocks(&self, cells: &[Cell], q: Quantity, block: usize) -> (usize, Vec<f64>) {
        let block = block.max(1);
        let side = self.size().div_ceil(block).max(1);
        let mut out = vec![0f64; side * side];
        for c in cells {
            let (r, k) = (c.from as usize / block, c.to as usize / block);
            if r < side && k < side {
                out[r * side + k] += q.of(c) as f64;
            }
        }
        (side, out)
    }
}

/// The smallest block of tasks per cell that puts at most `max_side`
/// cells on a side.
pub fn block_for(size: usize, max_side: usize) -> usize {
    size.div_ceil(max_side.max(1)).max(1)
}

/// One isoline segment of a contour level: endpoints in cell-centre
/// coordinates (x = column, y = row; the centre of cell (r, c) is (c, r)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ContourSegment {
    pub level: usize,
    pub a: [f64; 2],
    pub b: [f64; 2],
}

/// Isolines of the `rows × cols` grid `v` (row-major, values at cell
/// centres) at each of `levels`, by marching squares: each square of four
/// neighbouring centres is cut where the level crosses its edges (linear
/// interpolation); saddles are resolved by the square's mean.
pub fn contours(v: &[f64], rows: usize, cols: usize, levels: &[f64]) -> Vec<ContourSegment> {
    let mut out = Vec::new();
    if rows < 2 || cols < 2 || v.len() < rows * cols {
        return out;
    }
    for (li, &lv) in levels.iter().enumerate() {
        for r in 0..rows - 1 {
            for c in 0..cols - 1 {
                // corners counter-clockwise from the top left
                let p = [(c, r), (c + 1, r), (c + 1, r + 1), (c, r + 1)];
                let val = p.map(|(x, y)| v[y * cols + x]);
                let above = val.map(|x| x >= lv);
                let code = above
                    .iter()
                    .enumerate()
                    .fold(0u8, |k, (i, &a)| k | ((a as u8) << i));
                if code == 0 || code == 15 {
                    continue;
                }
                // the crossing on edge i (corner i to corner i+1)
                let cross = |i: usize| -> [f64; 2] {
                    let j = (i + 1) % 4;
                    let (va, vb) = (val[i], val[j]);
                    let t = if vb != va { (lv - va) / (vb - va) } else { 0.5 };
                    let t = t.clamp(0.0, 1.0);
                    [
                        p[i].0 as f64 + t * (p[j].0 as f64 - p[i].0 as f64),
                        p[i].1 as f64 + t * (p[j].1 as f64 - p[i].1 as f64),
                    ]
                };
                // edges whose ends differ
                let cut: Vec<usize> = (0..4).filter(|&i| above[i] != above[(i + 1) % 4]).collect();
                let pairs: Vec<(usize, usize)> = if cut.len() == 2 {
                    vec![(cut[0], cut[1])]
                } else {
                    // saddle (0101 or 1010): join so that the high corners
                    // connect when the centre is above the level
                    let centre_above = val.iter().sum::<f64>() / 4.0 >= lv;
                    if above[0] == centre_above {
                        // corner 0 joins corner 2 across the centre:
                        // corners 1 and 3 are cut off
                        vec![(0, 1), (2, 3)]
                    } else {
                        vec![(3, 0), (1, 2)]
                    }
                };
                for (i, j) in pairs {
                    out.push(ContourSegment {
                        level: li,
                        a: cross(i),
                        b: cross(j),
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contour_of_a_peak_is_a_closed_ring() {
        // 5×5 grid with a peak of 4 in the middle
        let mut v = vec![0.0; 25];
        v[12] = 4.0;
        let s = contours(&v, 5, 5, &[2.0]);
        // the four squares around the centre each cut one segment
        assert_eq!(s.len(), 4);
        for seg in &s {
            for p in [seg.a, seg.b] {
                let d = (p[0] - 2.0).abs() + (p[1] - 2.0).abs();
                assert!((d - 0.5).abs() < 1e-12, "{p:?}");
            }
        }
    }

    /// Brute force: every edge between neighbouring centres that the level
    /// crosses, at its interpolated point, once per square beside it.
    fn crossings(v: &[f64], rows: usize, cols: usize, lv: f64) -> Vec<[i64; 2]> {
        let q = |p: [f64; 2]| [(p[0] * 1e9).round() as i64, (p[1] * 1e9).round() as i64];
        let mut out = Vec::new();
        let mut edge = |(c0, r0): (usize, usize), (c1, r1): (usize, usize), squares: usize| {
            let (a, b) = (v[r0 * cols + c0], v[r1 * cols + c1]);
            if (a >= lv) != (b >= lv) {
                let t = (lv - a) / (b - a);
                let p = [
                    c0 as f64 + t * (c1 as f64 - c0 as f64),
                    r0 as f64 + t * (r1 as f64 - r0 as f64),
                ];
                for _ in 0..squares {
                    out.push(q(p));
                }
            }
        };
        for r in 0..rows {
            for c in 0..cols {
                if c + 1 < cols {
                    let sq = (r > 0) as usize + (r + 1 < rows) as usize;
                    edge((c, r), (c + 1, r), sq);
                }
                if r + 1 < rows {
                    let sq = (c > 0) as usize + (c + 1 < cols) as usize;
                    edge((c, r), (c, r + 1), sq);
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn contours_match_a_brute_force_reference() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for (rows, cols) in [(2, 2), (3, 7), (9, 5), (16, 16)] {
            let v: Vec<f64> = (0..rows * cols).map(|_| (rnd() * 10.0).floor()).collect();
            let levels = [0.5, 2.5, 4.25, 7.75];
            let segs = contours(&v, rows, cols, &levels);
            for (li, &lv) in levels.iter().enumerate() {
                let mut ends: Vec<[i64; 2]> = segs
                    .iter()
                    .filter(|s| s.level == li)
                    .flat_map(|s| [s.a, s.b])
                    .map(|p| [(p[0] * 1e9).round() as i64, (p[1] * 1e9).round() as i64])
                    .collect();
                ends.sort();
                assert_eq!(
                    ends,
                    crossings(&v, rows, cols, lv),
                    "{rows}x{cols} level {lv}"
                );
                // no segment joins two points of one edge, none is degenerate
                assert!(segs.iter().all(|s| s.a != s.b));
            }
        }
    }

    #[test]
    fn saddles_give_two_segments() {
        let v = vec![1.0, 0.0, 0.0, 1.0];
        // corners 0 and 2 high, centre (0.5) high: they join, 1 and 3 are cut off
        let s = contours(&v, 2, 2, &[0.5]);
        assert_eq!(s.len(), 2);
        let cut_off = |corner: [f64; 2]| {
            s.iter().any(|g| {
                [g.a, g.b]
                    .iter()
                    .all(|p| (p[0] - corner[0]).abs() + (p[1] - corner[1]).abs() <= 0.5 + 1e-12)
            })
        };
        assert!(cut_off([1.0, 0.0]) && cut_off([0.0, 1.0]));
        assert!(!cut_off([0.0, 0.0]));
    }
}
