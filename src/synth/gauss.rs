//! Gaussian elimination with back substitution on an N × N system
//! (paper 002 §6.1): the pivot row is broadcast, every processor updates
//! its active rows, and the active set shrinks as the elimination proceeds.
//!
//! Distributions: `(BLOCK,*)` and `(CYCLIC,*)` give whole rows to
//! processors; `(CYCLIC,CYCLIC)` deals elements to a `pr × pc` processor
//! grid, so that multipliers travel along processor rows and pivot-row
//! segments down processor columns.

use super::sim::Sim;
use super::sink::SimEvent;
use crate::error::Result;

/// How matrix elements are dealt to processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// `(BLOCK,*)`: contiguous blocks of rows.
    Block,
    /// `(CYCLIC,*)`: rows dealt round-robin.
    Cyclic,
    /// `(CYCLIC,CYCLIC)`: elements dealt round-robin in both dimensions to a
    /// processor grid.
    Cyclic2d,
}

/// Number of indices `i` in `lo..hi` with `i % m == r`.
fn count_mod(lo: u64, hi: u64, m: u64, r: u64) -> u64 {
    if hi <= lo {
        return 0;
    }
    let upto = |x: u64| if x > r { (x - r - 1) / m + 1 } else { 0 }; // i in 0..x
    upto(hi) - upto(lo)
}

/// The processor grid used for `(CYCLIC,CYCLIC)`: the most square `pr × pc`.
pub fn grid(p: u32) -> (u32, u32) {
    let mut pr = (p as f64).sqrt() as u32;
    while pr > 1 && !p.is_multiple_of(pr) {
        pr -= 1;
    }
    let pr = pr.max(1);
    (pr, p / pr)
}

/// Rows of `n` owned by processor `p` in `lo..hi` (row distributions).
fn rows_in(dist: Distribution, n: u64, procs: u64, p: u64, lo: u64, hi: u64) -> u64 {
    match dist {
        Distribution::Block => {
            let b = n.div_ceil(procs);
            let (a, e) = (p * b, ((p + 1) * b).min(n));
            hi.min(e).saturating_sub(lo.max(a))
        }
        _ => count_mod(lo, hi, procs, p),
    }
}

fn owner(dist: Distribution, n: u64, procs: u64, row: u64) -> u32 {
    match dist {
        Distribution::Block => (row / n.div_ceil(procs)) as u32,
        _ => (row % procs) as u32,
    }
}

/// Simulates elimination and back substitution.
pub fn run(sim: &mut Sim, n: u64, dist: Distribution) -> Result<()> {
    let p = sim.procs() as u64;
    let all: Vec<u32> = (0..p as u32).collect();
    for q in 0..p as u32 {
        sim.event(q, SimEvent::Phase, 1);
    }
    match dist {
        Distribution::Block | Distribution::Cyclic => {
            for k in 0..n {
                let root = owner(dist, n, p, k);
                sim.event(root, SimEvent::Iteration, k as i64);
                sim.compute(root, (n - k) as f64);
                sim.broadcast(&all, root as usize, 8 * (n - k + 1));
                for q in 0..p {
                    let rows = rows_in(dist, n, p, q, k + 1, n);
                    sim.compute(q as u32, (rows * (n - k) * 2) as f64);
                }
                sim.checkpoint()?;
            }
            for q in 0..p as u32 {
                sim.event(q, SimEvent::Phase, 2);
            }
            for k in (0..n).rev() {
                let root = owner(dist, n, p, k);
                sim.event(root, SimEvent::Iteration, k as i64);
                sim.compute(root, (n - k) as f64);
                sim.broadcast(&all, root as usize, 8);
                for q in 0..p {
                    let rows = rows_in(dist, n, p, q, 0, k);
                    sim.compute(q as u32, (rows * 2) as f64);
                }
                sim.checkpoint()?;
            }
        }
        Distribution::Cyclic2d => {
            let (pr, pc) = grid(p as u32);
            let (pr, pc) = (pr as u64, pc as u64);
            let proc_at = |r: u64, c: u64| (r * pc + c) as u32;
            let row_members: Vec<Vec<u32>> = (0..pr)
                .map(|r| (0..pc).map(|c| proc_at(r, c)).collect())
                .collect();
            let col_members: Vec<Vec<u32>> = (0..pc)
                .map(|c| (0..pr).map(|r| proc_at(r, c)).collect())
                .collect();
            for k in 0..n {
                let (rk, ck) = (k % pr, k % pc);
                let root = proc_at(rk, ck);
                sim.event(root, SimEvent::Iteration, k as i64);
                sim.compute(root, 1.0);
                // the pivot column computes its multipliers and sends them along processor rows
                for r in 0..pr {
                    let rows = count_mod(k + 1, n, pr, r);
                    sim.compute(proc_at(r, ck), rows as f64);
                    sim.broadcast(&row_members[r as usize], ck as usize, 8 * rows.max(1));
                }
                // the pivot row sends its segments down processor columns
                for c in 0..pc {
                    let cols = count_mod(k + 1, n, pc, c);
                    sim.broadcast(&col_members[c as usize], rk as usize, 8 * cols.max(1));
                }
                for r in 0..pr {
                    let rows = count_mod(k + 1, n, pr, r);
                    for c in 0..pc {
                        let cols = count_mod(k + 1, n, pc, c);
                        sim.compute(proc_at(r, c), (rows * cols * 2) as f64);
                    }
                }
                sim.checkpoint()?;
            }
            for q in 0..p as u32 {
                sim.event(q, SimEvent::Phase, 2);
            }
            for k in (0..n).rev() {
                let (rk, ck) = (k % pr, k % pc);
                let root = proc_at(rk, ck);
                sim.event(root, SimEvent::Iteration, k as i64);
                sim.compute(root, (n - k) as f64 / pc as f64);
                sim.broadcast(&all, root as usize, 8);
                for r in 0..pr {
                    let rows = count_mod(0, k, pr, r);
                    sim.compute(proc_at(r, ck), (rows * 2) as f64);
                }
                sim.checkpoint()?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_rows() {
        assert_eq!(count_mod(0, 10, 3, 0), 4); // 0 3 6 9
        assert_eq!(count_mod(1, 10, 3, 0), 3);
        assert_eq!(count_mod(4, 4, 3, 1), 0);
        let brute =
            |lo: u64, hi: u64, m: u64, r: u64| (lo..hi).filter(|i| i % m == r).count() as u64;
        for lo in 0..12 {
            for hi in 0..14 {
                for m in 1..5 {
                    for r in 0..m {
                        assert_eq!(count_mod(lo, hi, m, r), brute(lo, hi, m, r));
                    }
                }
            }
        }
        // block: 10 rows on 4 procs, blocks of 3
        assert_eq!(rows_in(Distribution::Block, 10, 4, 3, 0, 10), 1);
        assert_eq!(rows_in(Distribution::Block, 10, 4, 1, 4, 10), 2);
        assert_eq!(grid(16), (4, 4));
        assert_eq!(grid(8), (2, 4));
        assert_eq!(grid(7), (1, 7));
    }
}
