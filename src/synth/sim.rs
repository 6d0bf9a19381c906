//! The message-passing timing model and the per-processor clocks.
//!
//! Computation costs `ops × compute_ns_per_op` (with a seeded jitter).
//! A message of `b` bytes keeps its sender in `Sending` for
//! `send_overhead + b × ns_per_byte` and arrives `latency` after that; the
//! receiver waits (`Waiting`) until it arrives, then spends `recv_overhead`
//! receiving it. The message record goes from the start of the send to the
//! end of the receive.

use super::sink::{Layout, Record, RecordSink, SimEvent, SimState, SortedSink};
use crate::error::Result;
use crate::model::{LocId, Time};

/// Costs of the simulated machine.
#[derive(Debug, Clone, Copy)]
pub struct MachineModel {
    pub compute_ns_per_op: f64,
    pub latency_ns: f64,
    pub ns_per_byte: f64,
    pub send_overhead_ns: f64,
    pub recv_overhead_ns: f64,
    /// Relative jitter of computation times, in [0, 1).
    pub jitter: f64,
}

impl Default for MachineModel {
    /// Roughly an nCUBE-2-like ratio of compute to communication, scaled to
    /// a modern node: 1 ns per operation, 2 µs latency, 10 GB/s.
    fn default() -> Self {
        MachineModel {
            compute_ns_per_op: 1.0,
            latency_ns: 2_000.0,
            ns_per_byte: 0.1,
            send_overhead_ns: 500.0,
            recv_overhead_ns: 500.0,
            jitter: 0.05,
        }
    }
}

/// SplitMix64: a small, fast, seedable generator (deterministic output).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A running simulation: clocks, model, and the sorted output.
pub struct Sim<'a> {
    pub clocks: Vec<Time>,
    pub model: MachineModel,
    rng: Rng,
    out: SortedSink<'a>,
    tag: i64,
    pending: u64,
}

impl<'a> Sim<'a> {
    pub fn new(
        layout: &Layout,
        model: MachineModel,
        seed: u64,
        sink: &'a mut dyn RecordSink,
    ) -> Result<Self> {
        let mut out = SortedSink::new(sink);
        out.begin(layout)?;
        Ok(Sim {
            clocks: vec![0; layout.procs as usize],
            model,
            rng: Rng::new(seed),
            out,
            tag: 0,
            pending: 0,
        })
    }

    pub fn procs(&self) -> u32 {
        self.clocks.len() as u32
    }

    fn state(&mut self, loc: LocId, start: Time, end: Time, state: SimState) {
        if end > start {
            self.out.push(Record::State {
                loc,
                start,
                end,
                state,
            });
            self.pending += 1;
        }
    }

    /// `p` computes `ops` operations.
    pub fn compute(&mut self, p: u32, ops: f64) {
        if ops <= 0.0 {
            return;
        }
        let j = 1.0 + self.model.jitter * (2.0 * self.rng.unit() - 1.0);
        let d = (ops * self.model.compute_ns_per_op * j).round().max(1.0) as Time;
        let t = self.clocks[p as usize];
        self.state(p, t, t + d, SimState::Running);
        self.clocks[p as usize] = t + d;
    }

    /// `src` sends `bytes` to `dst`, which receives it at once (blocking
    /// receive posted now or later). Returns the arrival time.
    pub fn transfer(&mut self, src: u32, dst: u32, bytes: u64) -> Time {
        let m = self.model;
        let t0 = self.clocks[src as usize];
        let busy = (m.send_overhead_ns + bytes as f64 * m.ns_per_byte)
            .round()
            .max(1.0) as Time;
        self.state(src, t0, t0 + busy, SimState::Sending);
        self.clocks[src as usize] = t0 + busy;
        let arrival = t0 + busy + m.latency_ns.round() as Time;
        let r0 = self.clocks[dst as usize];
        let done = arrival.max(r0) + m.recv_overhead_ns.round().max(1.0) as Time;
        self.state(dst, r0, done, SimState::Waiting);
        self.clocks[dst as usize] = done;
        self.tag += 1;
        self.out.push(Record::Message {
            src,
            dst,
            send: t0,
            recv: done,
            bytes,
            tag: self.tag,
        });
        self.pending += 1;
        arrival
    }

    /// A marker event at `p`'s clock.
    pub fn event(&mut self, p: u32, kind: SimEvent, value: i64) {
        let t = self.clocks[p as usize];
        self.out.push(Record::Event {
            loc: p,
            time: t,
            kind,
            value,
        });
        self.pending += 1;
    }

    /// Binomial-tree broadcast of `bytes` from `members[root]` to all
    /// `members`, in rounds of doubling distance (a hypercube broadcast when
    /// the members are a power of two).
    pub fn broadcast(&mut self, members: &[u32], root: usize, bytes: u64) {
        let n = members.len();
        let mut dist = 1usize;
        while dist < n {
            for rel in 0..dist.min(n) {
                let to = rel + dist;
                if to < n {
                    let s = members[(rel + root) % n];
                    let d = members[(to + root) % n];
                    self.transfer(s, d, bytes);
                }
            }
            dist *= 2;
        }
    }

    /// Releases buffered records that can no longer be preceded.
    pub fn checkpoint(&mut self) -> Result<()> {
        if self.pending < 1 << 16 {
            return Ok(());
        }
        self.pending = 0;
        let wm = self.clocks.iter().copied().min().unwrap_or(0);
        self.out.release(wm)
    }

    /// Flushes everything; returns (end time, records written).
    pub fn finish(mut self) -> Result<(Time, u64)> {
        let end = self.clocks.iter().copied().max().unwrap_or(0);
        self.out.finish(end)?;
        Ok((end, self.out.written))
    }
}
