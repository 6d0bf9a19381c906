//! Broadcast and global sum on a hypercube (paper 002 §6.5.1), repeated with
//! computation in between so that the utilization signal is periodic.

use super::sim::Sim;
use super::sink::SimEvent;
use crate::error::{Error, Result};

/// The dimension of a hypercube of `p` nodes, if `p` is a power of two.
pub fn dimension(p: u32) -> Result<u32> {
    if p == 0 || !p.is_power_of_two() {
        return Err(Error::Invalid(format!(
            "a hypercube needs a power-of-two number of processors, got {p}"
        )));
    }
    Ok(p.trailing_zeros())
}

/// `reps` broadcasts of `bytes` from node 0, each followed by `work`
/// operations on every node. In round `j` every node that has the data
/// sends it across dimension `j`.
pub fn broadcast(sim: &mut Sim, bytes: u64, reps: u32, work: f64) -> Result<()> {
    let p = sim.procs();
    let d = dimension(p)?;
    for q in 0..p {
        sim.event(q, SimEvent::Phase, 3);
    }
    for rep in 0..reps {
        sim.event(0, SimEvent::Iteration, rep as i64);
        for j in 0..d {
            for node in 0..(1u32 << j) {
                sim.transfer(node, node ^ (1 << j), bytes);
            }
        }
        for q in 0..p {
            sim.compute(q, work);
        }
        sim.checkpoint()?;
    }
    Ok(())
}

/// `reps` global sums of `elems` doubles to node 0 (binomial-tree reduction:
/// in round `j` nodes with bit `j` set, and lower bits clear, send their
/// partial sums across dimension `j`; receivers add), each preceded by
/// `work` operations on every node.
pub fn global_sum(sim: &mut Sim, elems: u64, reps: u32, work: f64) -> Result<()> {
    let p = sim.procs();
    let d = dimension(p)?;
    for q in 0..p {
        sim.event(q, SimEvent::Phase, 4);
    }
    for rep in 0..reps {
        for q in 0..p {
            sim.compute(q, work);
        }
        sim.event(0, SimEvent::Iteration, rep as i64);
        for j in 0..d {
            let step = 1u32 << (j + 1);
            let mut node = 1u32 << j;
            while node < p {
                let partner = node ^ (1 << j);
                sim.transfer(node, partner, 8 * elems);
                sim.compute(partner, elems as f64);
                node += step;
            }
        }
        sim.checkpoint()?;
    }
    Ok(())
}
